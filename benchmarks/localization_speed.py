"""Time LoG step localization + article-grounding mAP on all of HT-Step (goal: < 20 s, 2 cores).

Builds BaGLM beliefs for the 600 HT-Step videos from *simulated* observations (untimed; the
numbers are not a real model's), warms up (numba kernels, cached kernel spectra), then times:

1. the workbench path: ``localize`` (detection vectorised over the K step columns of a video)
   + ``article_grounding_map``, best of ``--repeats``;
2. the same detector run one step column at a time (``detect_segments`` on each (T, 1) column,
   as a per-step loop would call it) + the same mAP, once; its segments must be identical.

It prints both times and their ratio. ``--direct`` also times the vectorised detector with
``method="direct"`` (``scipy.ndimage.gaussian_laplace`` per scale, no FFT; slow).

    .venv/bin/python benchmarks/localization_speed.py [--repeats 3] [--direct]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from baglm_nb.analyses.localization import (
    article_grounding_map,
    column_step_ids,
    detect_segments,
    localize,
)
from baglm_nb.core.observations import from_simulation
from baglm_nb.core.pipeline import run_baglm
from baglm_nb.inputs.datasets import load_dataset

GOAL_S = 20.0


def per_column(beliefs: dict, step_ids: dict) -> pd.DataFrame:
    """The detector called on one step column at a time."""
    frames = []
    for uid, b in beliefs.items():
        ids = step_ids[uid]
        for k in range(b.shape[1] - 1):
            seg = detect_segments(b[:, k])
            seg.insert(0, "video_uid", uid)
            seg["step_index"] = k
            seg["step_id"] = ids[k]
            frames.append(seg)
    return pd.concat(frames, ignore_index=True)


def _key(df: pd.DataFrame) -> np.ndarray:
    cols = ["video_uid", "step_index", "t_start", "t_end", "score"]
    return df[cols].sort_values(cols[:4]).round(12).to_numpy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--direct", action="store_true", help="also time method='direct'")
    args = parser.parse_args()

    videos = load_dataset("htstep")
    start = time.perf_counter()
    obs = from_simulation("htstep", videos=videos)
    beliefs = run_baglm(obs, "oracle", videos=videos)
    setup = time.perf_counter() - start
    warm = {u: beliefs[u] for u in list(beliefs)[:5]}
    article_grounding_map(localize(warm, "htstep", videos), videos=videos[:5])

    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        preds = localize(beliefs, "htstep", videos)
        result = article_grounding_map(preds, videos=videos)
        times.append(time.perf_counter() - start)
    best = min(times)

    step_ids = {v.uid: column_step_ids(v, videos) for v in videos}  # bookkeeping, untimed
    start = time.perf_counter()
    slow = per_column(beliefs, step_ids)
    slow_result = article_grounding_map(slow, videos=videos)
    column = time.perf_counter() - start
    same = len(slow) == len(preds) and np.array_equal(_key(slow), _key(preds))

    print(
        f"HT-Step: {len(beliefs)} videos, {sum(b.shape[0] for b in beliefs.values())} rows, "
        f"{sum(b.shape[1] - 1 for b in beliefs.values())} step columns "
        f"(simulated observations + BaGLM filter: {setup:.1f} s, untimed)"
    )
    print("BaGLM mAP (simulated, %): " + ", ".join(f"{k} {v:.1f}" for k, v in result.items()))
    print(
        f"detection + mAP, vectorised over steps: best {best:.2f} s of {args.repeats} "
        f"({len(preds)} segments; {best / GOAL_S:.2f} of the {GOAL_S:.0f} s goal)"
    )
    print(
        f"detection + mAP, one step column at a time: {column:.2f} s "
        f"(ratio {column / best:.1f}x; identical segments: {same}, "
        f"same mAP: {slow_result == result})"
    )
    if args.direct:
        start = time.perf_counter()
        direct = localize(beliefs, "htstep", videos, method="direct")
        article_grounding_map(direct, videos=videos)
        elapsed = time.perf_counter() - start
        print(
            f"detection + mAP with method='direct' (gaussian_laplace per scale): {elapsed:.2f} s "
            f"(ratio {elapsed / best:.1f}x)"
        )


if __name__ == "__main__":
    main()
