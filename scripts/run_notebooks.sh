#!/usr/bin/env bash
# Execute the analysis notebooks headlessly with papermill and render HTML copies.
#
#   scripts/run_notebooks.sh                          # every notebooks/[0-9]*.ipynb, in name order
#   scripts/run_notebooks.sh notebooks/02_x.ipynb     # only these (a bare name or stem also works)
#   PAPERMILL_ARGS="-p limit 5" scripts/run_notebooks.sh
#   PARAMS_FILE=data/cache/prepared.json scripts/run_notebooks.sh   # prepared data (make data)
#   FIGURES_DIR=/tmp/out scripts/run_notebooks.sh     # write <FIGURES_DIR>/<stem>/ instead
#
# Progress: a line `[i/N] <notebook> (elapsed m:ss)` as each notebook starts and one as it ends.
# `make figures` runs this script once per notebook (one make rule each) and numbers them across
# the whole run: FIGURES_TOTAL (N), FIGURES_COUNTER (a file holding the last i, taken under a
# lock, so `make -j2 figures` numbers them too) and FIGURES_T0 (the run's start, epoch seconds).
#
# notebooks/<stem>.ipynb  ->  figures/<stem>/<stem>.ipynb  and  figures/<stem>/<stem>.html,
# executed with kernel "python3" (the .venv's, see `make setup`) and cwd figures/<stem>,
# so whatever a notebook saves with a relative path lands next to its executed copy.
# Kernels use Jupyter's inline matplotlib backend, so a displayed figure is an image. The
# executed copy is then made ready to share (what python -m baglm_nb render does, in the same
# process as papermill: baglm_nb.apps.notebook_run): the widgets a run leaves (tqdm progress
# bars) are removed and the HTML embeds every image.
# Stops at the first failing notebook; the outputs of those that succeeded are kept.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV="$ROOT/.venv"
if [[ ! -x "$VENV/bin/python" || ! -x "$VENV/bin/papermill" ]]; then
    echo "error: $VENV (with papermill) not found; run 'make setup' first" >&2
    exit 1
fi

# Use the venv's tools, and make its kernelspec (installed with --sys-prefix) win over any
# user-level or system-level "python3" kernel: JUPYTER_PATH is searched first.
export PATH="$VENV/bin:$PATH"
export VIRTUAL_ENV="$VENV"
export JUPYTER_PATH="$VENV/share/jupyter${JUPYTER_PATH:+:$JUPYTER_PATH}"
export MPLBACKEND="module://matplotlib_inline.backend_inline"
export PYDEVD_DISABLE_FILE_VALIDATION=1
if [[ ! -f "$VENV/share/jupyter/kernels/python3/kernel.json" ]]; then
    echo "error: kernelspec 'python3' missing from $VENV; run 'make setup' (or" >&2
    echo "  .venv/bin/python -m ipykernel install --sys-prefix --name python3)" >&2
    exit 1
fi

# Notebooks to run: arguments (paths, bare names or stems) or all numbered ones.
notebooks=()
if (($# > 0)); then
    for arg in "$@"; do
        for cand in "$arg" "notebooks/$arg" "notebooks/$arg.ipynb"; do
            if [[ -f "$cand" && "$cand" == *.ipynb ]]; then
                notebooks+=("$cand")
                continue 2
            fi
        done
        echo "error: notebook not found: $arg" >&2
        exit 1
    done
else
    shopt -s nullglob
    notebooks=(notebooks/[0-9]*.ipynb) # glob expansion is sorted by name
    shopt -u nullglob
fi
if ((${#notebooks[@]} == 0)); then
    echo "No notebooks match notebooks/[0-9]*.ipynb; nothing to do."
    exit 0
fi

if [[ -n "${PARAMS_FILE:-}" && ! -f "$PARAMS_FILE" ]]; then
    echo "error: parameter file not found: $PARAMS_FILE (run 'make data')" >&2
    exit 1
fi
[[ -n "${PARAMS_FILE:-}" ]] && PARAMS_FILE="$(realpath "$PARAMS_FILE")"

# One Python process per notebook runs papermill's own command line and then renders the
# executed copy (python -m baglm_nb.apps.notebook_run: its exit status says which step failed).
# PAPERMILL_ARGS is split there like a shell would (quotes respected, no eval); PARAMS_FILE
# (papermill -f) goes only to the notebooks whose parameters cell names `scores` (the prepared
# score caches of `make data`); the others take no such parameter.
RENDER_FAILED=3 # baglm_nb.apps.notebook_run.RENDER_FAILED

n=${#notebooks[@]}
i=0
t_all=$SECONDS
t0_run=${FIGURES_T0:-$(date +%s)}
# the next notebook's number: this script's own count, or the whole make run's (FIGURES_COUNTER)
next_index() {
    if [[ -z "${FIGURES_COUNTER:-}" ]]; then
        echo "$i"
        return
    fi
    local take='i=$(( $(cat "$1" 2>/dev/null || echo 0) + 1 )); echo "$i" >"$1"; echo "$i"'
    if command -v flock >/dev/null 2>&1; then
        flock "$FIGURES_COUNTER.lock" bash -c "$take" _ "$FIGURES_COUNTER"
    else
        bash -c "$take" _ "$FIGURES_COUNTER"
    fi
}
elapsed() { # m:ss since the run started
    local s=$(($(date +%s) - t0_run))
    printf '%d:%02d' $((s / 60)) $((s % 60))
}
total=${FIGURES_TOTAL:-$n}
for nb in "${notebooks[@]}"; do
    i=$((i + 1))
    name="$(basename "$nb")"
    stem="${name%.ipynb}"
    if [[ -z "$stem" || "$stem" == .* ]]; then
        echo "error: bad notebook name: $nb" >&2
        exit 1
    fi
    outdir="${FIGURES_DIR:-figures}/$stem"
    out="$outdir/$stem.ipynb"
    log="$outdir/.run.log"
    # Start from an empty folder so no stale figure survives a re-run.
    rm -rf "$outdir"
    mkdir -p "$outdir"

    index=$(next_index)
    echo "[$index/$total] $name (elapsed $(elapsed))"
    t0=$SECONDS
    status=0
    python -m baglm_nb.apps.notebook_run "$nb" "$out" --params-file="${PARAMS_FILE:-}" \
        --extra="${PAPERMILL_ARGS:-}" -- -k python3 --cwd "$outdir" --no-progress-bar \
        --log-level WARNING >"$log" 2>&1 || status=$?
    if ((status == RENDER_FAILED)); then
        echo "[$index/$total] $name FAILED (HTML export) after $((SECONDS - t0)) s"
        tail -n 30 "$log" >&2
        echo "error: the HTML export (python -m baglm_nb render) failed for $out (log: $log)" >&2
        exit 1
    elif ((status != 0)); then
        echo "[$index/$total] $name FAILED after $((SECONDS - t0)) s (elapsed $(elapsed))"
        echo "---- papermill output ----" >&2
        if grep -q 'PapermillExecutionError' "$log"; then
            # Skip papermill's own Python traceback; show the failing cell and its error.
            sed -n '/PapermillExecutionError/,$p' "$log" | tail -n 80 >&2
        else
            tail -n 60 "$log" >&2
        fi
        echo "------------------------------------------" >&2
        echo "error: notebook $nb failed; partial output in $out (full log: $log)" >&2
        if ((i > 1)); then
            echo "       outputs of the $((i - 1)) notebook(s) before it are kept in figures/" >&2
        fi
        exit 1
    fi
    echo "[$index/$total] $name ok in $((SECONDS - t0)) s (elapsed $(elapsed)) -> $outdir/"
    rm -f "$log"
done
if [[ -z "${FIGURES_COUNTER:-}" ]]; then # make figures says it once, at the end of its run
    echo "All $n notebook(s) executed in $((SECONDS - t_all)) s; outputs in ${FIGURES_DIR:-figures}/."
fi
