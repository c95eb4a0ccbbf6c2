"""The scale-normalised Laplacian-of-Gaussian response of an alignment matrix, along time.

``R_s(t, k) = -s^2 * LoG_s(A[:, k])(t)`` for every step column ``k`` and scale ``s`` (Gaussian
standard deviation in rows): scipy's ``gaussian_laplace`` along time only, negated so that a
bump of probability is a maximum. ``method="fast"`` (default) applies scipy's exact taps with
one real FFT per video (``mode="constant"``, zeros outside the video) or in the DCT-II basis
(``mode="reflect"``); ``method="direct"`` calls ``gaussian_laplace`` per scale. Why these
choices, and what they measured: ``docs/design/localization.md``.

Exports :data:`MODES`, :data:`DEFAULT_MODE`, :data:`DEFAULT_SCALES` (13 scales, geometric from
1 to 480 rows), :func:`log_scales` and :func:`log_response`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from scipy import fft as sfft
from scipy import ndimage

__all__ = ["DEFAULT_MODE", "DEFAULT_SCALES", "MODES", "log_response", "log_scales"]

#: Boundary handling of the LoG filter: "constant" (zeros outside the video) or "reflect".
MODES: tuple[str, ...] = ("constant", "reflect")
DEFAULT_MODE = "constant"


def log_scales(
    min_sigma: float = 1.0, max_sigma: float = 480.0, num: int = 13, log_scale: bool = True
) -> np.ndarray:
    """The scale grid: ``num`` Gaussian standard deviations (rows) from ``min_sigma`` to
    ``max_sigma``, geometric (default) or linear (``log_scale=False``, scikit-image's default)."""
    if not 0 < min_sigma <= max_sigma or num < 1:
        raise ValueError(
            f"need 0 < min_sigma <= max_sigma and num >= 1, got {min_sigma}, {max_sigma}, {num}"
        )
    if log_scale:
        return np.geomspace(min_sigma, max_sigma, num)
    return np.linspace(min_sigma, max_sigma, num)


#: 13 scales, geometric from 1 to 480 rows (ratio 1.673 between neighbours).
DEFAULT_SCALES: np.ndarray = log_scales()
DEFAULT_SCALES.setflags(write=False)


@lru_cache(maxsize=64)
def _log_kernel(sigma: float) -> np.ndarray:
    """scipy's sampled LoG taps for ``sigma`` (length 2r + 1, r = int(4 sigma + 0.5)).

    Read off ``gaussian_laplace`` as its response to a unit impulse (mode constant), so the fast
    path uses exactly the weights of the direct one.
    """
    radius = int(4.0 * sigma + 0.5)
    impulse = np.zeros(2 * radius + 1)
    impulse[radius] = 1.0
    taps = ndimage.gaussian_laplace(impulse, sigma, mode="constant")
    taps.setflags(write=False)
    return taps


@lru_cache(maxsize=512)
def _dct_multipliers(rows: int, scales: tuple[float, ...]) -> np.ndarray:
    """(S, rows) DCT-II multipliers of ``-s^2 * kernel`` folded onto the period 2 * rows."""
    period = 2 * rows
    out = np.empty((len(scales), rows))
    for i, s in enumerate(scales):
        taps = _log_kernel(s)
        radius = (len(taps) - 1) // 2
        folded = np.bincount(
            (np.arange(len(taps)) - radius) % period, weights=taps, minlength=period
        )
        # an even kernel has a real spectrum; its first ``rows`` bins act on the DCT-II terms
        out[i] = -(s**2) * np.fft.rfft(folded)[:rows].real
    out.setflags(write=False)
    return out


def _fft_length(rows: int, scales: tuple[float, ...]) -> int:
    reach = min(int(4.0 * scales[-1] + 0.5), rows - 1)
    return sfft.next_fast_len(rows + reach, real=True)


@lru_cache(maxsize=512)
def _fft_multipliers(rows: int, scales: tuple[float, ...]) -> np.ndarray:
    """(S, n // 2 + 1) spectra of ``-s^2 * kernel`` cropped to +-(rows - 1), circular length n."""
    n = _fft_length(rows, scales)
    out = np.empty((len(scales), n // 2 + 1))
    for i, s in enumerate(scales):
        taps = _log_kernel(s)
        radius = (len(taps) - 1) // 2
        reach = min(radius, rows - 1)  # taps further out only ever meet the zero padding
        circ = np.zeros(n)
        circ[: reach + 1] = taps[radius : radius + reach + 1]
        if reach:
            circ[n - reach :] = taps[radius - reach : radius]
        out[i] = -(s**2) * np.fft.rfft(circ).real
    out.setflags(write=False)
    return out


def _gaussian_laplace_time(a: np.ndarray, sigma: float, mode: str) -> np.ndarray:
    try:
        return ndimage.gaussian_laplace(a, sigma, mode=mode, cval=0.0, axes=(0,))
    except TypeError:  # scipy < 1.15 has no ``axes``: the same 1-D kernel per column
        return ndimage.gaussian_filter1d(a, sigma, axis=0, order=2, mode=mode, cval=0.0)


def _responses(a: np.ndarray, scales: np.ndarray, method: str, mode: str) -> np.ndarray:
    """Responses laid out (K, S, T), contiguous along time."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    rows, k = a.shape
    if rows == 0 or k == 0:
        return np.zeros((k, len(scales), rows))
    key = tuple(float(s) for s in scales)
    if method == "fast" and mode == "reflect":
        coeffs = sfft.dct(np.ascontiguousarray(a.T), type=2, axis=1)  # (K, T)
        return sfft.idct(coeffs[:, None, :] * _dct_multipliers(rows, key)[None], type=2, axis=2)
    if method == "fast":
        n = _fft_length(rows, key)
        spectrum = sfft.rfft(np.ascontiguousarray(a.T), n=n, axis=1)  # (K, n // 2 + 1)
        out = sfft.irfft(spectrum[:, None, :] * _fft_multipliers(rows, key)[None], n=n, axis=2)
        return np.ascontiguousarray(out[:, :, :rows])
    if method == "direct":
        out = np.stack([_gaussian_laplace_time(a, s, mode) for s in scales])  # (S, T, K)
        out *= -(scales**2)[:, None, None]
        return np.ascontiguousarray(out.transpose(2, 0, 1))
    raise ValueError(f"method must be 'fast' or 'direct', got {method!r}")


def log_response(
    alignment: np.ndarray,
    scales: Sequence[float] | None = None,
    method: str = "fast",
    mode: str = DEFAULT_MODE,
) -> np.ndarray:
    """Scale-normalised LoG responses ``-s^2 LoG_s`` along time, shape (S, T, K), float64.

    ``mode``: ``"constant"`` (zeros outside the video, default) or ``"reflect"`` (scipy's and
    scikit-image's default). ``method="direct"`` calls ``scipy.ndimage.gaussian_laplace``
    (``axes=(0,)``) per scale; ``"fast"`` computes the same correlation with FFTs (zero padding)
    or, for ``"reflect"``, in the DCT-II basis (``docs/design/localization.md``).
    """
    a = _as_alignment(alignment)
    return _responses(a, _scales(scales), method, mode).transpose(1, 2, 0)


def _as_alignment(alignment) -> np.ndarray:
    a = np.asarray(alignment, dtype=np.float64)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2:
        raise ValueError(f"alignment must be (T, K) (or 1-D), got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError("alignment has non-finite values")
    return a


def _scales(scales) -> np.ndarray:
    s = DEFAULT_SCALES if scales is None else np.asarray(scales, dtype=np.float64).ravel()
    if s.size == 0 or not (s > 0).all() or (np.diff(s) <= 0).any():
        raise ValueError("scales must be positive and strictly increasing")
    return s
