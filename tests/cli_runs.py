"""The command line as the tests run it: :func:`run_cli` starts ``python -m baglm_nb`` in a new
process (:func:`run_main`: the same verb in this process, for tests of a verb's behaviour rather
than of the process), :func:`one_error_line` reads the one ``error:`` line of a run that failed
(:func:`one_error`: of a run in this process), :func:`follow_args` spells a
``follow --replay`` command, and :func:`papermill_cli` runs papermill's command line in this
process."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*argv: str, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    """``python -m baglm_nb ARGV`` in a new process, from the repository root unless ``kw``
    names a ``cwd`` (``kw``: :func:`subprocess.run`'s, e.g. ``env``, ``check``); its stdout and
    stderr as text."""
    kw.setdefault("cwd", ROOT)
    cmd = [sys.executable, "-m", "baglm_nb", *argv]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """What Python's own ``warnings.showwarning`` does: ``warnings.formatwarning``'s text
    (the command line's one line during a verb) written to ``sys.stderr``."""
    (file or sys.stderr).write(warnings.formatwarning(message, category, filename, lineno, line))


def run_main(
    *argv: str, env: dict[str, str] | None = None, show_warnings: bool = False
) -> subprocess.CompletedProcess:
    """``main(ARGV)`` in this process, as :func:`run_cli` reports a run (its exit status, its
    stdout and stderr as text), without a new interpreter's imports: for tests of a verb's
    behaviour, not of the process boundary (signals, a fresh shell, library warnings that a
    process shows once). ``env``: variables set for the run. ``show_warnings``: warnings are
    written to its stderr as a process shows them (else pytest records them). The environment,
    the working folder, the SIGINT/SIGTERM handlers and the warnings filters are restored
    afterwards (a verb may change them)."""
    from baglm_nb.apps.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    environ, cwd = dict(os.environ), os.getcwd()
    handlers = {n: signal.getsignal(n) for n in (signal.SIGINT, signal.SIGTERM)}
    os.environ.update(env or {})
    try:
        with (
            warnings.catch_warnings(),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            if show_warnings:
                warnings.showwarning = _show_warning
            try:
                code = main(list(argv))
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.environ.clear()
        os.environ.update(environ)
        os.chdir(cwd)
        for n, handler in handlers.items():
            signal.signal(n, handler)
    return subprocess.CompletedProcess(["baglm_nb", *argv], code, out.getvalue(), err.getvalue())


def one_error_line(stderr: str, *, other_lines: bool = False) -> str:
    """The one ``error: ...`` line of a run that failed, with no traceback, beside progress
    bars at most; ``other_lines``: other lines that are no error may be there too."""
    lines = [line for line in stderr.splitlines() if line.strip() and "%|" not in line]
    if other_lines:
        lines = [line for line in lines if line.startswith("error") or "Traceback" in line]
    assert "Traceback" not in stderr, stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    return lines[0]


def one_error(capsys, *, other_lines: bool = False) -> str:
    """:func:`one_error_line` of the last in-process run (``capsys``), which is no unexpected
    error (one the command line names as such)."""
    err = capsys.readouterr().err
    assert "unexpected" not in err, err
    return one_error_line(err, other_lines=other_lines)


def follow_args(uid: str | None = None, *, replay: str = "simulated", **flags) -> list[str]:
    """``follow --replay REPLAY [flags] [-- UID]``: each flag by its name, underscores for
    dashes (``alert_threshold=0.3``: ``--alert-threshold 0.3``; True: the bare flag, False: its
    ``--no-`` form); the uid after ``--``, as uids may start with '-'."""
    argv = ["follow", "--replay", replay]
    for name, value in flags.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif value is False:
            argv.append("--no-" + flag[2:])
        else:
            argv += [flag, str(value)]
    return argv if uid is None else [*argv, "--", uid]


def papermill_cli(argv: list[str], **env: str) -> tuple[int, str]:
    """papermill's command line (``papermill ARGV``) run in this process, with ``env`` set
    for the run (its kernel is a process of its own): the exit status and the last line that
    the uncaught error prints (a real process's last line of stderr), ``""`` with none.

    In-process, the run skips starting Python and importing papermill again; what is tested,
    the kernel's error as papermill reports it, is the same."""
    import traceback

    from click.testing import CliRunner
    from papermill.cli import papermill

    result = CliRunner().invoke(papermill, argv, env=env, prog_name="papermill")
    error = result.exception
    if error is None or isinstance(error, SystemExit):
        return result.exit_code, ""
    lines = "".join(traceback.format_exception_only(error)).splitlines()
    return result.exit_code, [line for line in lines if line.strip()][-1]
