"""Serve a GGUF model with llama.cpp's own OpenAI-compatible server, on 127.0.0.1 only.

The tests' server: ``xllamacpp`` (prebuilt llama.cpp wheels on PyPI, MIT) runs llama.cpp's C++
``llama-server`` inside this process. Run as a script::

    python tests/gguf_server.py --model M.gguf --port P [--api-key K] [--mmproj F]

It prints ``ready <url>`` once the model is loaded and serves until it is terminated (SIGTERM or
SIGINT). The API key, when given, comes from the ``--api-key-env`` variable, never argv.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading


def main(argv: list[str] | None = None) -> int:
    """Start the server and block until a termination signal."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="the .gguf model file")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--api-key-env", help="environment variable holding the API key to require")
    ap.add_argument("--mmproj", help="the multimodal projector .gguf (image input)")
    ap.add_argument("--n-ctx", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_ctx = args.n_ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.warmup = False
    if args.api_key_env:
        params.api_keys = [os.environ[args.api_key_env]]
    if args.mmproj:
        params.mmproj.path = args.mmproj
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
