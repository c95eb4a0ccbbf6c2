"""Command line: ``python -m baglm_nb <verb>``; one module per verb, each a thin call.

Errors follow one rule, here only (:func:`main`): the verbs raise, and a failure prints
``error: <message>`` on stderr, naming the file, video or field, and exits **2** for bad input
(:data:`BAD_INPUT`: a missing, unreadable or invalid file, a bad option value, a folder that
cannot be written: :data:`BAD_PLACE`) or **1** for a run that failed (a server that went away,
a video that could not be scored, a full disk). An operating-system error that names a file says
what to do (:data:`OS_ADVICE`). A verb stopped by Ctrl-C exits **130**, and a run that stopped
on a signal itself (``follow``'s :class:`~baglm_nb.apps.online.ending.Interrupted`) 130 after
Ctrl-C or **143** after SIGTERM (:func:`interrupted_status`). ``--debug``
(after the verb) prints the Python traceback too.

Library warnings (transformers' ``FutureWarning``s and advice, torch's notes) stay out of the
user's terminal unless ``--debug`` is given (:func:`quiet_library_warnings`); the workbench's own
warnings, and any ``-W`` / ``PYTHONWARNINGS`` the user set, are kept, each shown as one
``warning: ...`` line (:func:`warning_line`; no source file and line of code). Every line printed
here hides the password of any URL in it (:func:`~baglm_nb.inputs.urls.redact_urls`).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import os
import signal
import sys
import traceback
import warnings
from pathlib import Path
from typing import NoReturn

from baglm_nb.inputs.urls import redact_urls

#: The verb modules of this package, each with ``register(verbs)``.
VERBS = (
    "stats",
    "evaluate",
    "import_files",
    "simulate",
    "score",
    "deps",
    "localize",
    "follow",
    "alerts",
    "render",
)

#: Exit status of bad input (argparse's own usage errors exit 2 too).
EXIT_BAD_INPUT = 2
#: Exit status of a run that failed.
EXIT_FAILED = 1
#: Exit status after Ctrl-C.
EXIT_INTERRUPTED = 130
#: Exit status after SIGTERM.
EXIT_TERMINATED = 143
#: Exit status of a run a signal stopped, by signal: 128 + its number, as a shell reports it.
EXIT_SIGNALLED = {signal.SIGINT: EXIT_INTERRUPTED, signal.SIGTERM: EXIT_TERMINATED}

#: Exceptions that mean the input is wrong, not the run: the one type of bad input every verb
#: raises (no verb prints an ``error:`` line or picks an exit status itself). ``ValueError``
#: covers ``UnicodeDecodeError``, ``json.JSONDecodeError`` and pyarrow's ``ArrowInvalid``;
#: ``ImportError`` is a missing optional package (its message names the install command).
BAD_INPUT = (
    ValueError,
    FileNotFoundError,
    NotADirectoryError,
    IsADirectoryError,
    PermissionError,
    ImportError,
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m baglm_nb``; every verb takes ``--debug``."""
    parser = argparse.ArgumentParser(prog="python -m baglm_nb", description=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True)
    for name in VERBS:
        importlib.import_module(f"baglm_nb.apps.cli.{name}").register(verbs)
    for sub in verbs.choices.values():
        sub.add_argument(
            "--debug", action="store_true", help="on an error, show the Python traceback"
        )
    return parser


#: What to do about an operating-system error that names a file, by errno.
OS_ADVICE = {
    errno.ENOSPC: "free some space and run the same command again: what was written before "
    "is kept, and the run resumes there",
    errno.EDQUOT: "free some space and run the same command again: what was written before "
    "is kept, and the run resumes there",
    errno.EROFS: "give a writable folder (e.g. --cache-root)",
    errno.EACCES: "give a folder you may write (e.g. --cache-root)",
    errno.ENOTDIR: "a file where a folder should be: move it, or give another folder",
}

#: errno values that mean the user gave a place that cannot be written (bad input, exit 2).
BAD_PLACE = frozenset({errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOTDIR, errno.EISDIR})


def os_error_text(exc: OSError) -> str:
    """``<file>: <what the system said> (<what to do>)`` for an OSError naming a file."""
    what = (exc.strerror or str(exc)).rstrip(".")
    name = str(exc.filename)
    if exc.errno == errno.ENOTDIR:  # name the file in the way, not the folder under it
        blocking = [p for p in Path(name).parents if p.exists() and not p.is_dir()]
        name = str(blocking[0]) if blocking else name
    advice = OS_ADVICE.get(exc.errno)
    return f"{name}: {what}" + (f"; {advice}" if advice else "")


def error_line(exc: BaseException) -> str:
    """The one ``error: ...`` line printed for ``exc``."""
    text = str(exc).strip()
    if isinstance(exc, OSError) and exc.errno in OS_ADVICE and exc.filename is not None:
        text = os_error_text(exc)
    if isinstance(exc, KeyError) and not isinstance(exc, BAD_INPUT) and len(exc.args) == 1:
        text = f"missing key {exc.args[0]!r}"
    if not isinstance(exc, BAD_INPUT + (RuntimeError, OSError)):  # OSError: a full disk ...
        text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
        text += " (an unexpected error: run again with --debug for the traceback)"
    text = redact_urls(text or type(exc).__name__)
    return text if text.startswith("error: ") else f"error: {text}"


def interrupted_status(exc: KeyboardInterrupt) -> tuple[str | None, int]:
    """``(the error line or None, the exit status)`` of a verb a signal stopped: Ctrl-C
    anywhere (``error: interrupted``, :data:`EXIT_INTERRUPTED`), or a run that stopped itself
    and said so (:class:`~baglm_nb.apps.online.ending.Interrupted`, which carries ``signum``:
    no line, :data:`EXIT_SIGNALLED` of its signal, 130 for Ctrl-C and 143 for SIGTERM)."""
    signum = getattr(exc, "signum", None)
    if signum is None:
        return "error: interrupted", EXIT_INTERRUPTED
    return None, EXIT_SIGNALLED.get(signum, 128 + signum)


def exit_status(exc: BaseException) -> int:
    """:data:`EXIT_BAD_INPUT` for bad input, else :data:`EXIT_FAILED` (also for an error that
    says it is a failed run with ``failed_run = True``: a model's unusable answer)."""
    if getattr(exc, "failed_run", False):
        return EXIT_FAILED
    if isinstance(exc, OSError) and exc.errno in BAD_PLACE:
        return EXIT_BAD_INPUT
    return EXIT_BAD_INPUT if isinstance(exc, BAD_INPUT) else EXIT_FAILED


#: Modules whose warnings of any kind are the libraries' business (a regular expression).
LIBRARIES = (
    r"(transformers|torch|torchcodec|accelerate|huggingface_hub|tokenizers|ray|av|pyarrow)\b"
)


def quiet_library_warnings(debug: bool) -> None:
    """Unless ``debug``: hide deprecation-type warnings (the workbench raises none), every
    warning of :data:`LIBRARIES` and transformers' logged advice. The workbench's own warnings
    stay; warnings options the user gave (``-W``, ``PYTHONWARNINGS``) win."""
    if debug or sys.warnoptions:
        return
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    for category in (FutureWarning, DeprecationWarning, PendingDeprecationWarning):
        warnings.filterwarnings("ignore", category=category)
    warnings.filterwarnings("ignore", module=LIBRARIES)
    loaded = sys.modules.get("transformers")  # imported before: it read the variable then
    if loaded is not None and os.environ["TRANSFORMERS_VERBOSITY"] == "error":
        loaded.logging.set_verbosity_error()


def warning_line(message: Warning | str, category: type[Warning], debug: bool = False) -> str:
    """The one ``warning: ...`` line shown for a warning (credentials in URLs hidden); with
    ``debug``, its category too."""
    text = " ".join(str(message).split()) or category.__name__
    if debug or category is not UserWarning:
        text += f" ({category.__name__})"
    return redact_urls(f"warning: {text}")


def warning_format(debug: bool):
    """A ``warnings.formatwarning`` for a verb's run: one :func:`warning_line`, never the
    file and line of code that raised it."""

    def format_line(message, category, filename, lineno, line=None) -> str:
        return warning_line(message, category, debug) + "\n"

    return format_line


def main(argv: list[str] | None = None, *, exit_process: bool = False) -> int:
    """Entry point: run the verb; turn an error into one line and an exit status.

    With ``exit_process`` (``python -m baglm_nb`` and the ``baglm-nb`` script,
    :func:`console_main`) the process ends here with that status (:func:`end_process`),
    quickly unless the verb sets ``quick_exit`` to False.
    """
    args, shown = None, warnings.formatwarning
    try:  # a Ctrl-C while the command line is read ends as one during the verb does
        args = build_parser().parse_args(argv)
        quiet_library_warnings(args.debug)
        warnings.formatwarning = warning_format(args.debug)
        status = args.func(args)
    except KeyboardInterrupt as exc:
        line, status = interrupted_status(exc)
        error = exc if line else None
    except Exception as exc:
        if args is None:  # the command line itself could not be built: a bug, shown as one
            raise
        error, line, status = exc, error_line(exc), exit_status(exc)
    else:
        error = line = None
    finally:
        warnings.formatwarning = shown
    if error is not None:
        if getattr(args, "debug", False):
            traceback.print_exception(error)
        print(line, file=sys.stderr)
    if exit_process:
        end_process(status, quick=getattr(args, "quick_exit", True))
    return status


def console_main() -> NoReturn:
    """The ``baglm-nb`` console script (``pyproject.toml``): :func:`main`, ending the process
    as ``python -m baglm_nb`` does (:func:`end_process`), not by returning to the script's
    ``sys.exit``, whose teardown of every loaded module took seconds after the verb was done."""
    main(exit_process=True)


def end_process(status: int, *, quick: bool = False) -> NoReturn:
    """End the process with ``status``.

    ``quick`` (every verb's end unless it sets ``quick_exit`` to False: a person, or a test,
    waits for it): what a normal exit does for the program (the threads' exit hooks, e.g.
    executors told to stop, and a wait for non-daemon threads; the ``atexit`` handlers, e.g.
    temporary folders removed and a Ray session shut down; stdout and stderr flushed), then
    ``os._exit``, without the interpreter's teardown of every module (torch's, numba's,
    pandas' ...), which costs up to a second of CPU and takes seconds on a busy machine.
    Everything a verb writes is closed before it returns (atomic files, the event log).
    """
    if not quick:
        sys.exit(status)
    import atexit
    import threading

    threading._shutdown()  # the interpreter's first step at exit (private, stable since 3.4)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe: nothing left to say
            stream.flush()
    os._exit(status)


if __name__ == "__main__":
    main(exit_process=True)
