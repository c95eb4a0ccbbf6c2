"""One notebook of ``make figures``, run and rendered in one process.

``scripts/run_notebooks.sh`` runs, for each notebook::

    python -m baglm_nb.apps.notebook_run NOTEBOOK OUTPUT [--params-file FILE]
        [--extra="PAPERMILL_ARGS"] [-- papermill options...]

which executes ``NOTEBOOK`` into ``OUTPUT`` with papermill's own command line (its options,
parameter flags, messages and exit statuses, as ``papermill NOTEBOOK OUTPUT ...`` would), then
makes the executed copy shareable and writes its HTML (:func:`baglm_nb.apps.render.render`,
what ``python -m baglm_nb render`` does), without a second Python process importing
nbformat and jsonschema again.

- ``--extra`` is split like a shell would (quotes respected, no evaluation) and appended to the
  papermill options: the runner's ``PAPERMILL_ARGS``.
- ``--params-file`` (``make data``'s ``prepared.json``) is given to papermill as ``-f FILE``
  only when the notebook's ``parameters`` cell names ``scores`` (:func:`takes_scores`); the
  other notebooks take no such parameter.
- Exit status: papermill's (0; 1 with the traceback of a failed cell or any other exception,
  as an uncaught exception prints it; 2 for bad options; 138 for a dead kernel), or
  :data:`RENDER_FAILED` when the notebook ran but its HTML export failed (the traceback is
  printed). The runner says which step failed from that status.
- The process only reads, runs and exports notebooks on this machine (:func:`light_process`):
  jsonschema loads without the IRI grammar (:func:`baglm_nb.apps.render.skip_iri_grammar`),
  and papermill without its optional HDFS support (which would import pyarrow, and numpy, for
  a file system no run here uses).

Exports :data:`RENDER_FAILED`, :func:`takes_scores`, :func:`papermill_args`, :func:`main` and
:func:`light_process`.
"""

from __future__ import annotations

import argparse
import gc
import json
import shlex
import sys
import traceback
from pathlib import Path

__all__ = ["RENDER_FAILED", "light_process", "main", "papermill_args", "takes_scores"]

#: The exit status when the notebook ran but its HTML export failed (papermill's own are 0, 1,
#: 2 and 138).
RENDER_FAILED = 3


def takes_scores(notebook: str | Path) -> bool:
    """Whether ``notebook``'s ``parameters`` cell names ``scores`` (reads prepared data).

    A file that is not a notebook takes none (papermill then says what is wrong with it).
    """
    try:
        nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
        cells = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
        return any("scores =" in "".join(c["source"]) for c in cells)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # not a notebook
        return False


def papermill_args(
    notebook: str, output: str, options: list[str], params_file: str = "", extra: str = ""
) -> list[str]:
    """Papermill's command line: ``NOTEBOOK OUTPUT options [-f params_file] extra...``.

    ``extra`` is split like a shell would; a string no shell would split (an unclosed quote)
    raises ``ValueError`` naming it.
    """
    try:
        more = shlex.split(extra)
    except ValueError as exc:
        raise ValueError(f"bad papermill arguments {extra!r}: {exc}") from None
    params = ["-f", params_file] if params_file and takes_scores(notebook) else []
    return [notebook, output, *options, *params, *more]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m baglm_nb.apps.notebook_run",
        description="Execute a notebook with papermill, then render it (scripts/run_notebooks.sh).",
    )
    p.add_argument("notebook")
    p.add_argument("output", help="the executed copy (its HTML is written beside it)")
    p.add_argument("--params-file", default="", help="papermill -f FILE, if it takes `scores`")
    p.add_argument("--extra", default="", help="more papermill options, one shell-quoted string")
    return p


def _papermill(argv: list[str]) -> int:
    """Papermill's command line in this process; its exit status."""
    from papermill.cli import papermill

    try:
        papermill.main(args=argv, prog_name="papermill")  # standalone: always exits
    except SystemExit as done:
        code = done.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)
        return 1
    except Exception:  # a failed cell: the traceback an uncaught exception would print
        traceback.print_exc()
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run and render one notebook (module docstring); returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    args, options = _parser().parse_args(argv[:cut]), argv[cut + 1 :]
    try:
        argv = papermill_args(args.notebook, args.output, options, args.params_file, args.extra)
    except ValueError as exc:  # PAPERMILL_ARGS that no shell would split
        print(f"error: {exc}", file=sys.stderr)
        return 2
    status = _papermill(argv)
    if status:
        return status
    from baglm_nb.apps.render import render

    try:
        print(render(args.output))
    except Exception:
        traceback.print_exc()
        return RENDER_FAILED
    return 0


def light_process() -> None:
    """Keep this process from loading what a local run never uses (module docstring): call it
    first, in a process of its own (``python -m``), never in one that may need them later."""
    from baglm_nb.apps.render import skip_iri_grammar

    skip_iri_grammar()
    sys.modules.setdefault("pyarrow.fs", None)  # papermill's HDFS: "import pyarrow.fs" fails


if __name__ == "__main__":
    light_process()
    status = main()
    # Its work done, the process exits without the garbage collector going over every object
    # of papermill, nbconvert and the notebook once more (a noticeable share of its CPU time):
    # the exit handlers (atexit, weakref finalizers) still run; objects held in reference
    # cycles are left to the operating system (their __del__ does not run; papermill and the
    # render close their files themselves before this point).
    gc.freeze()
    sys.exit(status)
