"""Step localization: LoG blob detection on an alignment matrix, HT-Step mAP, Ego4D windowed R@1.

The paper's appendix (Tab. htstep_localization, Tab. off_the_shelf_vs_baglm_localization) turns
the (T, K) alignment matrix (BaGLM's beliefs without the none column, or an LMM's raw scores)
into temporal step segments with 1-D Laplacian-of-Gaussian blob detection at 13 scales, Gaussian
standard deviations from 1 to 480 rows, after VINA (Mavroudi et al., ICCV 2023), and scores each
segment by the mean step probability inside it. VINA published no code, so every choice below is
ours and documented; :data:`DETECTION_CHOICES` lists them in one place.

Blob detection (:func:`detect_segments`)
----------------------------------------
* **Response.** ``R_s(t, k) = -s^2 * LoG_s(A[:, k])(t)``: scipy's ``gaussian_laplace`` along
  time only (``axes=(0,)``; kernel truncated at 4 sigma), scale-normalised by ``s^2`` and negated
  so that *bright* blobs (a bump of probability) are maxima. Note that
  ``gaussian_laplace(A, sigma=(s, 0))`` is *not* the 1-D LoG of every column: scipy still adds
  the second-derivative term of the sigma-0 axis, which degenerates to the smoothed signal
  ``G_s * A`` (checked in the tests), so the time axis is selected with ``axes``.
* **Video ends** (``mode``). Default ``"constant"``: zeros outside the video (no step happens
  there). scipy's and scikit-image's default ``"reflect"`` mirrors the video at both ends, so a
  box within about two sigmas of an end has a mirrored twin that bends the neighbouring scales'
  responses (sigma up to ~8% low, extra edge blobs, one large weak blob spanning box and twin;
  tests). On the ground-truth grid of HT-Step as the alignment (below), mean mAP is 72.9 with
  ``"constant"`` and 70.5 with ``"reflect"``. A box touching an end is recovered in both modes.
  A step whose probability never drops inside the video is one whole-video segment with
  ``"constant"`` and no segment with ``"reflect"``.
* **Fast path** (``method="fast"``, the default). The kernel radius ``4 s`` reaches 1920 rows at
  ``s = 480`` while an HT-Step video has 381 rows on average, so the direct correlation spends
  most of its time in the padding (27.7 s for HT-Step at 13 scales). With ``"constant"`` only
  taps within ``T - 1`` rows can meet the video, so the kernel is cropped there and applied by
  one zero-padded real FFT per video (length >= 2T - 1); with ``"reflect"`` the extension is even
  and 2T-periodic and the kernel even, so the correlation is diagonal in the DCT-II basis,
  ``idct(dct(x) * H)``, ``H`` the first T bins of the kernel's spectrum folded modulo 2T. The taps
  are read off ``gaussian_laplace`` itself (its response to a unit impulse), so the paths share
  scipy's exact weights and agree with ``method="direct"`` (``gaussian_laplace`` per scale) to
  ~1e-16 (tests).
* **Scales.** ``DEFAULT_SCALES = geomspace(1, 480, 13)`` (ratio 1.673 between neighbours):
  1, 1.67, 2.80, 4.68, 7.83, 13.1, 21.9, 36.7, 61.3, 103, 172, 287, 480 rows. The paper says "13
  scales, standard deviations from 1 to 480" without the spacing. Geometric spacing samples scale
  space uniformly in ``log s`` (Lindeberg); a linear grid (scikit-image's default) would leave
  only ``s = 1`` below 41 rows, while HT-Step's annotated steps last 16 s on average (median
  7.7 s), i.e. half-widths of 4-8 rows. Pass ``scales=log_scales(log_scale=False)`` for the grid.
* **Non-maximum suppression, 1: local maxima.** A candidate is a local maximum of ``R`` in its
  3x3 (scale, time) neighbourhood within its step column (edges replicated, ties kept: scipy's
  ``maximum_filter(size=3, mode="nearest")``, done with shifted ``np.maximum``), exactly
  scikit-image's ``blob_log`` peak rule (``peak_local_max``, 3x3 footprint,
  ``exclude_border=False``); columns with a constant response give no blob, as there. The tests
  check :func:`find_blobs` (``mode="reflect", refine=False``) against
  ``blob_log(x, 1, 480, 13, log_scale=True, overlap=1)`` on the same signals: identical blobs.
* **Threshold.** ``R > threshold`` with ``DEFAULT_THRESHOLD = 0.05``. A box of height h on a
  flat background peaks at ``2 / sqrt(2 pi) * exp(-1/2) * h = 0.484 h`` at its matched scale, so
  0.05 keeps bumps of about 0.1 probability and drops ripples; scikit-image's default 0.2
  (h ~ 0.4) drops most of an LMM's raw scores. Lower thresholds add low-ranked segments and raise
  mAP a little (simulated HT-Step, off-the-shelf / BaGLM mean mAP: 4.5 / 3.9 at 0.01 with 1.6x
  the segments, 4.3 / 3.6 at 0.05, 3.1 / 3.0 at 0.1, 1.3 / 1.5 at 0.2).
* **Non-maximum suppression, 2: across scales.** A step edge has a scale-invariant normalised
  response (``0.242 h`` at every ``s``), so the inside edges of a wide box leave a ridge of
  local maxima, one per scale, all scored like the box (the mean probability inside is the
  same). Blobs are therefore visited by decreasing response per step, and a blob is dropped when
  more than ``overlap`` (``DEFAULT_OVERLAP = 0.5``) of its own span lies inside a stronger kept
  blob of the same step (scikit-image's ``blob_log`` also prunes overlapping blobs, but keeps the
  larger one, and its 1-D overlap is a 3-D sphere formula). With HT-Step's ground-truth grid
  (``video.ground_truth()``, rows ``floor(start)..ceil(end)``) as the alignment, mAP@0.3 / mean
  is 48.6 / 37.6 without this step, 69.7 / 57.2 keeping the larger blob and 88.6 / 72.9 keeping
  the stronger (the rest of the gap is the grid's floor/ceil widening of short steps and repeats
  of a step that touch). ``overlap=None`` keeps every local maximum. ``top_n`` optionally keeps
  the n best-scored segments per step.
* **Plateaus.** Per-second rows repeat each 2-s segment's scores, so a response can be exactly
  (or, after rounding, nearly) equal at two neighbouring rows. A peak whose neighbour at the same
  scale is within 1e-9 (relative) is moved half a row towards it, and identical blobs are merged,
  so an even-width box gives one blob at its true centre whichever way rounding went.
* **Scale -> segment.** A blob of scale ``s`` at row ``t`` becomes rows ``[t + 1/2 - k s,
  t + 1/2 + k s]`` with :data:`SIGMA_TO_HALF_WIDTH` ``k = 1`` (row ``i`` covers
  ``[i, i + 1)``, so ``t + 1/2`` is the row's centre), clipped to ``[0, T]`` and divided by
  ``fps_rows`` to give seconds. Why ``k = 1``: for a box of half-width ``w`` the normalised
  response at its centre is ``2 w / (sqrt(2 pi) s) * exp(-w^2 / (2 s^2))``, maximal at
  ``s = w``; numerically, with scipy's sampled kernels, the arg-max over a fine grid of ``s`` for
  boxes of n = 4, 8, 10, 16, 20, 31, 40, 64, 100, 200 rows is ``s / (n/2)`` = 1.023, 1.006, 1.005,
  1.003, 1.002, 1.001, 1.002, 1.000, 1.000, 1.000 (peak response 0.464-0.484, theory 0.4839).
* **Sub-scale refinement** (``refine=True``, default). With only 13 scales the matched ``s`` of a
  box between two grid values would be off by up to 25%. Under the same box model,
  ``log R + log s = c - (w^2 / 2) / s^2`` is linear in ``1 / s^2``, so a least-squares line
  through the peak scale and its neighbours (those with ``R > 0``) gives ``w``; it is clipped to
  the neighbouring grid scales and falls back to the grid scale at the ends of the grid or when
  the fit is not concave. Exact for boxes (all widths recovered within one row in the tests); a
  parabola in ``log s`` was off by up to 8% for wide boxes. ``refine=False`` keeps grid scales
  (what ``blob_log`` reports); on the ground-truth grid it lowers mean mAP from 72.9 to 61.3.
* **Confidence** = the mean of ``A[i, k]`` over the rows whose centres lie in the segment, as the
  paper says (a prefix sum per column).

HT-Step article-grounding mAP (:func:`article_grounding_map`)
-------------------------------------------------------------
As HT-Step's official ``eval_article_grounding.py`` does it (ActivityNet/ActionFormer detection
AP): ground truth from the annotation, dropping segments shorter than 1e-3 s and duplicates (same
step and start/end within 1e-3 s of an earlier kept one); predictions whose step is not in the
video's step list are dropped (the official script keeps steps of the video's (activity,
variation) that occur in the split's ground truth; we know a step's ``global_step_index`` only
from the annotation, so "the video's step list" is its step texts that carry an id somewhere in
the dataset, which is the same set); predictions are grouped by activity (``video.task``) and
ranked by score (ties: later input row first, as the official reversed ``argsort``); each, in
turn, matches the not-yet-matched ground-truth segment **of the same video** with the highest tIoU
if that tIoU >= the threshold (ties: the later ground truth), else it is a false positive; AP is
VOC-2011 interpolated (precision made monotone from the right, area under the envelope, recall
over the activity's ground-truth count); mAP is the unweighted mean over the activities that have
ground truth, in percent, at tIoU 0.3 ... 0.7; ``mean`` averages the five thresholds (the paper's
@[0.3-0.7]: NaSVA 13.7/6.0/1.4 at 0.3/0.5/0.7 and 6.7 mean, only consistent with five).

**Label-agnostic matching (default).** The official AP is computed per *activity group* with the
step label dropped: a correctly timed segment predicted for the wrong step of the same activity
still matches ("each step as a class-agnostic text query", the paper says). This reproduces the
paper's protocol. ``match_labels=True`` is a stricter variant that only matches ground truth of the
same ``global_step_index`` (everything else identical).

The matcher runs per video (locks are per ground-truth segment, so videos are independent) in a
numba kernel; the tests compare it with a literal transcription of the official loop.

Ego4D Goal-Step windowed recall (:func:`windowed_recall`)
---------------------------------------------------------
An optional comparison beside the point-wise R@1 the paper reports: the top-1 window per (video,
step) is the step's highest-confidence detected segment; with the Ego4D NLQ convention a query is
a hit when ``IoU > threshold`` (strictly). ``unit="query"`` (default, NLQ) counts every annotated
segment as a query answered by its step's top-1 window; ``unit="pair"`` counts (video, step)
pairs, a hit when the window overlaps any of the step's segments enough (the point-wise R@1's
unit).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

import numba
import numpy as np
import pandas as pd
from scipy import fft as sfft
from scipy import ndimage

from baglm_nb.analyses.paper import PAPER_LOCALIZATION, paper_model
from baglm_nb.inputs.datasets import AnnotationError, Video, load_dataset

__all__ = [
    "DEFAULT_MODE",
    "DEFAULT_OVERLAP",
    "DEFAULT_SCALES",
    "DEFAULT_THRESHOLD",
    "DETECTION_CHOICES",
    "METRIC_NAMES",
    "MODES",
    "SIGMA_TO_HALF_WIDTH",
    "TIOU_THRESHOLDS",
    "article_grounding_ap",
    "article_grounding_map",
    "column_step_ids",
    "detect_segments",
    "find_blobs",
    "interpolated_ap",
    "localization_table",
    "localize",
    "log_response",
    "log_scales",
    "windowed_recall",
    "windowed_recall_table",
]


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


#: 13 scales, geometric from 1 to 480 rows (module docstring).
DEFAULT_SCALES: np.ndarray = log_scales()
DEFAULT_SCALES.setflags(write=False)
#: Detection threshold on the scale-normalised response (a box of height h peaks at 0.484 h).
DEFAULT_THRESHOLD = 0.05
#: A blob of scale s spans [centre - k s, centre + k s]; k = 1 (box of half-width w peaks at s = w).
SIGMA_TO_HALF_WIDTH = 1.0
#: tIoU thresholds of HT-Step's article-grounding mAP.
TIOU_THRESHOLDS: tuple[float, ...] = (0.3, 0.4, 0.5, 0.6, 0.7)
#: Column names of the paper's localization tables (the mean is over all five thresholds).
METRIC_NAMES: tuple[str, ...] = ("@0.3", "@0.5", "@0.7", "@[0.3-0.7]")
#: Cross-scale suppression: a blob with more than this fraction of its span inside a stronger
#: kept blob of the same step is dropped (None: keep every local maximum).
DEFAULT_OVERLAP: float | None = 0.5
#: Boundary handling of the LoG filter: "constant" (zeros outside the video) or "reflect".
MODES: tuple[str, ...] = ("constant", "reflect")
DEFAULT_MODE = "constant"
_PLATEAU_RTOL = 1e-9

#: Every detection choice, for tables and reports.
DETECTION_CHOICES: dict[str, str] = {
    "filter": "scipy.ndimage.gaussian_laplace along time (axes=(0,)), truncate 4; response "
    "-sigma^2 LoG (bright blobs are maxima); computed with FFTs (or DCT-II for reflect)",
    "ends": "zeros outside the video (mode constant); mode reflect as scikit-image",
    "scales": "13, geometric from 1 to 480 rows (ratio 1.673)",
    "threshold": f"response > {DEFAULT_THRESHOLD} (a box of height h peaks at 0.484 h)",
    "nms": "local maximum in the 3x3 (scale, time) neighbourhood of its step column "
    "(maximum_filter, mode nearest, ties kept, as skimage.feature.blob_log); then, by decreasing "
    "response, a blob with more than half its span inside a stronger kept blob is dropped",
    "plateaus": "near-equal neighbours at the same scale: centre moved half a row, "
    "duplicates merged",
    "segment": "[t + 1/2 - sigma, t + 1/2 + sigma] rows (box of half-width w peaks at sigma = w), "
    "clipped to [0, T], / fps_rows",
    "refine": "sigma refined by a least-squares box-model fit over the neighbouring scales",
    "confidence": "mean step probability over the rows whose centres lie in the segment",
}

# --------------------------------------------------------------------------------------------
# LoG response


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
    or, for ``"reflect"``, in the DCT-II basis (module docstring).
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


# --------------------------------------------------------------------------------------------
# Blobs and segments


def find_blobs(
    alignment: np.ndarray,
    *,
    scales: Sequence[float] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    refine: bool = True,
    method: str = "fast",
    mode: str = DEFAULT_MODE,
) -> dict[str, np.ndarray]:
    """The local maxima (first suppression step only) of every column of ``alignment`` (T, K).

    1-D input is one column. Returns arrays ``step`` (column), ``row`` (centre row, float: a
    plateau's midpoint), ``scale_index``, ``sigma`` (rows; refined unless ``refine=False``) and
    ``response``, sorted by step, scale index, row. With ``mode="reflect", refine=False`` these
    are ``skimage.feature.blob_log(..., overlap=1)``'s blobs.
    """
    a = _as_alignment(alignment)
    scales = _scales(scales)
    return _blobs(_responses(a, scales, method, mode), scales, threshold, refine)


def _local_max_3x3(r: np.ndarray) -> np.ndarray:
    """``maximum_filter(r, size=(1, 3, 3), mode="nearest")`` for (K, S, T), by shifted maxima."""
    m = r.copy()
    np.maximum(m[..., 1:], r[..., :-1], out=m[..., 1:])
    np.maximum(m[..., :-1], r[..., 1:], out=m[..., :-1])
    out = m.copy()
    np.maximum(out[:, 1:], m[:, :-1], out=out[:, 1:])
    np.maximum(out[:, :-1], m[:, 1:], out=out[:, :-1])
    return out


def _blobs(r: np.ndarray, scales: np.ndarray, threshold: float, refine: bool) -> dict:
    """Blobs of responses ``r`` laid out (K, S, T)."""
    _, n_scales, rows = r.shape
    empty = {
        "step": np.zeros(0, np.int64),
        "row": np.zeros(0),
        "scale_index": np.zeros(0, np.int64),
        "sigma": np.zeros(0),
        "response": np.zeros(0),
    }
    if rows == 0 or r.size == 0:
        return empty
    peak = r == _local_max_3x3(r)
    trivial = peak.all(axis=(1, 2))  # a constant response has no blob (peak_local_max)
    peak &= r > threshold
    peak[trivial] = False
    k_idx, s_idx, t_idx = np.nonzero(peak)  # lexicographic (step, scale, row) order
    if k_idx.size == 0:
        return empty
    value = r[k_idx, s_idx, t_idx]
    tol = _PLATEAU_RTOL * np.abs(value)
    left = (t_idx > 0) & (r[k_idx, s_idx, np.maximum(t_idx - 1, 0)] >= value - tol)
    right = (t_idx < rows - 1) & (r[k_idx, s_idx, np.minimum(t_idx + 1, rows - 1)] >= value - tol)
    centre = t_idx + 0.5 * (right.astype(float) - left.astype(float))
    # two tied rows both move to their midpoint: keep one
    keep = np.ones(k_idx.size, dtype=bool)
    same = (k_idx[1:] == k_idx[:-1]) & (s_idx[1:] == s_idx[:-1]) & (centre[1:] == centre[:-1])
    keep[1:] = ~same
    k_idx, s_idx, t_idx, centre, value = (x[keep] for x in (k_idx, s_idx, t_idx, centre, value))
    sigma = scales[s_idx].copy()
    if refine and n_scales >= 3:
        sigma = _refine_sigma(r, scales, s_idx, t_idx, k_idx, sigma)
    return {
        "step": k_idx.astype(np.int64),
        "row": centre,
        "scale_index": s_idx.astype(np.int64),
        "sigma": sigma,
        "response": value,
    }


def _refine_sigma(r, scales, s_idx, t_idx, k_idx, sigma):
    """Least-squares box-model fit ``log R + log s = c - (w^2/2) / s^2`` over scales s-1..s+1."""
    inner = (s_idx > 0) & (s_idx < len(scales) - 1)
    if not inner.any():
        return sigma
    s0, t0, k0 = s_idx[inner], t_idx[inner], k_idx[inner]
    offs = np.array([-1, 0, 1])
    sj = s0[:, None] + offs  # (n, 3)
    rj = r[k0[:, None], sj, t0[:, None]]
    valid = rj > 0
    sig = scales[sj]
    x = -1.0 / sig**2
    y = np.log(np.where(valid, rj, 1.0)) + np.log(sig)
    m = valid.astype(float)
    n = m.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        xm = (m * x).sum(axis=1) / n
        ym = (m * y).sum(axis=1) / n
        sxx = (m * (x - xm[:, None]) ** 2).sum(axis=1)
        sxy = (m * (x - xm[:, None]) * (y - ym[:, None])).sum(axis=1)
        half_w2 = sxy / sxx
    ok = (n >= 2) & (sxx > 0) & (half_w2 > 0)
    w = np.sqrt(2.0 * np.where(ok, half_w2, 1.0))
    w = np.clip(w, scales[s0 - 1], scales[s0 + 1])
    out = sigma.copy()
    out[np.flatnonzero(inner)[ok]] = w[ok]
    return out


@numba.njit(cache=True, nogil=True)
def _prune_kernel(step, lo, hi, overlap):
    """Greedy suppression; blobs arrive sorted by step, then decreasing response."""
    keep = np.ones(step.size, dtype=np.bool_)
    start = 0
    for i in range(step.size):
        if i > 0 and step[i] != step[i - 1]:
            start = i
        length = hi[i] - lo[i]
        for j in range(start, i):
            if not keep[j]:
                continue
            inter = min(hi[i], hi[j]) - max(lo[i], lo[j])
            if inter > overlap * length:
                keep[i] = False
                break
    return keep


def _prune(blobs: dict, overlap: float) -> dict:
    """Drop blobs with more than ``overlap`` of their span inside a stronger kept blob."""
    k, c, s = blobs["step"], blobs["row"], blobs["sigma"] * SIGMA_TO_HALF_WIDTH
    order = np.lexsort((-s, -blobs["response"], k))  # strongest first (ties: larger first)
    keep = _prune_kernel(k[order], (c - s)[order], (c + s)[order], float(overlap))
    chosen = np.sort(order[keep])
    return {key: v[chosen] for key, v in blobs.items()}


def _segments(a: np.ndarray, blobs: dict, fps_rows: float, top_n: int | None) -> dict:
    rows = a.shape[0]
    c, s, k = blobs["row"], blobs["sigma"] * SIGMA_TO_HALF_WIDTH, blobs["step"]
    lo_row = np.clip(c + 0.5 - s, 0.0, rows)
    hi_row = np.clip(c + 0.5 + s, 0.0, rows)
    # rows whose centres i + 1/2 lie in [c + 1/2 - s, c + 1/2 + s]
    first = np.clip(np.ceil(c - s), 0, rows - 1).astype(np.int64)
    last = np.clip(np.floor(c + s), 0, rows - 1).astype(np.int64)
    last = np.maximum(last, first)
    csum = np.zeros((rows + 1, a.shape[1]))
    np.cumsum(a, axis=0, out=csum[1:])
    score = (csum[last + 1, k] - csum[first, k]) / (last - first + 1)
    out = {
        "step": k,
        "t_start": lo_row / fps_rows,
        "t_end": hi_row / fps_rows,
        "score": score,
        "sigma": blobs["sigma"],
        "row": c,
        "response": blobs["response"],
    }
    if top_n is not None and k.size:
        order = np.lexsort((-score, k))
        ranked = {key: v[order] for key, v in out.items()}
        starts = np.r_[0, np.flatnonzero(np.diff(ranked["step"])) + 1]
        rank = np.arange(k.size) - np.repeat(starts, np.diff(np.r_[starts, k.size]))
        out = {key: v[rank < top_n] for key, v in ranked.items()}
    order = np.lexsort((out["t_end"], out["t_start"], out["step"]))
    return {key: v[order] for key, v in out.items()}


_DETECT_DEFAULTS: dict[str, Any] = {
    "threshold": DEFAULT_THRESHOLD,
    "refine": True,
    "top_n": None,
    "method": "fast",
    "mode": DEFAULT_MODE,
    "overlap": DEFAULT_OVERLAP,
}


def _detect(a, fps_rows, scales, threshold, refine, top_n, method, mode, overlap) -> dict:
    if not fps_rows > 0:
        raise ValueError(f"fps_rows must be > 0, got {fps_rows}")
    if top_n is not None and top_n < 1:
        raise ValueError(f"top_n must be >= 1 or None, got {top_n}")
    if overlap is not None and not 0 <= overlap <= 1:
        raise ValueError(f"overlap must be in [0, 1] or None, got {overlap}")
    blobs = _blobs(_responses(a, scales, method, mode), scales, threshold, refine)
    if overlap is not None and overlap < 1:
        blobs = _prune(blobs, overlap)
    return _segments(a, blobs, fps_rows, top_n)


def detect_segments(
    alignment: np.ndarray,
    fps_rows: float = 1.0,
    *,
    scales: Sequence[float] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    refine: bool = True,
    top_n: int | None = None,
    method: str = "fast",
    mode: str = DEFAULT_MODE,
    overlap: float | None = DEFAULT_OVERLAP,
) -> pd.DataFrame:
    """Per-step temporal segments of a (T, K) step-probability matrix.

    ``alignment``: beliefs without the none column, or raw scores; 1-D input is one step.
    ``fps_rows``: rows per second (1 for the per-second rows of the published layout).
    Returns one row per segment: ``step`` (column), ``t_start``, ``t_end`` (seconds, clipped to
    the video), ``score`` (mean probability inside), ``sigma`` (rows), ``row`` (centre row) and
    ``response``, ordered by step and start. The choices are in the module docstring.
    """
    a = _as_alignment(alignment)
    opts = {"threshold": threshold, "refine": refine, "top_n": top_n, "method": method,
            "mode": mode, "overlap": overlap}  # fmt: skip
    return pd.DataFrame(_detect(a, fps_rows, _scales(scales), **opts))


# --------------------------------------------------------------------------------------------
# Step ids and predictions for a dataset


def _step_id_map(videos: Iterable[Video]) -> dict[tuple[str, str], str]:
    """(group, step text) -> step id, from the annotated segments."""
    out: dict[tuple[str, str], str] = {}
    for v in videos:
        for seg in v.segments:
            if seg.step_id is not None:
                out[(v.group, seg.step)] = seg.step_id
    return out


def column_step_ids(
    video: Video, catalog: Iterable[Video] | Mapping | None = None
) -> list[str | None]:
    """The step id (HT-Step ``global_step_index`` as str) of every step column of ``video``.

    A step's id is known only where some video of the same (activity, variation) annotates it;
    ``catalog`` is the videos to learn from (default: the video's whole dataset, plus the video
    itself). Unknown steps, and the earlier copies of a duplicated step text (the ground truth
    goes to the last one), get ``None``.
    """
    if isinstance(catalog, Mapping):
        known = catalog
    else:
        known = _step_id_map(_catalog(video.dataset, catalog, [video]))
    last = {text: i for i, text in enumerate(video.steps)}
    return [
        known.get((video.group, text)) if last[text] == i else None
        for i, text in enumerate(video.steps)
    ]


def _catalog(dataset: str, videos, extra=()) -> list[Video]:
    out = list(videos) if videos is not None else []
    try:
        full = load_dataset(dataset)
    except (AnnotationError, ValueError, OSError):
        full = []
    if videos is None or {v.uid for v in out} != {v.uid for v in full}:
        out = list(full) + out
    return out + list(extra)


def localize(
    alignments: Mapping[str, np.ndarray],
    dataset: str,
    videos: Sequence[Video] | None = None,
    *,
    none_column: bool = True,
    fps_rows: float = 1.0,
    **detect: Any,
) -> pd.DataFrame:
    """Detected segments of every video in ``alignments`` (uid -> (T, K+1) or (T, K)).

    ``none_column=True`` drops the last (none) column first (beliefs and raw VSG scores carry
    it). Returns ``video_uid``, ``step_index``, ``step_id`` (None where unknown), ``t_start``,
    ``t_end``, ``score``, ``sigma``; keyword arguments (``scales``, ``threshold``, ``refine``,
    ``top_n``, ``method``, ``mode``, ``overlap``) go to :func:`detect_segments`. ``videos`` only
    serves to look videos and step ids up (default: the dataset).
    """
    catalog = _catalog(dataset, videos)
    by_uid = {v.uid: v for v in catalog}
    known = _step_id_map(catalog)
    scales = _scales(detect.pop("scales", None))
    kw = dict(_DETECT_DEFAULTS)
    unknown_kw = set(detect) - set(kw)
    if unknown_kw:
        raise TypeError(f"unknown detection arguments {sorted(unknown_kw)}")
    kw.update(detect)
    parts: dict[str, list] = {
        k: [] for k in ("video_uid", "step_index", "step_id", "t_start", "t_end", "score", "sigma")
    }
    for uid, alignment in alignments.items():
        if uid not in by_uid:
            raise ValueError(f"video {uid!r} is not in {dataset}")
        video = by_uid[uid]
        a = _as_alignment(alignment)
        expected = video.num_steps + (1 if none_column else 0)
        if a.shape[1] != expected:
            raise ValueError(f"alignment of {uid!r} has {a.shape[1]} columns, expected {expected}")
        if none_column:
            a = a[:, :-1]
        seg = _detect(a, fps_rows, scales, **kw)
        ids = np.array(column_step_ids(video, known), dtype=object)
        n = seg["step"].size
        parts["video_uid"].append(np.full(n, uid, dtype=object))
        parts["step_index"].append(seg["step"])
        parts["step_id"].append(ids[seg["step"]] if n else np.zeros(0, dtype=object))
        for key in ("t_start", "t_end", "score", "sigma"):
            parts[key].append(seg[key])
    if not parts["video_uid"]:
        dtypes = {"video_uid": object, "step_id": object, "step_index": np.int64}
        return pd.DataFrame({k: pd.Series(dtype=dtypes.get(k, float)) for k in parts})
    return pd.DataFrame({k: np.concatenate(v) for k, v in parts.items()})


# --------------------------------------------------------------------------------------------
# Article-grounding mAP


def interpolated_ap(precision: np.ndarray, recall: np.ndarray) -> float:
    """VOC-2011 interpolated AP: precision made monotone from the right, area under it."""
    mprec = np.concatenate([[0.0], precision, [0.0]])
    mrec = np.concatenate([[0.0], recall, [1.0]])
    mprec = np.maximum.accumulate(mprec[::-1])[::-1]
    idx = np.flatnonzero(mrec[1:] != mrec[:-1]) + 1
    return float(np.sum((mrec[idx] - mrec[idx - 1]) * mprec[idx]))


@numba.njit(cache=True, nogil=True)
def _match(
    p_video, p_start, p_end, p_label, gt_offsets, g_start, g_end, g_label, thresholds, match_labels
):
    """Greedy matching in the given prediction order; tp[threshold, prediction]."""
    n_thr, n_pred = thresholds.size, p_video.size
    tp = np.zeros((n_thr, n_pred), dtype=np.bool_)
    locked = np.zeros((n_thr, g_start.size), dtype=np.bool_)
    for i in range(n_pred):
        v = p_video[i]
        lo, hi = gt_offsets[v], gt_offsets[v + 1]
        for m in range(n_thr):
            best, best_j = -1.0, -1
            for j in range(lo, hi):
                if locked[m, j] or (match_labels and g_label[j] != p_label[i]):
                    continue
                inter = min(p_end[i], g_end[j]) - max(p_start[i], g_start[j])
                if inter < 0.0:
                    inter = 0.0
                union = (g_end[j] - g_start[j]) + (p_end[i] - p_start[i]) - inter
                iou = inter / union
                if iou >= thresholds[m] and iou >= best:  # ties: the later ground truth
                    best, best_j = iou, j
            if best_j >= 0:
                tp[m, i] = True
                locked[m, best_j] = True
    return tp


def _dedupe(segments, tol=1e-3):
    """HT-Step's ``remove_duplicate_annotations``: drop short and repeated segments."""
    kept: list = []
    for seg in segments:
        valid = seg.end - seg.start >= tol
        for other in kept:
            if (
                abs(seg.start - other.start) <= tol
                and abs(seg.end - other.end) <= tol
                and seg.step_id == other.step_id
            ):
                valid = False
                break
        if valid:
            kept.append(seg)
    return kept


def article_grounding_ap(
    predictions: pd.DataFrame,
    dataset: str = "htstep",
    *,
    videos: Sequence[Video] | None = None,
    tiou_thresholds: Sequence[float] = TIOU_THRESHOLDS,
    match_labels: bool = False,
) -> pd.DataFrame:
    """AP (%) per activity (rows) and tIoU threshold (columns); see :func:`article_grounding_map`.

    Also returns ``ground_truth`` and ``predictions`` counts per activity.
    """
    required = {"video_uid", "step_id", "t_start", "t_end", "score"}
    missing = required - set(predictions.columns)
    if missing:
        raise ValueError(f"predictions lack columns {sorted(missing)}")
    thresholds = np.asarray(tiou_thresholds, dtype=np.float64)
    evaluated = list(load_dataset(dataset) if videos is None else videos)
    catalog = _catalog(dataset, videos)
    known = _step_id_map(catalog)
    all_uids = {v.uid for v in catalog}

    # ground truth, per video (CSR), activities in order of first appearance
    video_pos = {v.uid: i for i, v in enumerate(evaluated)}
    activities: dict[str, int] = {}
    offsets, g_start, g_end, g_label, npos = [0], [], [], [], []
    video_activity = np.empty(len(evaluated), dtype=np.int64)
    labels: dict[str, int] = {}
    step_lists = []
    for i, v in enumerate(evaluated):
        gt = _dedupe(v.segments)
        if any(s.step_id is None for s in gt):
            raise ValueError(f"{dataset} video {v.uid!r} has segments without a step id")
        a = activities.setdefault(v.task, len(activities))
        video_activity[i] = a
        if a == len(npos):
            npos.append(0)
        npos[a] += len(gt)
        g_start += [s.start for s in gt]
        g_end += [s.end for s in gt]
        g_label += [labels.setdefault(s.step_id, len(labels)) for s in gt]
        offsets.append(len(g_start))
        step_lists.append({i for i in column_step_ids(v, known) if i is not None})

    # predictions: known videos, steps of the video's step list
    uids = predictions["video_uid"].astype(str).to_numpy()
    unknown = sorted(set(uids) - all_uids)
    if unknown:
        raise ValueError(f"predictions name videos not in {dataset}: {unknown[:5]}")
    p_video = np.array([video_pos.get(u, -1) for u in uids], dtype=np.int64)
    step_ids = predictions["step_id"].to_numpy()
    steps = np.array([None if _missing(s) else _as_id(s) for s in step_ids], dtype=object)
    keep = np.array(
        [
            pv >= 0 and s is not None and s in step_lists[pv]
            for pv, s in zip(p_video, steps, strict=True)
        ],
        dtype=bool,
    )
    p_start = predictions["t_start"].to_numpy(dtype=np.float64)
    p_end = predictions["t_end"].to_numpy(dtype=np.float64)
    score = predictions["score"].to_numpy(dtype=np.float64)
    if (p_end < p_start).any() or not np.isfinite(np.r_[p_start, p_end, score]).all():
        raise ValueError("predictions need finite times with t_end >= t_start and finite scores")
    idx = np.flatnonzero(keep)
    p_act = video_activity[p_video[idx]]
    # group, then score descending, then later input row first (the official reversed argsort)
    order = idx[np.lexsort((-idx, -score[idx], p_act))]
    p_act = video_activity[p_video[order]]
    p_label = np.array([labels.get(s, -1) for s in steps[order]], dtype=np.int64)
    tp = _match(
        p_video[order],
        p_start[order],
        p_end[order],
        p_label,
        np.asarray(offsets, dtype=np.int64),
        np.asarray(g_start, dtype=np.float64),
        np.asarray(g_end, dtype=np.float64),
        np.asarray(g_label, dtype=np.int64),
        thresholds,
        bool(match_labels),
    )

    names = list(activities)
    ap = np.zeros((len(names), thresholds.size))
    counts = np.bincount(p_act, minlength=len(names))
    bounds = np.r_[0, np.cumsum(counts)]
    for a in range(len(names)):
        lo, hi = bounds[a], bounds[a + 1]
        if hi == lo or npos[a] == 0:
            continue
        ranks = np.arange(1, hi - lo + 1)
        for m in range(thresholds.size):
            tp_c = np.cumsum(tp[m, lo:hi])
            ap[a, m] = interpolated_ap(tp_c / ranks, tp_c / npos[a])
    out = pd.DataFrame(ap * 100, columns=[f"@{t:g}" for t in thresholds])
    out.insert(0, "activity", names)
    out["ground_truth"] = npos
    out["predictions"] = counts
    return out


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _as_id(value) -> str:
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def article_grounding_map(
    predictions: pd.DataFrame,
    dataset: str = "htstep",
    *,
    videos: Sequence[Video] | None = None,
    tiou_thresholds: Sequence[float] = TIOU_THRESHOLDS,
    match_labels: bool = False,
) -> dict[str, float]:
    """HT-Step article-grounding mAP in percent: ``{"@0.3": .., ..., "@0.7": .., "mean": ..}``.

    ``predictions``: columns ``video_uid``, ``step_id`` (HT-Step ``global_step_index``, the
    annotation's ``step``; int or str), ``t_start``, ``t_end`` (seconds), ``score``.
    ``videos``: the evaluated videos (default: the whole dataset, as the official script; a
    video without predictions then only adds misses). Predictions for videos of the dataset
    outside ``videos`` are ignored; unknown uids raise. ``match_labels=False`` is the official
    label-agnostic matcher within an activity; ``True`` only matches the same step. The protocol
    is in the module docstring.
    """
    per_activity = article_grounding_ap(
        predictions,
        dataset,
        videos=videos,
        tiou_thresholds=tiou_thresholds,
        match_labels=match_labels,
    )
    cols = [f"@{t:g}" for t in tiou_thresholds]
    per_activity = per_activity[per_activity["ground_truth"] > 0]  # official: GT activities only
    if per_activity.empty:
        raise ValueError("no ground truth in the evaluated videos")
    values = per_activity[cols].mean(axis=0)
    out = {c: float(values[c]) for c in cols}
    out["mean"] = float(np.mean(list(out.values())))
    return out


# --------------------------------------------------------------------------------------------
# Ego4D windowed recall


def windowed_recall(
    predictions: pd.DataFrame,
    dataset: str = "ego4d_goalstep",
    *,
    videos: Sequence[Video] | None = None,
    thresholds: Sequence[float] = (0.3, 0.5),
    unit: str = "query",
) -> dict[str, float]:
    """R@1 (%) at tIoU with the Ego4D NLQ convention (hit when IoU > threshold, strictly).

    ``predictions``: ``video_uid``, ``step_index`` (column), ``t_start``, ``t_end``, ``score``;
    the top-1 window of a (video, step) is its highest-scored segment (ties: first row).
    ``unit="query"``: every annotated segment is a query answered by its step's window (NLQ);
    ``"pair"``: (video, step) pairs, a hit when the window beats the threshold on any of the
    step's segments. Steps without a window count as misses. Returns ``{"R@1@0.3": ..,
    "R@1@0.5": .., "mIoU": .., "queries": n}`` (mIoU: mean top-1 IoU, in percent).
    """
    if unit not in ("query", "pair"):
        raise ValueError(f"unit must be 'query' or 'pair', got {unit!r}")
    videos = load_dataset(dataset) if videos is None else videos
    by_uid = {v.uid: v for v in videos}
    unknown = sorted(set(predictions["video_uid"].astype(str)) - set(by_uid))
    if unknown:
        raise ValueError(f"predictions name videos not in the evaluated set: {unknown[:5]}")
    top = (
        predictions.reset_index(drop=True)
        .sort_values("score", ascending=False, kind="stable")
        .drop_duplicates(["video_uid", "step_index"])
    )
    cols = (top[c].to_numpy() for c in ("video_uid", "step_index", "t_start", "t_end"))
    window = {(u, int(k)): (s, e) for u, k, s, e in zip(*cols, strict=True)}
    ious: list[float] = []
    for v in videos:
        per_step: dict[int, list[float]] = {}
        for seg in v.segments:
            w = window.get((v.uid, seg.step_index))
            iou = 0.0 if w is None else _iou(w, (seg.start, seg.end))
            per_step.setdefault(seg.step_index, []).append(iou)
        for values in per_step.values():
            ious += values if unit == "query" else [max(values)]
    if not ious:
        raise ValueError("no annotated segments in the evaluated videos")
    arr = np.asarray(ious)
    out = {f"R@1@{t:g}": float((arr > t).mean() * 100) for t in thresholds}
    out["mIoU"] = float(arr.mean() * 100)
    out["queries" if unit == "query" else "pairs"] = int(arr.size)
    return out


def _iou(a, b) -> float:
    inter = max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
    union = max(a[1], b[1]) - min(a[0], b[0])
    return inter / union if union > 0 else 0.0


# --------------------------------------------------------------------------------------------
# Tables (CLI and notebook)


def _map_row(values: dict[str, float]) -> dict[str, float]:
    return {
        "@0.3": values["@0.3"],
        "@0.5": values["@0.5"],
        "@0.7": values["@0.7"],
        "@[0.3-0.7]": values["mean"],
    }


def localization_table(
    obs, deps: Any = "oracle", *, match_labels: bool = False, beliefs=None, **kwargs: Any
) -> pd.DataFrame:
    """Tab. htstep_localization / off_the_shelf_vs_baglm_localization for one observation set.

    Rows: the off-the-shelf LMM (raw scores) and BaGLM (beliefs), both without the none column,
    each with the workbench's mAP (%) at @0.3, @0.5, @0.7, @[0.3-0.7] and the paper's value for
    the same LMM (``paper @...``; simulated observations are compared with InternVL2.5-8B, the
    LMM they are calibrated to), plus NaSVA's reported row. ``kwargs`` go to
    :func:`detect_segments`; ``beliefs`` (uid -> (T, K+1)) skips the filter.
    """
    from baglm_nb.core.pipeline import run_baglm

    videos = load_dataset(obs.dataset)
    if beliefs is None:
        beliefs = run_baglm(obs, deps, videos=videos)
    evaluated = [v for v in videos if v.uid in beliefs]
    model = paper_model(obs.label)
    paper = PAPER_LOCALIZATION.get(model, {}) if obs.dataset == "htstep" else {}
    rows = []
    for method, source in (("off_the_shelf", {u: obs.vsg[u] for u in beliefs}), ("baglm", beliefs)):
        preds = localize(source, obs.dataset, videos, **kwargs)
        values = _map_row(
            article_grounding_map(preds, obs.dataset, videos=evaluated, match_labels=match_labels)
        )
        label = "off-the-shelf LMM" if method == "off_the_shelf" else "+ BaGLM"
        row = {"method": label, "model": model}
        row.update({k: round(v, 1) for k, v in values.items()})
        ref = paper.get(method, {})
        row.update({f"paper {k}": ref.get(k) for k in METRIC_NAMES})
        row.update({"videos": len(evaluated), "segments": len(preds), "source": obs.label})
        rows.append(row)
    if obs.dataset == "htstep":
        ref = PAPER_LOCALIZATION["nasva"]["offline"]
        row = {"method": "NaSVA (paper only)", "model": "nasva"}
        row.update({k: None for k in METRIC_NAMES})
        row.update({f"paper {k}": ref[k] for k in METRIC_NAMES})
        row.update({"videos": None, "segments": None, "source": "paper"})
        rows.append(row)
    out = pd.DataFrame(rows)
    return out.astype({"videos": "Int64", "segments": "Int64"})


def windowed_recall_table(
    obs, deps: Any = "oracle", *, unit: str = "query", beliefs=None, **kwargs: Any
) -> pd.DataFrame:
    """Ego4D Goal-Step windowed R@1 (IoU > 0.3, 0.5) and mIoU for the LMM and BaGLM, beside the
    point-wise R@1 (the paper's metric) of the same beliefs. No paper values exist."""
    from baglm_nb.core.evaluation import evaluate
    from baglm_nb.core.pipeline import run_baglm

    videos = load_dataset(obs.dataset)
    if beliefs is None:
        beliefs = run_baglm(obs, deps, videos=videos)
    evaluated = [v for v in videos if v.uid in beliefs]
    rows = []
    for label, source in (
        ("off-the-shelf LMM", {u: obs.vsg[u] for u in beliefs}),
        ("BaGLM", beliefs),
    ):
        preds = localize(source, obs.dataset, videos, **kwargs)
        rec = windowed_recall(preds, obs.dataset, videos=evaluated, unit=unit)
        rows.append(
            {
                "method": label,
                **{k: (round(v, 1) if isinstance(v, float) else v) for k, v in rec.items()},
                "point-wise R@1": round(evaluate(obs.dataset, source, evaluated), 1),
                "videos": len(evaluated),
                "source": obs.label,
            }
        )
    return pd.DataFrame(rows)
