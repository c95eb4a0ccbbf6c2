"""Step localization: per-step temporal segments from an alignment matrix by LoG blob detection.

The paper's appendix turns the (T, K) alignment matrix (BaGLM's beliefs without the none column,
or an LMM's raw scores) into step segments by 1-D Laplacian-of-Gaussian blob detection at 13
scales (after VINA, Mavroudi et al., ICCV 2023) and scores each segment by the mean step
probability inside it. VINA published no code, so every choice here is ours:
:data:`DETECTION_CHOICES` lists them in one place, and ``docs/design/localization.md`` says
why each was chosen and what it measured. The steps: the response of
:mod:`~baglm_nb.analyses.localization.response`; local maxima in (scale, time) above a
threshold; plateau centring; sub-scale refinement; suppression of blobs mostly inside a
stronger one; a blob of scale ``s`` at row ``t`` is the segment ``[t + 1/2 - s, t + 1/2 + s]``
rows.

Exports the defaults (:data:`DEFAULT_THRESHOLD`, :data:`DEFAULT_OVERLAP`,
:data:`SIGMA_TO_HALF_WIDTH`), :data:`DETECTION_CHOICES`, :func:`find_blobs`,
:func:`detect_segments` (one matrix), :func:`column_step_ids` (a video's step ids) and
:func:`localize` (every video of a dataset).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numba
import numpy as np
import pandas as pd

from baglm_nb.analyses.localization.response import (
    DEFAULT_MODE,
    _as_alignment,
    _responses,
    _scales,
)
from baglm_nb.inputs.datasets import AnnotationError, Video, load_dataset

__all__ = [
    "DEFAULT_OVERLAP",
    "DEFAULT_THRESHOLD",
    "DETECTION_CHOICES",
    "SIGMA_TO_HALF_WIDTH",
    "column_step_ids",
    "detect_segments",
    "find_blobs",
    "localize",
]

#: Detection threshold on the scale-normalised response (a box of height h peaks at 0.484 h).
DEFAULT_THRESHOLD = 0.05
#: A blob of scale s spans [centre - k s, centre + k s]; k = 1 (box of half-width w peaks at s = w).
SIGMA_TO_HALF_WIDTH = 1.0
#: Cross-scale suppression: a blob with more than this fraction of its span inside a stronger
#: kept blob of the same step is dropped (None: keep every local maximum).
DEFAULT_OVERLAP: float | None = 0.5
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
    ``response``, ordered by step and start. The choices: ``docs/design/localization.md``.
    """
    a = _as_alignment(alignment)
    opts = {
        "threshold": threshold,
        "refine": refine,
        "top_n": top_n,
        "method": method,
        "mode": mode,
        "overlap": overlap,
    }
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
