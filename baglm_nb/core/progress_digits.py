"""The simulation's progress digits: discretised Gaussians over the digits 0..9
(:mod:`baglm_nb.core.simulate`, step 4 of its generative model).

:func:`digits` is a softmax of ``-0.5 ((digit - centre) / width)^2`` over the ten digits, in two
numba kernels around numpy's ``exp`` (see the comment above them for why its floats are those
of the numpy softmax, bit for bit).

Exports :func:`digits`.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["digits"]


def digits(centre: np.ndarray, width: float) -> np.ndarray:
    """Discretised Gaussians over the digits 0..9 (..., 10) centred at ``centre`` (digits).

    ``width = 0`` (or an infinite centre) puts all mass on the digit nearest the centre,
    clipped to 0..9.
    """
    finite = np.isfinite(centre)
    every = bool(finite.all())
    if width <= 0 or not every:
        point = np.zeros(centre.shape + (10,))
        nearest = np.clip(np.nan_to_num(np.rint(centre), posinf=9, neginf=0), 0, 9).astype(int)
        np.put_along_axis(point, nearest[..., None], 1.0, axis=-1)
        if width <= 0:
            return point
    safe = centre if every else np.where(finite, centre, 0.0)
    flat = np.ascontiguousarray(safe, dtype=np.float64).reshape(-1)
    z = _digit_logits(flat, float(width))  # -0.5 ((digit - centre) / width)^2 - its row max
    np.exp(z, out=z)  # numpy's exp, as the numpy softmax takes it
    _normalise_digits(z)
    dist = z.reshape(safe.shape + (10,))
    return dist if every else np.where(finite[..., None], dist, point)


# The two kernels around the exp of :func:`digits` give the floats of the numpy softmax
# (``z -= z.max(-1)``, ``np.exp``, ``z /= z.sum(-1)``) of ``-0.5 ((digits - centre) / width)^2``
# on the digit-last layout, bit for bit, in one pass each instead of nine numpy passes (a
# reduction along a 10-long last axis costs numpy more per row than the exp): every element
# gets the same operations in the same order (no fused multiply-add, no reassociation), the row
# maximum does not depend on the order, and the row sum adds the ten values in the order of
# numpy's pairwise summation of 10 values.


@numba.njit(cache=True, nogil=True)
def _digit_logits(centre, width):  # pragma: no cover - compiled
    """(N, 10): ``-0.5 ((j - centre) / width)^2`` for j = 0..9, minus each row's maximum."""
    z = np.empty((centre.shape[0], 10))
    for i in range(centre.shape[0]):
        top = -np.inf
        for j in range(10):
            v = (j - centre[i]) / width
            v = v * v
            v = v * -0.5
            z[i, j] = v
            if v > top:
                top = v
        for j in range(10):
            z[i, j] = z[i, j] - top
    return z


@numba.njit(cache=True, nogil=True)
def _normalise_digits(z):  # pragma: no cover - compiled
    """Each row of ``z`` (N, 10) divided by its sum, in place; the sum in numpy's pairwise order
    for 10 values: eight partial sums paired ``((0+1)+(2+3))+((4+5)+(6+7))``, then 8, then 9."""
    for i in range(z.shape[0]):
        total = ((z[i, 0] + z[i, 1]) + (z[i, 2] + z[i, 3])) + (
            (z[i, 4] + z[i, 5]) + (z[i, 6] + z[i, 7])
        )
        total = total + z[i, 8]
        total = total + z[i, 9]
        for j in range(10):
            z[i, j] = z[i, j] / total
