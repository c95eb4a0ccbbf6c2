"""``python -m baglm_nb ARGV`` as real processes forked from a warm Python: :class:`CliForks`
imports a verb's libraries once (torch, transformers, PyAV ... : seconds of CPU that every new
interpreter pays again), then forks a child for each run, a process of its own (its pid, its
signals, its stdin, stdout and stderr, its files, its exit status and CPU time) that sets the
run's argv, environment and working folder and calls ``main`` as ``python -m baglm_nb`` does.
:class:`ForkServers` keeps one server per set of imports for a pytest session (a worker), each
started when a test first asks for it.

For tests about a verb's behaviour as a process (an exit status, a signal, files left behind,
two processes at once), not about a new interpreter's start-up: what a process prints while it
imports, its import cost, variables read at start-up or at import (``PYTHONWARNINGS``,
``OMP_NUM_THREADS``, ``OPENAI_LOG`` ...: a child sees the imported modules as the server's
environment set them up) stay the subject of tests that start ``python`` itself
(:func:`cli_runs.run_cli`).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: What every verb here imports first, none of it heavy (no openai: a child that needs it
#: imports it itself, with its own environment).
LIGHT_IMPORTS = (
    "baglm_nb.apps.cli.main",
    "baglm_nb.apps.cli.follow",
    "baglm_nb.apps.online.session",
    "baglm_nb.apps.online.report",
    "matplotlib.pyplot",
    "pyarrow.parquet",
)
# Neither set imports openai, which reads its environment (OPENAI_LOG ...) at import.

#: The modules a ``follow`` or ``score`` run of ``--model random-init:internvl`` imports before
#: its first segment (the command line, the session, the report and matplotlib, PyAV, torch,
#: transformers and the tiny model's architecture). Not torchcodec (torch._dynamo, sympy): a
#: live ``follow`` never imports it, and with it loaded a forked ``follow`` spent more CPU from
#: Ctrl-C to its exit than a real one does (the Ctrl-C test's bound failed); a ``score`` child
#: imports it itself when it opens its first file.
MODEL_IMPORTS = (
    *LIGHT_IMPORTS,
    "av",
    "baglm_nb.inputs.live",
    "baglm_nb.models.scoring",
    "baglm_nb.models.testing",
    "transformers.models.internvl.modeling_internvl",
)

#: ``python -m baglm_nb``'s ``sys.argv[0]``.
MAIN_FILE = str(ROOT / "baglm_nb" / "__main__.py")


def _run_child(request: dict, fds: list[int]) -> None:
    """In the forked child: become ``python -m baglm_nb ARGV`` (stdio from ``fds``, the
    request's environment and folder, signal dispositions as a new interpreter has them) and
    end with ``main``'s exit status, as Python ends on a ``SystemExit``."""
    import traceback

    status = 70
    try:
        for target, source in enumerate(fds[:3]):
            os.dup2(source, target)
        for f in fds:
            os.close(f)
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # KeyboardInterrupt
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.argv = [MAIN_FILE, *request["argv"]]
        sys.path[0] = os.getcwd()  # as -m puts it (the server's is this tests folder)
        from baglm_nb.apps.cli.main import main

        main(request["argv"], exit_process=True)  # ends the process
    except SystemExit as exc:  # argparse's usage errors: as Python ends on one
        if exc.code is None or isinstance(exc.code, int):
            status = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            status = 1
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(status)


def _serve(fd: int, imports: list[str]) -> None:
    """The loop of :class:`CliForks`' process: import ``imports``, say how many Python threads
    this process runs (one: no thread of its own for a fork to lose; the idle native pools that
    numpy's OpenBLAS and pyarrow's jemalloc start at import, as in any new process, are rebuilt
    by their fork handlers), then for each request on socket ``fd`` (the run as JSON; stdin,
    stdout, stderr and a reply socket as passed file descriptors) fork a child that runs it
    (:func:`_run_child`) and send its pid on the reply socket; when a child ends (SIGCHLD),
    send its exit status, CPU time (``wait4``) and ``perf_counter()`` at its exit there."""
    import importlib

    sock = socket.socket(fileno=fd)
    from baglm_nb.apps.cli.main import quiet_library_warnings

    quiet_library_warnings(False)  # as main does before a verb imports anything heavy
    for name in imports:
        importlib.import_module(name)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the test run's Ctrl-C is for pytest
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes select() through wake_r
    ready = {"threads": threading.active_count(), "openai": "openai" in sys.modules}
    print(json.dumps(ready), flush=True)
    replies: dict[int, socket.socket] = {}
    while True:
        ready, _, _ = select.select([sock, wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 512)
        while replies:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
            if not pid:
                break
            exited = time.perf_counter()
            report = {"status": os.waitstatus_to_exitcode(status), "exited": exited,
                      "cpu_s": usage.ru_utime + usage.ru_stime}  # fmt: skip
            reply = replies.pop(pid)
            with contextlib.suppress(OSError):
                reply.send(json.dumps(report).encode())
            reply.close()
        if sock not in ready:
            continue
        message, fds, _, _ = socket.recv_fds(sock, 1 << 20, 4)
        if not message:  # the tests' end closed: no teardown of torch and the rest
            for pid in replies:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            sys.stdout.flush()
            os._exit(0)
        pid = os.fork()
        if pid == 0:
            signal.set_wakeup_fd(-1)  # before its pipe closes: no signal writes to a closed fd
            for f in (sock, *replies.values()):
                f.close()
            os.close(wake_r)
            os.close(wake_w)
            _run_child(json.loads(message), fds)
        for f in fds[:3]:
            os.close(f)
        replies[pid] = socket.socket(fileno=fds[3])
        replies[pid].send(json.dumps({"pid": pid}).encode())


class CliForks:
    """A Python that imports ``imports`` once, then runs each ``python -m baglm_nb ARGV`` of
    :meth:`start` or :meth:`run` as a child forked from it. Several may run at once. Use it as
    a context manager, or :meth:`close` it."""

    def __init__(
        self, imports: tuple[str, ...] = MODEL_IMPORTS, env: dict[str, str] | None = None
    ) -> None:
        self._sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        import_err = tempfile.TemporaryFile(mode="w+")  # what importing printed
        code = (
            "import sys; sys.path.insert(0, sys.argv[1]); import cli_forks; "
            "cli_forks._serve(int(sys.argv[2]), sys.argv[3:])"
        )
        here = str(Path(__file__).parent)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, here, str(theirs.fileno()), *imports],
            stdin=subprocess.DEVNULL,  # fds 0-2 stay taken: a passed fd is never one of them
            stdout=subprocess.PIPE,
            stderr=import_err,
            text=True,
            cwd=ROOT,
            env=env,
            pass_fds=[theirs.fileno()],
        )
        theirs.close()
        line = self.proc.stdout.readline()
        import_err.seek(0)
        #: What the server printed on stderr while importing (a new process would print it
        #: too: warnings and advice that the verb's filters let through).
        self.import_stderr: str = import_err.read()
        import_err.close()
        if not line:
            self.close()
            raise RuntimeError(f"the fork server ended before it was ready:\n{self.import_stderr}")
        #: Python threads of the server once its imports are done (1: safe to fork).
        ready = json.loads(line)
        self.threads: int = ready["threads"]
        #: Whether the imports loaded openai (which reads OPENAI_LOG ... once, at import).
        self.imported_openai: bool = ready["openai"]
        self._lock = threading.Lock()

    def __enter__(self) -> CliForks:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """End the server (and any child still running) without its modules' teardown."""
        self._sock.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()

    def start(
        self,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        cwd: str | Path | None = None,
        stdin: int | None = None,
    ) -> ForkedProcess:
        """Fork a child that runs ``python -m baglm_nb ARGV`` with ``env`` (default: this
        process's environment now) in ``cwd`` (default: this process's folder), its stdin the
        file descriptor ``stdin`` (default: ``/dev/null``): its handle, whose ``stdout`` and
        ``stderr`` are text pipes as a :class:`subprocess.Popen`'s."""
        request = {
            "argv": [str(a) for a in argv],
            "env": dict(os.environ if env is None else env),
            "cwd": str(Path(cwd or os.getcwd()).resolve()),
        }
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        null = os.open(os.devnull, os.O_RDONLY) if stdin is None else None
        reply, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        fds = [null if stdin is None else stdin, out_write, err_write, theirs.fileno()]
        try:
            with self._lock:
                socket.send_fds(self._sock, [json.dumps(request).encode()], fds)
        finally:
            for f in (out_write, err_write, *([null] if null is not None else [])):
                os.close(f)
            theirs.close()
        message = reply.recv(1 << 16)
        if not message:
            raise RuntimeError(f"the fork server ended (exit status {self.proc.poll()})")
        pid = json.loads(message)["pid"]
        return ForkedProcess(reply, pid, request["argv"], open(out_read), open(err_read))

    def run(
        self, *argv: str, timeout: float = 300, cwd: str | Path = ROOT, **kw
    ) -> subprocess.CompletedProcess:
        """:func:`cli_runs.run_cli` in a forked child: ``python -m baglm_nb ARGV`` from the
        repository root (``kw``: :meth:`start`'s), its stdout and stderr as text."""
        proc = self.start(list(argv), cwd=cwd, **kw)
        try:
            out, err = proc.communicate(timeout=timeout)
        finally:
            proc.kill()  # ended already, unless it timed out
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


class ForkedProcess:
    """A child of :class:`CliForks`, as much of a :class:`subprocess.Popen` as the tests use:
    ``pid``, ``args``, ``stdout``, ``stderr``, ``returncode``, :meth:`poll`, :meth:`wait`,
    :meth:`communicate`, :meth:`send_signal`, :meth:`kill`; and, once it exited, ``exited``
    (``perf_counter()`` at its exit, the server's clock: the same on Linux) and ``cpu_s``
    (the CPU time it used, all threads)."""

    def __init__(self, reply: socket.socket, pid: int, args: list[str], stdout, stderr) -> None:
        self._reply, self.pid, self.args = reply, pid, args
        self.stdout, self.stderr = stdout, stderr
        self.returncode: int | None = None
        self.exited: float | None = None
        self.cpu_s: float | None = None
        self._reported = threading.Lock()

    def poll(self, timeout: float = 0.0) -> int | None:
        """The exit status if the child exited (within ``timeout`` s), else None."""
        with self._reported:
            if self.returncode is None:
                ready, _, _ = select.select([self._reply], [], [], timeout)
                if ready:
                    message = self._reply.recv(1 << 16)
                    if not message:
                        raise RuntimeError(f"the fork server lost child {self.pid}")
                    report = json.loads(message)
                    self.exited, self.cpu_s = report["exited"], report["cpu_s"]
                    self.returncode = report["status"]
                    self._reply.close()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """The exit status, waited for at most ``timeout`` s (polled every 10 ms, without
        holding the report's lock in between: other threads may poll too)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll(0.01) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """Read stdout and stderr to their end, wait for the exit: (stdout, stderr)."""
        got: dict[str, str] = {}
        readers = [
            threading.Thread(target=lambda n=name, s=stream: got.update({n: s.read()}))
            for name, stream in (("out", self.stdout), ("err", self.stderr))
        ]
        for t in readers:
            t.daemon = True
            t.start()
        self.wait(timeout)
        for t in readers:
            t.join(timeout=10)
        self.stdout.close()
        self.stderr.close()
        return got.get("out", ""), got.get("err", "")

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class ForkServers:
    """One :class:`CliForks` per set of imports for a session, each started the first time a
    test asks for it (:meth:`get`), checked safe to fork (one Python thread) and silent while
    importing (what a new process would print then is a fresh-process test's subject), all
    ended by :meth:`close`. Neither server may import openai, which reads its environment at
    import (a child's must be its own). The servers import in ``env`` (default: the
    environment now), not in that of whichever test first asks (which may have set some of its
    own); each child runs in its own."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self._servers: dict[tuple[str, ...], CliForks] = {}
        self._env = dict(os.environ if env is None else env)

    def get(self, imports: tuple[str, ...]) -> CliForks:
        if imports not in self._servers:
            forks = CliForks(imports, self._env)
            if forks.threads != 1 or forks.import_stderr or forks.imported_openai:
                forks.close()
                raise RuntimeError(
                    f"the fork server runs {forks.threads} Python threads, imported openai: "
                    f"{forks.imported_openai}, printed while importing: {forks.import_stderr!r}"
                )
            self._servers[imports] = forks
        return self._servers[imports]

    @property
    def light(self) -> CliForks:
        """The server of :data:`LIGHT_IMPORTS`, for a file whose forked runs load no model
        (importing torch and transformers costs more than such a run)."""
        return self.get(LIGHT_IMPORTS)

    @property
    def model(self) -> CliForks:
        """The server of :data:`MODEL_IMPORTS`: ``score`` and ``follow`` of a tiny model, and
        the verbs without a model of the same file (one server, not two)."""
        return self.get(MODEL_IMPORTS)

    def close(self) -> None:
        for forks in self._servers.values():
            forks.close()
        self._servers.clear()
