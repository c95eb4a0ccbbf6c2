"""Serve a GGUF model with llama.cpp's own OpenAI-compatible server, on 127.0.0.1 only.

The tests' server: ``xllamacpp`` (prebuilt llama.cpp wheels on PyPI, MIT) runs llama.cpp's C++
``llama-server`` inside this process. Run as a script::

    python tests/gguf_server.py --model M.gguf --port P [--api-key-env VAR] [--mmproj F]
        [--parallel N] [--n-ctx TOKENS] [--threads N] [--alias NAME]

It prints ``ready <url>`` once the model is loaded and serves until it is terminated (SIGTERM or
SIGINT). The tests start it through :class:`ServerProcess` (a free port, a bounded wait, a kill).
The API key, when given, comes from the ``--api-key-env`` variable, never argv. The chat
template is the GGUF's own, rendered by llama.cpp's jinja engine (``use_jinja``): for the
served-scorer tests' tiny Qwen2.5-VL it reproduces the transformers prompt token for token
(``tests/test_served.py`` checks it). ``--mmproj`` enables image input (mtmd); ``--parallel``
serves N requests at once, each with ``--n-ctx`` tokens of context; ``--threads`` is llama.cpp's
compute threads (the tests take 1: on a busy machine two threads spin at every barrier of a tiny
model's graph and cost many times the CPU of one); ``--alias`` names the model in ``/v1/models``
instead of its file path.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

READY_TIMEOUT_S = 120.0


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """This script as a subprocess on a free 127.0.0.1 port; :meth:`kill` always ends it.

    ``api_key`` is handed over in an environment variable, never on the command line.
    """

    def __init__(
        self,
        model: str | os.PathLike,
        log: Path,
        *,
        api_key: str | None = None,
        mmproj: str | os.PathLike | None = None,
        parallel: int = 1,
        n_ctx: int = 1024,
        threads: int = 2,
        alias: str | None = None,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.api_key = api_key
        cmd = [
            sys.executable,
            __file__,
            "--model",
            str(model),
            "--port",
            str(self.port),
            "--parallel",
            str(parallel),
            "--n-ctx",
            str(n_ctx),
            "--threads",
            str(threads),
        ]
        if mmproj:
            cmd += ["--mmproj", str(mmproj)]
        if alias:
            cmd += ["--alias", alias]
        env = dict(os.environ)
        if api_key:
            cmd += ["--api-key-env", "GGUF_SERVER_KEY"]
            env["GGUF_SERVER_KEY"] = api_key
        self.log = log
        self._log_file = open(log, "wb")  # noqa: SIM115 - closed in kill()
        self.proc = subprocess.Popen(cmd, stdout=self._log_file, stderr=subprocess.STDOUT, env=env)

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> ServerProcess:
        """Block until ``/v1/models`` answers 200 (the model is loaded), at most ``timeout`` s."""
        deadline = time.monotonic() + timeout
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"gguf_server.py exited with {self.proc.returncode}:\n{self.tail()}"
                )
            req = urllib.request.Request(f"{self.url}/models", headers=headers)
            try:
                with urllib.request.urlopen(req, timeout=2) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"gguf_server.py not ready after {timeout:.0f} s:\n{self.tail()}")

    def tail(self) -> str:
        """The end of the server's log."""
        try:
            return self.log.read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def kill(self) -> None:
        """End the server (idempotent)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self._log_file.close()


def main(argv: list[str] | None = None) -> int:
    """Start the server and block until a termination signal."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="the .gguf model file")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--api-key-env", help="environment variable holding the API key to require")
    ap.add_argument("--mmproj", help="the multimodal projector .gguf (image input)")
    ap.add_argument("--n-ctx", type=int, default=1024, help="context tokens per parallel slot")
    ap.add_argument("--parallel", type=int, default=1, help="requests served at once")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--alias", help="the model's name in /v1/models (llama-server's --alias)")
    args = ap.parse_args(argv)

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_ctx = args.n_ctx * args.parallel
    params.n_parallel = args.parallel
    params.use_jinja = True  # the GGUF's own chat template
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.warmup = False
    # llama.cpp's fitting of layers and context to the devices' memory loads the model once
    # more (vocabulary included: about 40% of a start's CPU here) and has nothing to place on
    # a CPU-only machine with a tiny model
    params.fit_params = False
    if args.api_key_env:
        params.api_keys = [os.environ[args.api_key_env]]
    if args.mmproj:
        params.mmproj.path = args.mmproj
    if args.alias:
        params.model_alias = {args.alias}
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = xllamacpp.Server(params)  # loads the model, then listens
    print(f"ready {server.listening_address}", flush=True)
    stop.wait()
    del server
    return 0


if __name__ == "__main__":
    sys.exit(main())
