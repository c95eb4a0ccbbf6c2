"""Temporally correlated noise for the simulation: :func:`ar1`, i.i.d. N(0, 1) draws made a
stationary AR(1) along their first axis (``noise_corr`` of :mod:`baglm_nb.core.simulate`).

The recursion runs in a numba kernel (:func:`_ar1_rows`) whose arithmetic is that of
``scipy.signal.lfilter`` on the same filter, operation for operation, so the simulated numbers
are the floats lfilter gave, bit for bit, without importing ``scipy.signal`` (and
``scipy.stats`` under it) in every process that simulates.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["ar1"]


def ar1(x: np.ndarray, corr: float) -> np.ndarray:
    """``x`` (S, ...) of i.i.d. N(0, 1) draws made a stationary AR(1) along axis 0.

    ``y[0] = x[0]``, ``y[s] = corr * y[s-1] + sqrt(1 - corr^2) * x[s]``: each ``y[s]`` is
    N(0, 1) and the lag-1 autocorrelation is ``corr``. ``corr = 0`` returns ``x`` itself.
    Computed by :func:`_ar1_rows`, operation for operation what
    ``scipy.signal.lfilter([gain], [1, -corr], x, axis=0, zi=(1 - gain) * x[:1])`` computes
    (the same floats, bit for bit).
    """
    if corr == 0 or len(x) == 0:
        return x
    gain = np.sqrt(1.0 - corr * corr)
    x = np.asarray(x, dtype=np.float64)
    rows = np.ascontiguousarray(x.reshape(len(x), -1))
    return _ar1_rows(rows, float(corr), float(gain)).reshape(x.shape)


@numba.njit(cache=True, nogil=True)
def _ar1_rows(x, corr, gain):  # pragma: no cover - compiled
    """:func:`ar1` of a 2-D ``x``, down its rows: ``y[0] = (1 - gain) x[0] + gain x[0]``,
    ``y[s] = corr y[s-1] + gain x[s]``, each product and sum rounded on its own (no fused
    multiply-add), as lfilter's direct form II transposed does it."""
    y = np.empty_like(x)
    first = 1.0 - gain
    for j in range(x.shape[1]):
        y[0, j] = first * x[0, j] + gain * x[0, j]
    for s in range(1, x.shape[0]):
        for j in range(x.shape[1]):
            y[s, j] = corr * y[s - 1, j] + gain * x[s, j]
    return y
