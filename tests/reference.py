"""Slow, explicit references for tests: the R@1 protocols (reference-protocol §6) and the filter.

Written from the protocol's words with plain loops, without ``baglm_nb.core.evaluation`` or the
time-grid module: a (video, step) pair is evaluable when some per-second row ``t`` lies in the
step's ground truth (``floor(start) <= t <= ceil(end)`` of one of its segments); it is a hit
when the earliest row with the highest belief for the step lies in it. CrossTask averages the
per-task R@1 over 20 random subsets (``random.seed(0..19)``) of at most 1850 videos.

:func:`published_filter_torch` is the published filter written with torch float32 ops from the
spec (§5.2-5.3), the slow reference of the ``float32-published`` precision.
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
    """``(step, hit)`` of every evaluable step of one video, in step order.

    The rows are scanned as :func:`in_truth` reads them, over the step's own segments (the
    segments of other steps never match), and the beliefs compared as Python floats (exact for
    float32 and float64 values): the same loops, without K x T x segments calls."""
    rows = len(beliefs)
    values = np.asarray(beliefs).tolist()
    out = []
    for step in range(video.num_steps):
        spans = [
            (math.floor(seg.start), math.ceil(seg.end))
            for seg in video.segments
            if seg.step_index == step
        ]
        if not any(lo <= t <= hi for t in range(rows) for lo, hi in spans):
            continue
        best = 0
        for t in range(1, rows):
            if values[t][step] > values[best][step]:
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


def published_filter_torch(vsg, progress, dependency, transition: str = "both") -> np.ndarray:
    """The published filter (reference-protocol §5.2-5.3) written literally with torch float32 ops.

    One row at a time, in the spec's order: the static matrix from D (no-prerequisite columns
    before the diagonal, none row and column of ones, rows normalised twice); then per row the
    expected progress, its running max including the row, readiness and validity from the raw D
    (zero denominators give 1), the step columns scaled, the rows normalised, ``belief @ Tt``,
    the update and its normalisation. Returns the (T, K+1) float32 beliefs.
    """
    import torch

    v, p, d = (
        torch.as_tensor(np.asarray(x), dtype=torch.float32) for x in (vsg, progress, dependency)
    )
    t_len, k1 = v.shape
    k = k1 - 1
    m = d.T.clone()
    m[:, d.sum(dim=1) == 0] = 1.0
    m.fill_diagonal_(1.0)
    m = torch.cat([m, torch.ones(k, 1)], dim=1)
    m = torch.cat([m, torch.ones(1, k1)], dim=0)
    m = m / m.sum(dim=1, keepdim=True)
    static = m / m.sum(dim=1, keepdim=True)
    belief = torch.full((k1,), 1.0 / k1)
    mono = torch.zeros(k)
    digits = torch.arange(10)
    row_sum, col_sum = d.sum(dim=1), d.sum(dim=0)
    out = []
    for t in range(t_len):
        mono = torch.maximum(mono, (p[t] * digits).sum(-1) / 9)
        r = torch.where(row_sum != 0, (d * mono).sum(1) / row_sum, torch.ones(k))
        val = torch.where(col_sum != 0, (d * (1 - mono)[:, None]).sum(0) / col_sum, torch.ones(k))
        weight = {"both": r * val, "readiness": r, "validity": val, "static": torch.ones(k)}
        tt = static.clone()
        tt[:, :k] = tt[:, :k] * weight[transition]
        s = tt.sum(dim=1, keepdim=True)
        tt = torch.where(s != 0, tt / s, tt)
        post = (belief @ tt) * v[t]
        z = post.sum()
        belief = post / z if z != 0 else post
        out.append(belief)
    return torch.stack(out).numpy()


def literal_smoother(
    vsg, prog, dep, lag=None, transition="both", prior="uniform", nxt=None, stay=0.0
):
    """Forward-backward written out: A_t from the filter's weights, row by row, each row mixed
    with staying, (1 - stay) T + stay I (stay 0: the paper's transition); lag 0 is the filter."""
    from baglm_nb.core.filtering import column_weights, static_transition

    t_len, n = vsg.shape
    static = static_transition(dep)
    w = column_weights(dep, prog, transition)
    a = np.zeros((t_len, n, n))
    for t in range(t_len):
        for j in range(n):
            row = np.array([static[j, i] * w[t, i] for i in range(n)])
            a[t, j] = (1 - stay) * row / row.sum()
            a[t, j, j] += stay
    lik = np.zeros((t_len, n))
    prior_vec = np.full(n, 1.0 / n)
    for t in range(t_len):
        if prior == "propagated":
            prior_vec = np.array(
                [sum(prior_vec[j] * a[t, j, i] for j in range(n)) for i in range(n)]
            )
            lik[t] = vsg[t] / prior_vec
        elif prior == "next_step":
            lik[t] = vsg[t] / nxt[t]
        else:
            lik[t] = vsg[t]
    alpha = np.zeros((t_len, n))
    prev = np.full(n, 1.0 / n)
    for t in range(t_len):
        pred = np.array([sum(prev[j] * a[t, j, i] for j in range(n)) for i in range(n)])
        alpha[t] = pred * lik[t] / (pred * lik[t]).sum()
        prev = alpha[t]
    out = np.zeros((t_len, n))
    for t in range(t_len):
        last = t_len - 1 if lag is None else min(t + lag, t_len - 1)
        beta = np.ones(n)
        for r in range(last, t, -1):
            beta = np.array(
                [sum(a[r, j, i] * lik[r, i] * beta[i] for i in range(n)) for j in range(n)]
            )
        out[t] = alpha[t] * beta / (alpha[t] * beta).sum()
    return out
