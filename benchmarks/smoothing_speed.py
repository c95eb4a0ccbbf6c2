"""Fixed-lag smoothing speed (issue 24): two ratios against their goals, in one run.

1. The offline smoother (``run_filter(..., smoothing_lag_s=None)``: the filter's forward pass and
   the backward pass) over all of HT-Step against the filter alone (``smoothing_lag_s=0``), on the
   simulated default scores and the simulated LLaMA's D; goal: at most 3x.
2. The online fixed-lag smoother at 16 segments (``OnlineGrounder(lag_segments=16)``): the
   per-segment time of ``push_scores`` (filter step + smoother), 99th percentile over every
   segment of the first ``--online-videos`` HT-Step videos; goal: at most 1 ms.

Each timing is the best of ``--repeats`` runs (the machine is shared). Prints both figures and
their ratios to the goals.

    .venv/bin/python benchmarks/smoothing_speed.py [--online-videos N] [--repeats R]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from baglm_nb.core import sources
from baglm_nb.core.filtering import run_filter
from baglm_nb.core.online import OnlineGrounder

GOAL_OFFLINE_RATIO = 3.0
GOAL_ONLINE_P99_MS = 1.0
ONLINE_LAG = 16


def _time_all(inputs, lag) -> float:
    start = time.perf_counter()
    for vsg, prog, dep in inputs:
        run_filter(vsg, prog, dep, smoothing_lag_s=lag)
    return time.perf_counter() - start


def offline_ratio(inputs, repeats: int) -> tuple[float, float]:
    """Best-of-``repeats`` seconds of the filter and of the offline smoother over ``inputs``."""
    _time_all(inputs[:2], 0), _time_all(inputs[:2], None)  # compile
    filt = min(_time_all(inputs, 0) for _ in range(repeats))
    smooth = min(_time_all(inputs, None) for _ in range(repeats))
    return filt, smooth


def online_times(videos, obs, deps, repeats: int) -> np.ndarray:
    """Per-segment ``push_scores`` seconds at lag 16 (best of ``repeats`` per segment)."""
    best = []
    for video in videos:
        vsg, prog = obs.vsg[video.uid][::2], obs.progress[video.uid][::2]
        runs = []
        for _ in range(repeats):
            g = OnlineGrounder(
                None, video.goal, video.steps, deps.matrix(video), lag_segments=ONLINE_LAG
            )
            times = []
            for v, p in zip(vsg, prog, strict=True):
                start = time.perf_counter()
                g.push_scores(v, p)
                times.append(time.perf_counter() - start)
            runs.append(times)
        best.append(np.min(np.array(runs), axis=0))
    return np.concatenate(best)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--online-videos", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    obs = sources.observations("htstep", "simulated")
    deps = sources.dependencies("htstep", "simulated-llm:llama")
    inputs = [(obs.vsg[v.uid], obs.progress[v.uid], deps.matrix(v)) for v in obs.videos]
    rows = sum(x[0].shape[0] for x in inputs)
    filt, smooth = offline_ratio(inputs, args.repeats)
    ratio = smooth / filt
    print(
        f"HT-Step, {len(inputs)} videos, {rows} per-second rows (simulated scores, D {deps.label}):"
    )
    print(f"  filter (L=0)        {filt * 1000:8.1f} ms")
    print(
        f"  smoother (L=inf)    {smooth * 1000:8.1f} ms   = {ratio:.2f}x the filter; goal "
        f"<= {GOAL_OFFLINE_RATIO:g}x: ratio to goal {ratio / GOAL_OFFLINE_RATIO:.2f} "
        f"({'met' if ratio <= GOAL_OFFLINE_RATIO else 'NOT met'})"
    )
    times = online_times(obs.videos[: args.online_videos], obs, deps, args.repeats) * 1000
    p50, p99 = np.percentile(times, [50, 99])
    print(
        f"online fixed-lag, lag {ONLINE_LAG} segments, {len(times)} segments of "
        f"{min(args.online_videos, len(obs.videos))} videos (push_scores: filter + "
        "smoother):"
    )
    print(f"  per segment median {p50:.3f} ms, p99 {p99:.3f} ms; goal p99 <= "
          f"{GOAL_ONLINE_P99_MS:g} ms: ratio to goal {p99 / GOAL_ONLINE_P99_MS:.2f} "
          f"({'met' if p99 <= GOAL_ONLINE_P99_MS else 'NOT met'})")  # fmt: skip


if __name__ == "__main__":
    main()
