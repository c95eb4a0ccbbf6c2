"""A slow, explicit reference of the R@1 protocols for tests (reference-protocol §6).

Written from the protocol's words with plain loops, without ``baglm_nb.core.evaluation`` or the
time-grid module: a (video, step) pair is evaluable when some per-second row ``t`` lies in the
step's ground truth (``floor(start) <= t <= ceil(end)`` of one of its segments); it is a hit
when the earliest row with the highest belief for the step lies in it. CrossTask averages the
per-task R@1 over 20 random subsets (``random.seed(0..19)``) of at most 1850 videos.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from baglm_nb.inputs.datasets import Video


def in_truth(video: Video, row: int, step: int) -> bool:
    """Whether per-second row ``row`` lies in a ground-truth segment of ``step``."""
    return any(
        seg.step_index == step and math.floor(seg.start) <= row <= math.ceil(seg.end)
        for seg in video.segments
    )


def reference_pairs(video: Video, beliefs: np.ndarray) -> list[tuple[int, bool]]:
    """``(step, hit)`` of every evaluable step of one video, in step order."""
    rows = len(beliefs)
    out = []
    for step in range(video.num_steps):
        if not any(in_truth(video, t, step) for t in range(rows)):
            continue
        best = 0
        for t in range(1, rows):
            if beliefs[t][step] > beliefs[best][step]:
                best = t
        out.append((step, in_truth(video, best, step)))
    return out


def reference_recall(
    dataset: str, beliefs: Mapping[str, np.ndarray], videos: Sequence[Video]
) -> float:
    """R@1 in percent of the videos of ``videos`` that ``beliefs`` covers."""
    evaluated = [v for v in videos if v.uid in beliefs]
    pairs = {v.uid: reference_pairs(v, beliefs[v.uid]) for v in evaluated}
    if dataset != "crosstask":
        flat = [hit for found in pairs.values() for _, hit in found]
        return 100 * sum(flat) / len(flat)
    task = {v.uid: v.task for v in evaluated}
    uids = [v.uid for v in evaluated]
    values = []
    for seed in range(20):
        random.seed(seed)
        hits: dict[str, int] = defaultdict(int)
        count: dict[str, int] = defaultdict(int)
        for uid in random.sample(uids, min(1850, len(uids))):
            for _, hit in pairs[uid]:
                hits[task[uid]] += hit
                count[task[uid]] += 1
        values.append(sum(hits[t] / count[t] for t in count) / len(count))
    return 100 * sum(values) / len(values)
