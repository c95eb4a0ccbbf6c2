"""Served scoring speed: the labels and full-vocab strategies against one local server.

Serves the tiny random-init Qwen2.5-VL (GGUF + mmproj from
:func:`baglm_nb.models.testing.random_gguf`; ``--gguf``/``--mmproj`` for another model) with
llama.cpp's server (``tests/gguf_server.py``, ``--parallel`` slots) on 127.0.0.1, then scores the
first ``--segments`` segments of ``tests/data/videos/cup.mp4`` (640x480, 4 frames each) for a
task of ``--steps`` steps with :class:`baglm_nb.models.served.ServedScorer`, once per strategy
(``labels``: one request per answer, forced with logit_bias; ``full-vocab``: one request per
question, 151,665 logprobs back) and concurrency. It prints, per strategy and concurrency, the
segments per second, the requests per second and the bytes received per segment; then the
agreement of the two strategies' scores (concurrency 1) and the ratios against the goals:
labels >= 10x the segments per second of full-vocab at concurrency 2, and <= 1 % of its bytes
per segment. The machine's load average is printed too (a shared CPU slows both strategies).

    .venv/bin/python benchmarks/served_scoring.py [--segments 2] [--steps 3] [--parallel 4]
        [--pixels MIN MAX]

The frames are sent at the model's processor size: the tiny model's local scorer resizes them
to 56x56 (``--pixels 3136 3136``); the published Qwen2.5-VL bounds send them at 448x336.
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
from baglm_nb.models.openai_client import ConnectionOptions  # noqa: E402
from baglm_nb.models.served import ServedScorer  # noqa: E402
from baglm_nb.models.served_messages import served_frames, served_pixels  # noqa: E402
from baglm_nb.models.testing import random_gguf  # noqa: E402

STEPS = [
    "Fill the kettle.",
    "Boil the water.",
    "Put the tea bag in the cup.",
    "Pour the water.",
    "Remove the tea bag.",
    "Add milk.",
]
SPEED_GOAL = 10.0
BYTES_GOAL = 0.01


def run(url: str, strategy: str, c: int, frames: np.ndarray, steps: list[str], args):
    """Score ``frames`` once (after a warm-up): (segments/s, requests/s, bytes/segment, result)."""
    scorer = ServedScorer(
        args.model_name,
        family="qwen2_5_vl",
        connection=ConnectionOptions(url, "BAGLM_BENCH_KEY", timeout=600),
        strategy=strategy,
        concurrency=c,
        pixels=tuple(args.pixels),
    )
    scorer.score_segments(frames[:1], "make tea", steps[:1], progress=False)  # warm-up, probe
    scorer.stats.update(encode_s=0.0, request_s=0.0, requests=0, bytes=0)
    t0 = time.perf_counter()
    result = scorer.score_segments(frames, "make tea", steps)
    wall = time.perf_counter() - t0
    n, st = frames.shape[0], scorer.stats
    return n / wall, st["requests"] / wall, st["bytes"] / n, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3, help=f"K (at most {len(STEPS)})")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--parallel", type=int, default=4, help="server slots")
    parser.add_argument("--gguf", help="model GGUF (default: the tiny random Qwen2.5-VL)")
    parser.add_argument("--mmproj", help="its mmproj GGUF")
    parser.add_argument("--model-name", default="random-init/qwen2_5_vl-tiny")
    parser.add_argument(
        "--pixels",
        type=int,
        nargs=2,
        default=None,
        metavar=("MIN", "MAX"),
        help="the frames' processor size bounds (default: the tiny model's "
        "56*56, as its local scorer; with --gguf the published 128*28*28 "
        "and 360*420)",
    )
    args = parser.parse_args()
    if args.pixels is None:
        args.pixels = list(served_pixels("qwen2_5_vl")) if args.gguf else [56 * 56, 56 * 56]

    model, mmproj = (args.gguf, args.mmproj) if args.gguf else random_gguf("qwen2_5_vl")
    batch = next(iter_segments(ROOT / "tests/data/videos/cup.mp4", batch_segments=args.segments))
    frames = np.asarray(batch.frames)
    steps = STEPS[: args.steps]
    log = Path(tempfile.mkdtemp()) / "server.log"
    server = ServerProcess(model, log, mmproj=mmproj, parallel=args.parallel, n_ctx=8192)
    os.environ.setdefault("BAGLM_BENCH_KEY", "none")
    rates: dict[tuple[str, int], float] = {}
    sizes: dict[str, float] = {}
    results = {}
    sent = served_frames("qwen2_5_vl", frames, tuple(args.pixels))
    try:
        server.wait_ready()
        print(
            f"llama.cpp server (xllamacpp), {args.parallel} slots, model {args.model_name}; "
            f"{frames.shape[0]} segments of {frames.shape[1]} frames {frames.shape[4]}x"
            f"{frames.shape[3]} sent at {sent.shape[4]}x{sent.shape[3]}, K = {len(steps)}; "
            f"load average "
            f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
        )
        for strategy in ("labels", "full-vocab"):
            for c in args.concurrency:
                seg_s, req_s, size, result = run(server.url, strategy, c, frames, steps, args)
                rates[strategy, c], sizes[strategy] = seg_s, size
                results.setdefault(strategy, result)
                print(
                    f"{strategy:10s} concurrency {c}: {seg_s:7.3f} segments/s, {req_s:6.2f} "
                    f"requests/s, {size / 1e3:10.1f} KB received per segment",
                    flush=True,
                )
    finally:
        server.kill()
    a, b = results["labels"], results["full-vocab"]
    p_a, p_b = (
        np.concatenate([a.vsg.ravel(), a.progress.ravel()]),
        np.concatenate([b.vsg.ravel(), b.progress.ravel()]),
    )
    print(
        f"agreement (concurrency 1, {p_a.size} probabilities): max |dp| = "
        f"{np.abs(p_a - p_b).max():.2e}, max |d log p| = "
        f"{np.abs(np.log(p_a) - np.log(p_b)).max():.2e} (largest p {p_b.max():.2e})"
    )
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    if 2 in args.concurrency:
        ratio = rates["labels", 2] / rates["full-vocab", 2]
        print(
            f"labels / full-vocab segments per second at concurrency 2: {ratio:.1f}x "
            f"(goal >= {SPEED_GOAL:g}x: {ratio / SPEED_GOAL:.1f} of the goal)"
        )
    share = sizes["labels"] / sizes["full-vocab"]
    print(
        f"labels bytes per segment: {100 * share:.4f} % of full-vocab's (goal <= "
        f"{100 * BYTES_GOAL:g} %: {share / BYTES_GOAL:.4f} of the goal)"
    )


if __name__ == "__main__":
    main()
