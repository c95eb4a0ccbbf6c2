"""What the belief views show, as numbers: per-second truth, top states, right/wrong, hits.

The figures (:mod:`baglm_nb.analyses.belief_views`), the explorer and the ``follow`` report read
these, so a strip, a legend cell and a report table agree by construction. Rows are the
per-second rows of :func:`~baglm_nb.inputs.grid.ground_truth`; state K is ``none``.

Exports :func:`truth_index`, :func:`top_states`, :func:`right_wrong`, :func:`annotated_intervals`,
:func:`runs`, :func:`peak_hits`, :func:`announced_status` and :func:`keyframe_times`.
"""

from __future__ import annotations

import numpy as np

from baglm_nb.core.evaluation import video_hits
from baglm_nb.core.online_metrics import truth_states
from baglm_nb.inputs.datasets import Video
from baglm_nb.inputs.grid import ground_truth

__all__ = [
    "announced_status",
    "annotated_intervals",
    "keyframe_times",
    "peak_hits",
    "right_wrong",
    "runs",
    "top_states",
    "truth_index",
]


def runs(values: np.ndarray) -> list[tuple[int, int, int]]:
    """``(start, length, value)`` of the runs of equal values in a 1-D integer array."""
    v = np.asarray(values)
    if not len(v):
        return []
    edges = np.flatnonzero(np.diff(v)) + 1
    starts = np.concatenate([[0], edges])
    ends = np.concatenate([edges, [len(v)]])
    return [(int(a), int(b - a), int(v[a])) for a, b in zip(starts, ends, strict=True)]


def truth_index(video: Video, num_rows: int) -> np.ndarray:
    """The annotated step at each per-second row (T,), K where no step is annotated.

    The rule of :func:`baglm_nb.core.online_metrics.truth_states` (the later-starting step
    where two share a boundary row).
    """
    return truth_states(video, num_rows)


def top_states(values: np.ndarray) -> np.ndarray:
    """The most probable state per row (T,) of (T, K+1) beliefs or scores (K = none)."""
    return np.asarray(values).argmax(axis=1)


def right_wrong(video: Video, states: np.ndarray) -> np.ndarray:
    """Per row, 1 when ``states`` names a step annotated at that second, or none where no step
    is annotated; else 0."""
    top = np.asarray(states, dtype=np.int64)
    y = ground_truth(video, len(top))
    k = video.num_steps
    annotated = y[:, :k].any(axis=1)
    on_step = y[np.arange(len(top)), np.minimum(top, k)] & (top < k)
    return np.where(annotated, on_step, top == k).astype(np.int64)


def annotated_intervals(video: Video, num_rows: int) -> list[tuple[int, float, float]]:
    """The annotation's ``(step, start s, end s)`` intervals, clipped to ``[0, num_rows]``."""
    out = []
    for seg in video.segments:
        start, end = max(seg.start, 0.0), min(seg.end, float(num_rows))
        if end > start:
            out.append((seg.step_index, float(start), float(end)))
    return out


def peak_hits(video: Video, values: np.ndarray) -> dict[int, tuple[int, bool]]:
    """Each evaluable step's highest row and whether it is an R@1 hit: ``{step: (row, hit)}``.

    The rule of :func:`~baglm_nb.core.evaluation.video_hits` (earliest row on ties).
    """
    v = np.asarray(values)
    steps, hits = video_hits(video, v)
    best = v[:, steps].argmax(axis=0) if len(steps) else []
    return {int(s): (int(b), bool(h)) for s, b, h in zip(steps, best, hits, strict=True)}


def announced_status(video: Video, states: np.ndarray) -> dict[int, str]:
    """Per step: ``"hit"`` (announced inside its annotation), ``"missed"`` (annotated, never
    announced inside it), ``"false"`` (announced, not annotated) or ``"-"`` (neither).

    ``states`` (T,) is the announced state per row (K for none or nothing announced yet).
    """
    said = np.asarray(states, dtype=np.int64)
    y = ground_truth(video, len(said))
    out = {}
    for step in range(video.num_steps):
        if y[:, step].any():
            out[step] = "hit" if ((said == step) & y[:, step]).any() else "missed"
        else:
            out[step] = "false" if (said == step).any() else "-"
    return out


def keyframe_times(baglm: np.ndarray, off_the_shelf: np.ndarray, n: int = 4) -> list[float]:
    """``n`` times (s) worth a keyframe: where BaGLM's top step differs from the LMM's.

    Rows where the two argmaxes disagree are split into ``n`` equal chunks and each chunk's
    middle row is taken; with fewer disagreeing rows than ``n`` (or none), evenly spaced
    times fill up. Returns sorted times at row centres (``row + 0.5``).
    """
    t = np.shape(baglm)[0]
    if t == 0 or n < 1:
        return []
    differ = np.flatnonzero(np.argmax(baglm, axis=1) != np.argmax(off_the_shelf, axis=1))
    rows: list[int] = []
    if len(differ):
        rows = [int(c[len(c) // 2]) for c in np.array_split(differ, min(n, len(differ)))]
    even = [int((i + 0.5) * t / n) for i in range(n)]
    for r in even:
        if len(rows) >= n:
            break
        if all(abs(r - q) > t / (2 * n) for q in rows):
            rows.append(r)
    return sorted(r + 0.5 for r in rows[:n])
