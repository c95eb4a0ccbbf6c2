"""Filter speed on inputs shaped like all 600 HT-Step videos (issue goal: >= 100x baseline).

Builds per-second rows with each video's real K and T (random scores, fixed seed), runs the
full filter (readiness + validity) over every video with :func:`baglm_nb.core.filtering.run_filter`,
and times the baseline: a straightforward per-row loop over torch tensors, the way the
published code runs. Prints both times and their ratio, and checks that they agree.

    .venv/bin/python benchmarks/filter_speed.py [--baseline-videos N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from baglm_nb.core.filtering import run_filter, static_transition
from baglm_nb.inputs.datasets import load_dataset


def torch_row_loop(vsg: torch.Tensor, prog: torch.Tensor, dep: torch.Tensor) -> torch.Tensor:
    """Baseline: one row at a time over torch tensors (reference-protocol §5.3)."""
    t_len, k1 = vsg.shape
    k = k1 - 1
    static = torch.from_numpy(static_transition(dep.numpy()))
    digits = torch.arange(10, dtype=torch.float64)
    belief = torch.full((k1,), 1.0 / k1, dtype=torch.float64)
    mono = torch.zeros(k, dtype=torch.float64)
    row_sum, col_sum = dep.sum(1), dep.sum(0)
    out = []
    for t in range(t_len):
        mono = torch.maximum(mono, (prog[t] * digits).sum(-1) / 9)
        r = torch.where(row_sum > 0, dep @ mono / row_sum.clamp_min(1e-300), 1.0)
        v = torch.where(col_sum > 0, (1 - mono) @ dep / col_sum.clamp_min(1e-300), 1.0)
        tt = static.clone()
        tt[:, :k] *= r * v
        s = tt.sum(1, keepdim=True)
        tt = torch.where(s > 0, tt / s.clamp_min(1e-300), tt)
        post = (belief @ tt) * vsg[t]
        total = post.sum()
        belief = post / total if total > 0 else post
        out.append(belief)
    return torch.stack(out)


def make_inputs(seed: int = 0):
    """Per-second inputs with HT-Step's real K and T for all 600 videos."""
    rng = np.random.default_rng(seed)
    inputs = []
    for v in load_dataset("htstep"):
        t_seg, k = v.num_rows() // 2, v.num_steps
        vsg = np.repeat(rng.random((t_seg, k + 1)), 2, axis=0)
        prog = np.repeat(rng.dirichlet(np.ones(10), size=(t_seg, k)), 2, axis=0)
        dep = (rng.random((k, k)) > 0.5).astype(float)
        inputs.append((vsg, prog, dep))
    return inputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--baseline-videos",
        type=int,
        default=600,
        help="time the torch baseline on the first N videos and scale up",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    inputs = make_inputs()
    rows = sum(x[0].shape[0] for x in inputs)
    run_filter(*inputs[0])  # compile (numba) outside the timing
    start = time.perf_counter()
    fast = [run_filter(*x) for x in inputs]
    t_fast = time.perf_counter() - start

    n = min(args.baseline_videos, len(inputs))
    sub = inputs[:n]
    sub_rows = sum(x[0].shape[0] for x in sub)
    tensors = [tuple(torch.from_numpy(a) for a in x) for x in sub]
    start = time.perf_counter()
    slow = [torch_row_loop(*x) for x in tensors]
    t_slow = (time.perf_counter() - start) * rows / sub_rows
    err = max(float(np.abs(f - s.numpy()).max()) for f, s in zip(fast, slow, strict=False))

    print(f"videos: {len(inputs)}, per-second rows: {rows}")
    print(f"run_filter (numba kernel):   {t_fast:8.3f} s")
    scaled = "" if n == len(inputs) else f" (timed on {n} videos, {sub_rows} rows, scaled)"
    print(f"torch per-row loop baseline: {t_slow:8.3f} s{scaled}")
    print(f"speed-up: {t_slow / t_fast:.0f}x (goal >= 100x); max |difference| {err:.2e}")


if __name__ == "__main__":
    main()
