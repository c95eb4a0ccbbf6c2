"""Oracle inputs from the ground truth (the paper's Tab. "oracle").

- Oracle dependency matrix: a chain in each video's ground-truth step order, ``D[b, a] = 1``
  when step ``a``'s first occurrence comes right before step ``b``'s. Like the paper says, this
  reflects the observed order of one video, not a semantic constraint.
- Oracle progress: the normalised fraction of completion between a step's annotated start and
  end, encoded as digit probabilities whose expected value ``sum_j j p_j / 9`` equals it.
"""

from __future__ import annotations

import math

import numpy as np

from baglm_nb.inputs.datasets import Video
from baglm_nb.inputs.grid import first_starts

__all__ = ["digits_for", "ground_truth_order", "oracle_dependency", "oracle_progress"]


def ground_truth_order(video: Video) -> list[int]:
    """Step columns in order of their first annotated start (ties: earlier column first)."""
    return list(first_starts(video))


def oracle_dependency(video: Video) -> np.ndarray:
    """The (K, K) chain ``D[i, j] = 1`` iff step j is step i's predecessor in the video.

    Steps that do not occur in the video have all-zero rows and columns.
    """
    d = np.zeros((video.num_steps, video.num_steps))
    order = ground_truth_order(video)
    for before, after in zip(order, order[1:], strict=False):
        d[after, before] = 1.0
    return d


def digits_for(fraction: np.ndarray) -> np.ndarray:
    """Digit probabilities (..., 10) whose expected value ``sum_j j p_j / 9`` is ``fraction``.

    The mass is split linearly between the two digits around ``9 * fraction``.
    """
    x = 9.0 * np.clip(np.asarray(fraction, dtype=np.float64), 0.0, 1.0)
    lo = np.floor(x).astype(int)
    hi = np.minimum(lo + 1, 9)
    w = x - lo
    out = np.zeros(x.shape + (10,))
    np.put_along_axis(out, lo[..., None], (1.0 - w)[..., None], axis=-1)
    hi_mass = np.take_along_axis(out, hi[..., None], axis=-1) + w[..., None]
    np.put_along_axis(out, hi[..., None], hi_mass, axis=-1)
    return out


def oracle_progress(video: Video, num_rows: int) -> np.ndarray:
    """Oracle progress digits, shape (T, K, 10), on the per-second grid of :func:`ground_truth`.

    For row t inside an annotated interval of step k (rows ``floor(start)`` to ``ceil(end)``,
    as in the ground truth) the progress is ``(t + 0.5 - start) / (end - start)`` clipped to
    [0, 1]; everywhere else it is 0 (the digit "0": the action is not present).
    """
    fraction = np.zeros((num_rows, video.num_steps))
    rows = np.arange(num_rows) + 0.5
    for seg in video.segments:
        lo, hi = math.floor(seg.start), min(math.ceil(seg.end) + 1, num_rows)
        if lo >= hi:
            continue
        length = max(seg.end - seg.start, 1e-9)
        frac = np.clip((rows[lo:hi] - seg.start) / length, 0.0, 1.0)
        fraction[lo:hi, seg.step_index] = np.maximum(fraction[lo:hi, seg.step_index], frac)
    return digits_for(fraction)
