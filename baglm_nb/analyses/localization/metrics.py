"""Localization metrics: HT-Step article-grounding mAP and Ego4D Goal-Step windowed recall.

:func:`article_grounding_map` follows HT-Step's official ``eval_article_grounding.py``
(ActivityNet/ActionFormer detection AP): per activity, predictions ranked by score greedily
match the unmatched ground-truth segment of the same video with the highest tIoU, label-agnostic
within the activity by default (``match_labels=True`` is the stricter per-step variant); AP is
VOC-2011 interpolated; mAP is the mean over activities with ground truth, in percent, at tIoU
0.3 ... 0.7, and ``mean`` averages the five thresholds. The matcher is a numba kernel, tested
against a literal transcription of the official loop. :func:`windowed_recall` is R@1 of each
(video, step)'s top-1 segment with the Ego4D NLQ convention (hit when IoU > threshold). The
protocol's details and why: ``docs/design/localization.md``.

Exports :data:`TIOU_THRESHOLDS`, :func:`interpolated_ap`, :func:`article_grounding_ap` (per
activity), :func:`article_grounding_map` and :func:`windowed_recall`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numba
import numpy as np
import pandas as pd

from baglm_nb.analyses.localization.detection import _catalog, _step_id_map, column_step_ids
from baglm_nb.inputs.datasets import Video, load_dataset

__all__ = [
    "TIOU_THRESHOLDS",
    "article_grounding_ap",
    "article_grounding_map",
    "interpolated_ap",
    "windowed_recall",
]

#: tIoU thresholds of HT-Step's article-grounding mAP.
TIOU_THRESHOLDS: tuple[float, ...] = (0.3, 0.4, 0.5, 0.6, 0.7)

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


class _GroundTruth(NamedTuple):
    """The evaluated videos' ground truth, per video (CSR), activities in order of appearance."""

    video_pos: dict[str, int]  # uid -> position among the evaluated videos
    activities: dict[str, int]  # activity -> index
    video_activity: np.ndarray  # (videos,) activity index
    offsets: np.ndarray  # (videos + 1,) segment offsets per video
    start: np.ndarray
    end: np.ndarray
    label: np.ndarray  # step-id index (labels)
    npos: list[int]  # ground-truth segments per activity
    labels: dict[str, int]  # step id -> index
    step_lists: list[set[str]]  # the known step ids of each video's step list


def _ground_truth(dataset: str, evaluated: list[Video], known: dict) -> _GroundTruth:
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
        step_lists.append({sid for sid in column_step_ids(v, known) if sid is not None})
    return _GroundTruth(
        video_pos={v.uid: i for i, v in enumerate(evaluated)},
        activities=activities,
        video_activity=video_activity,
        offsets=np.asarray(offsets, dtype=np.int64),
        start=np.asarray(g_start, dtype=np.float64),
        end=np.asarray(g_end, dtype=np.float64),
        label=np.asarray(g_label, dtype=np.int64),
        npos=npos,
        labels=labels,
        step_lists=step_lists,
    )


def _kept_predictions(
    predictions: pd.DataFrame, dataset: str, all_uids: set[str], gt: _GroundTruth
) -> tuple[np.ndarray, ...]:
    """(video position, step id, kept, start, end, score) per prediction row, validated.

    Kept: a prediction of an evaluated video whose step is in the video's step list.
    """
    uids = predictions["video_uid"].astype(str).to_numpy()
    unknown = sorted(set(uids) - all_uids)
    if unknown:
        raise ValueError(f"predictions name videos not in {dataset}: {unknown[:5]}")
    p_video = np.array([gt.video_pos.get(u, -1) for u in uids], dtype=np.int64)
    step_ids = predictions["step_id"].to_numpy()
    steps = np.array([None if _missing(s) else _as_id(s) for s in step_ids], dtype=object)
    keep = np.array(
        [
            pv >= 0 and s is not None and s in gt.step_lists[pv]
            for pv, s in zip(p_video, steps, strict=True)
        ],
        dtype=bool,
    )
    p_start = predictions["t_start"].to_numpy(dtype=np.float64)
    p_end = predictions["t_end"].to_numpy(dtype=np.float64)
    score = predictions["score"].to_numpy(dtype=np.float64)
    if (p_end < p_start).any() or not np.isfinite(np.r_[p_start, p_end, score]).all():
        raise ValueError("predictions need finite times with t_end >= t_start and finite scores")
    return p_video, steps, keep, p_start, p_end, score


def _activity_ap(
    tp: np.ndarray, p_act: np.ndarray, npos: list[int], thresholds: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """AP (activities, thresholds) of predictions grouped by activity, and their counts."""
    ap = np.zeros((len(npos), thresholds.size))
    counts = np.bincount(p_act, minlength=len(npos))
    bounds = np.r_[0, np.cumsum(counts)]
    for a in range(len(npos)):
        lo, hi = bounds[a], bounds[a + 1]
        if hi == lo or npos[a] == 0:
            continue
        ranks = np.arange(1, hi - lo + 1)
        for m in range(thresholds.size):
            tp_c = np.cumsum(tp[m, lo:hi])
            ap[a, m] = interpolated_ap(tp_c / ranks, tp_c / npos[a])
    return ap, counts


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
    gt = _ground_truth(dataset, evaluated, _step_id_map(catalog))
    p_video, steps, keep, p_start, p_end, score = _kept_predictions(
        predictions, dataset, {v.uid for v in catalog}, gt
    )
    idx = np.flatnonzero(keep)
    p_act = gt.video_activity[p_video[idx]]
    # group, then score descending, then later input row first (the official reversed argsort)
    order = idx[np.lexsort((-idx, -score[idx], p_act))]
    p_act = gt.video_activity[p_video[order]]
    p_label = np.array([gt.labels.get(s, -1) for s in steps[order]], dtype=np.int64)
    tp = _match(
        p_video[order],
        p_start[order],
        p_end[order],
        p_label,
        gt.offsets,
        gt.start,
        gt.end,
        gt.label,
        thresholds,
        bool(match_labels),
    )
    ap, counts = _activity_ap(tp, p_act, gt.npos, thresholds)
    out = pd.DataFrame(ap * 100, columns=[f"@{t:g}" for t in thresholds])
    out.insert(0, "activity", list(gt.activities))
    out["ground_truth"] = gt.npos
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
    is in ``docs/design/localization.md``.
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
