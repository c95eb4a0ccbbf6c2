"""Online filter latency: replay all 600 HT-Step videos through ``OnlineGrounder``.

Goals (issue "online grounding"): p99 per-segment filter latency under 1 ms at K <= 30, and the
online total no more than 3x the batch ``run_filter`` time on the same rows. Observations are
simulated (labelled so) unless ``--scores`` names a score cache (e.g. imported scores); the
dependency matrix is the oracle chain. With ``--clip`` it also runs the tiny random-init scorer
on a real clip end to end and prints the per-segment latency broken down (decode, score,
filter).

    .venv/bin/python benchmarks/online_latency.py [--scores CACHE] [--clip CLIP]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from baglm_nb.apps.online import median_p99
from baglm_nb.core.filtering import run_filter
from baglm_nb.core.online import OnlineGrounder
from baglm_nb.core.oracles import oracle_dependency
from baglm_nb.inputs.datasets import load_dataset


def load_segments(scores: str | None):
    """Per-segment (vsg, progress) per video and the source label."""
    videos = load_dataset("htstep")
    if scores:
        from baglm_nb.core.sources import open_score_cache

        cache = open_score_cache(scores)
        data = {u: (s.vsg, s.progress) for u, s in cache.read_all().items()}
        return videos, data, f"{cache.key.source}:{cache.key.model}"
    from baglm_nb.core.simulate import simulate_dataset

    sims = simulate_dataset("htstep", show_progress=False)
    return videos, {u: (s.vsg, s.progress) for u, s in sims.items()}, "simulated"


def replay_all(videos, data):
    """Online pass: per-segment filter latencies and the total wall time."""
    latencies, k_max = [], 0
    start = time.perf_counter()
    for v in videos:
        vsg, prog = data[v.uid]
        g = OnlineGrounder(None, v.goal, v.steps, oracle_dependency(v))
        for s in range(vsg.shape[0]):
            latencies.append(g.push_scores(vsg[s], prog[s]).latency["filter"])
        k_max = max(k_max, v.num_steps)
    return latencies, time.perf_counter() - start, k_max


def batch_all(videos, data):
    """Batch pass over the same per-second rows."""
    start = time.perf_counter()
    for v in videos:
        vsg, prog = data[v.uid]
        run_filter(np.repeat(vsg, 2, axis=0), np.repeat(prog, 2, axis=0), oracle_dependency(v))
    return time.perf_counter() - start


def clip_latency(path: str) -> None:
    """End-to-end per-segment latency with the tiny random-init scorer on a real clip."""
    from baglm_nb.apps.online import follow
    from baglm_nb.models.scoring import make_scorer

    steps = ["pick up the cup", "turn the cup", "put the cup down"]
    scorer = make_scorer("random-init:internvl")
    d = np.zeros((3, 3))
    g = OnlineGrounder(scorer, "handle a cup", steps, d, source="random-init tiny model")
    ests = list(follow(path, g))
    print(
        f"\nend to end on {path} with a tiny random-init InternVL-architecture scorer "
        f"(not a real model), {len(ests)} segments, per segment:"
    )
    for part in ("decode", "score", "filter"):
        med, p99 = median_p99([e.latency[part] * 1000 for e in ests])
        print(f"  {part:<7} median {med:9.3f} ms   p99 {p99:9.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scores", help="score cache folder (default: simulated scores)")
    parser.add_argument("--clip", help="also time the tiny scorer end to end on this clip")
    args = parser.parse_args()
    videos, data, label = load_segments(args.scores)
    videos = [v for v in videos if v.uid in data]
    replay_all(videos[:5], data)  # compile and warm
    batch_all(videos[:5], data)
    latencies, online_s, k_max = replay_all(videos, data)
    batch_s = batch_all(videos, data)
    med, p99 = median_p99([x * 1000 for x in latencies])
    print(
        f"{len(videos)} HT-Step videos, {len(latencies)} segments, K <= {k_max}, "
        f"observations: {label}"
    )
    print(f"per-segment filter latency: median {med:.4f} ms, p99 {p99:.4f} ms (goal p99 < 1 ms)")
    print(
        f"online total {online_s:.3f} s vs batch run_filter {batch_s:.3f} s: "
        f"{online_s / batch_s:.2f}x (goal <= 3x)"
    )
    if args.clip:
        clip_latency(args.clip)


if __name__ == "__main__":
    main()
