"""Progress scoring speed: K full passes per segment (published) vs the shared-prefix path.

Builds a tiny randomly initialised InternVL-architecture model (label "random-init"; its scores are
meaningless) large enough that the shared prefix dominates, as in the real model: 4 frames of
``--image-size`` pixels (448 -> 256 visual tokens per frame, 1,024 per segment, like
InternVL2.5/3), language model hidden 256 with 4 layers, the real Qwen BPE tokenizer. For
``--segments`` segments it scores the VSG question and the K = ``--steps`` progress questions

* naive: one full forward pass per question (frames re-encoded each time), as the published code;
* shared: frames encoded once, the common prefix run once, the K + 1 suffixes batched from its
  KV cache (:class:`baglm_nb.models.engine.TransformersScorer` with ``shared_prefix=True``),

prints both wall times (best of ``--repeats`` interleaved runs; the process CPU times too, which
other load on a shared machine disturbs less) and the naive/shared ratio (goal >= 3x), and checks
that both give the same probabilities (relative 1e-4, and renormalised to 1e-4 absolute).

    .venv/bin/python benchmarks/progress_prefix.py [--segments 2] [--steps 10] [--threads 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from baglm_nb.models.testing import make_random_scorer
from baglm_nb.models.tokenizers import build_tokenizer

GOAL = "Make Nigerian Style Jollof Rice"


def _steps(k: int) -> list[str]:
    base = [
        "wash the rice",
        "chop the onions and peppers",
        "blend tomatoes and peppers",
        "heat oil in a pot",
        "fry the onions",
        "add the tomato blend and fry",
        "season with stock and spices",
        "add the rice and water",
        "cover and simmer until cooked",
        "stir and serve",
    ]
    return [
        base[i % len(base)] + ("" if i < len(base) else f" ({i // len(base) + 1})")
        for i in range(k)
    ]


def _check(a: np.ndarray, b: np.ndarray, name: str) -> float:
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=0, err_msg=name)
    na, nb = a / a.sum(-1, keepdims=True), b / b.sum(-1, keepdims=True)
    np.testing.assert_allclose(na, nb, rtol=0, atol=1e-4, err_msg=name)
    return float(np.abs(a / b - 1).max())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--segments", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10, help="K")
    ap.add_argument("--image-size", type=int, default=448)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per path (best is kept)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (0: torch default)")
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    tok = build_tokenizer("internvl")
    scorer = make_random_scorer(
        "internvl",
        tok,
        hidden_size=args.hidden,
        num_layers=args.layers,
        num_heads=max(1, args.hidden // 64),
        vision_hidden_size=64,
        vision_layers=2,
        image_size=args.image_size,
        seed=0,
        segment_batch_size=args.segments,
        suffix_batch_size=args.segments * (args.steps + 1),
    )
    g = torch.Generator().manual_seed(0)
    frames = torch.randint(0, 256, (args.segments, 4, 3, 360, 640), generator=g, dtype=torch.uint8)
    steps = _steps(args.steps)
    n_vis = scorer._fam.tokens_per_frame() * 4
    print(
        f"model {scorer.model_id} (label {scorer.label}): {n_vis} visual tokens per segment, "
        f"K={args.steps}, {args.segments} segments, {torch.get_num_threads()} thread(s)"
    )

    def once(shared: bool):
        scorer.shared_prefix = shared
        w0, c0 = time.perf_counter(), time.process_time()
        out = scorer.score_segments(frames, GOAL, steps)
        return time.perf_counter() - w0, time.process_time() - c0, out

    scorer.score_segments(frames[:1], GOAL, steps[:2])  # warm-up (lazy inits, tokenisation)
    # interleaved runs, best of each: robust to other load on a shared machine
    t_naive = t_shared = c_naive = c_shared = float("inf")
    for _ in range(args.repeats):
        w, c, naive = once(False)
        t_naive, c_naive = min(t_naive, w), min(c_naive, c)
        w, c, shared = once(True)
        t_shared, c_shared = min(t_shared, w), min(c_shared, c)
    d_vsg = _check(shared.vsg, naive.vsg, "vsg")
    d_prog = _check(shared.progress, naive.progress, "progress")
    per = args.segments
    for name, w, c in (
        ("naive  (K+1 full passes)  ", t_naive, c_naive),
        ("shared (prefix + suffixes)", t_shared, c_shared),
    ):
        print(f"{name}: wall {w:7.3f} s ({w / per:.3f} s/segment), cpu {c:7.3f} s")
    ratio_w, ratio_c = t_naive / t_shared, c_naive / c_shared
    print(f"naive/shared ratio: wall {ratio_w:.2f}x, cpu {ratio_c:.2f}x (goal >= 3x)")
    print(f"outputs agree: max relative difference vsg {d_vsg:.1e}, progress {d_prog:.1e}")


if __name__ == "__main__":
    main()
