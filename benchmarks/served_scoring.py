"""Served scoring speed: segments per second at concurrency 1, 2 and 4 against a local server.

Serves the tiny random-init Qwen2.5-VL (GGUF + mmproj from
:func:`baglm_nb.models.testing.random_gguf`; ``--gguf``/``--mmproj`` for another model) with
llama.cpp's server (``tests/gguf_server.py``, ``--parallel`` slots) on 127.0.0.1, then scores the
first ``--segments`` segments of ``tests/data/videos/cup.mp4`` (640x480, 4 frames each) for a
task of ``--steps`` steps with :class:`baglm_nb.models.served.ServedScorer` (full-vocab
strategy: one request per segment and question, VSG + K progress). For each concurrency it
prints the segments per second, the requests per second and the share of the wall time spent
encoding the frames as PNG (client side). The tiny model's forward pass is negligible: the time
is the server's full-vocabulary JSON (151,665 logprobs per request) and its image preprocessing.

    .venv/bin/python benchmarks/served_scoring.py [--segments 4] [--steps 3] [--parallel 4]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from gguf_server import ServerProcess  # noqa: E402

from baglm_nb.inputs.video import iter_segments  # noqa: E402
from baglm_nb.models.served import ServedScorer  # noqa: E402
from baglm_nb.models.testing import random_gguf  # noqa: E402

STEPS = ["Fill the kettle.", "Boil the water.", "Put the tea bag in the cup.",
         "Pour the water.", "Remove the tea bag.", "Add milk."]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=4)
    parser.add_argument("--steps", type=int, default=3, help=f"K (at most {len(STEPS)})")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--parallel", type=int, default=4, help="server slots")
    parser.add_argument("--gguf", help="model GGUF (default: the tiny random Qwen2.5-VL)")
    parser.add_argument("--mmproj", help="its mmproj GGUF")
    parser.add_argument("--model-name", default="random-init/qwen2_5_vl-tiny")
    args = parser.parse_args()

    model, mmproj = (args.gguf, args.mmproj) if args.gguf else random_gguf("qwen2_5_vl")
    batch = next(iter_segments(ROOT / "tests/data/videos/cup.mp4", batch_segments=args.segments))
    frames = np.asarray(batch.frames)
    steps = STEPS[: args.steps]
    n = frames.shape[0]
    per_segment = 1 + len(steps)
    log = Path(tempfile.mkdtemp()) / "server.log"
    server = ServerProcess(model, log, mmproj=mmproj, parallel=args.parallel, n_ctx=8192)
    os.environ.setdefault("BAGLM_BENCH_KEY", "none")
    try:
        server.wait_ready()
        print(f"llama.cpp server (xllamacpp), {args.parallel} slots, model {args.model_name}; "
              f"{n} segments of {frames.shape[1]} frames {frames.shape[3]}x{frames.shape[4]}, "
              f"K = {len(steps)}: {per_segment} requests per segment")  # fmt: skip
        for c in args.concurrency:
            scorer = ServedScorer(args.model_name, family="qwen2_5_vl", base_url=server.url,
                                  api_key_env="BAGLM_BENCH_KEY", strategy="full-vocab",
                                  concurrency=c, timeout=600)  # fmt: skip
            scorer.score_segments(frames[:1], "make tea", steps[:1], progress=False)  # warm-up
            scorer.stats.update(encode_s=0.0, request_s=0.0, requests=0)
            t0 = time.perf_counter()
            scorer.score_segments(frames, "make tea", steps)
            wall = time.perf_counter() - t0
            st = scorer.stats
            print(f"concurrency {c}: {n / wall:6.3f} segments/s, {st['requests'] / wall:5.2f} "
                  f"requests/s ({wall:6.1f} s); encoding images {100 * st['encode_s'] / wall:4.1f} "
                  f"% of the time ({1000 * st['encode_s'] / (n * frames.shape[1]):.1f} ms/frame)",
                  flush=True)  # fmt: skip
    finally:
        server.kill()


if __name__ == "__main__":
    main()
