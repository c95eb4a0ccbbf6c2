"""What the simulation reads of an annotated video: the true state and the fraction of
completion of each segment, and each step's neighbours in the ground-truth order.

Steps 1 and 2 and the confusion neighbours of the generative model of
:mod:`baglm_nb.core.simulate` (its module docstring defines them). They depend on the
annotation and the grid alone, never on the simulation's parameters, so every simulation of a
video (either twin, every point of a calibration) shares them: :func:`segment_truth` keeps its
read-only arrays per video and grid.

Exports :func:`segment_truth` and :func:`neighbours`.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from baglm_nb.inputs import grid
from baglm_nb.inputs.datasets import Video
from baglm_nb.inputs.grid import ground_truth
from baglm_nb.inputs.variants import SAMPLING_FPS, SEGMENT_DURATION

__all__ = ["neighbours", "segment_truth"]


def segment_truth(
    video: Video, segment_duration: int = SEGMENT_DURATION, sampling_fps: float = SAMPLING_FPS
) -> tuple[np.ndarray, np.ndarray]:
    """True state and fraction of completion per segment (read-only arrays, computed once per
    video and grid: every simulation of the video, of any twin or parameters, shares them).

    Parameters
    ----------
    video : Video
        The annotated video.
    segment_duration, sampling_fps
        Segment length in seconds and sampling rate (they fix S and T).

    Returns
    -------
    truth : (S,) int array
        Step column with the most marked ground-truth rows (lowest column on ties), ``K`` if none.
    fraction : (S,) float64 array
        ``clip((c - start) / (end - start), 0, 1)`` at the segment centre ``c`` for the true
        step's interval containing (else nearest to) ``c``; NaN for none segments.
    """
    d, fps = int(segment_duration), float(sampling_fps)
    try:
        return _segment_truth(video, d, fps)
    except TypeError:  # an unhashable video (e.g. segments in a list): not kept
        truth, fraction = _truth_and_fraction(video, d, fps)
        truth.setflags(write=False)
        fraction.setflags(write=False)
        return truth, fraction


@lru_cache(maxsize=8192)
def _segment_truth(video: Video, d: int, sampling_fps: float) -> tuple[np.ndarray, np.ndarray]:
    truth, fraction = _truth_and_fraction(video, d, sampling_fps)
    truth.setflags(write=False)
    fraction.setflags(write=False)
    return truth, fraction


def _truth_and_fraction(video: Video, d: int, sampling_fps: float) -> tuple[np.ndarray, np.ndarray]:
    k = video.num_steps
    t_rows = video.num_rows(d, sampling_fps)
    s_len = t_rows // d
    y = ground_truth(video, t_rows)[:, :k].reshape(s_len, d, k).sum(axis=1)
    truth = np.where(y.any(axis=1), y.argmax(axis=1), k)
    fraction = np.full(s_len, np.nan)
    is_step = truth < k
    if not is_step.any():
        return truth, fraction
    starts = np.array([seg.start for seg in video.segments])
    ends = np.array([seg.end for seg in video.segments])
    steps = np.array([seg.step_index for seg in video.segments])
    centre = (np.flatnonzero(is_step) + 0.5) * d
    dist = np.maximum(np.maximum(starts - centre[:, None], centre[:, None] - ends), 0.0)
    dist[steps[None, :] != truth[is_step][:, None]] = np.inf
    j = dist.argmin(axis=1)
    a, b = starts[j], ends[j]
    length = b - a
    frac = np.divide(centre - a, length, out=np.zeros_like(centre), where=length > 0)
    frac = np.where(length > 0, frac, (centre >= a).astype(np.float64))
    fraction[is_step] = np.clip(frac, 0.0, 1.0)
    return truth, fraction


def neighbours(video: Video) -> np.ndarray:
    """(K, K) bool: ``N[a, b]`` when b is just before or after a in the first-occurrence order."""
    k = video.num_steps
    order = list(grid.first_starts(video))
    n = np.zeros((k, k), dtype=bool)
    for prev, nxt in zip(order[:-1], order[1:], strict=True):
        n[prev, nxt] = n[nxt, prev] = True
    return n
