"""R@1 protocols per dataset (reference-protocol §6).

A (video, step) pair is evaluable when its ground-truth column has at least one row; it is a
hit when the row with the highest belief for that step (earliest row on ties) lies inside the
step's ground truth. Each dataset's :class:`~baglm_nb.inputs.datasets.Recall` says how the
number is averaged: HT-Step, Ego4D Goal-Step and COIN report the flat mean over pairs;
CrossTask reports the per-task average over 20 random subsets of 1850 videos
(``random.seed(0..19)``, uids in annotation-file order).

One difference from the published code, kept on purpose: when a CrossTask subset holds no
evaluable (video, step) pair of some task, the published per-task recall is 0/0 = NaN and makes
that subset's mean, and so the reported Avg. R@1, NaN; here the task is left out of that
subset's mean. With the full 2308-video annotation every task has evaluable pairs in every
subset, so the two agree.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from baglm_nb.inputs.datasets import Recall, Video, dataset_spec, load_dataset
from baglm_nb.inputs.grid import first_starts, ground_truth

__all__ = [
    "best_rows",
    "evaluate",
    "pair_hits",
    "recall_from_hits",
    "recall_subsets",
    "video_hits",
]


@dataclass(frozen=True)
class _Truth:
    """What R@1 reads of one video on T rows, whatever the beliefs: the (T, K) ground truth
    (read-only), its evaluable step columns and each one's first start over the duration."""

    y: np.ndarray
    steps: np.ndarray
    positions: tuple[float, ...]


def _truth_of(video: Video, num_rows_: int) -> _Truth:
    """:class:`_Truth` of ``video`` on ``num_rows_`` rows, computed once per video and T (every
    evaluation of the video, of any beliefs, shares it; an unhashable video is not kept)."""
    try:
        hash(video)
    except TypeError:  # e.g. segments in a list
        return _make_truth(video, num_rows_)
    return _kept_truth(video, num_rows_)


@lru_cache(maxsize=16384)  # more than the four datasets' videos; all of them take about 13 MB
def _kept_truth(video: Video, num_rows_: int) -> _Truth:
    """:func:`_make_truth`, kept per (video, T) by value."""
    return _make_truth(video, num_rows_)


def _make_truth(video: Video, num_rows_: int) -> _Truth:
    y = ground_truth(video, num_rows_)[:, :-1]
    y.setflags(write=False)
    steps = np.flatnonzero(y.any(axis=0))
    steps.setflags(write=False)
    first = first_starts(video)
    duration = video.num_frames / video.fps
    return _Truth(y, steps, tuple(min(first[s] / duration, 1.0) for s in steps.tolist()))


def best_rows(video: Video, beliefs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Evaluable step columns of one video, their best rows and the ground truth.

    ``beliefs`` is (T, K+1) with none last; the ground truth is built on its own T rows (as the
    published ``get_Y_true(*y_pred.shape, ...)``). Returns ``(steps, best, truth)``: the
    evaluable step indices, the row of each step's highest belief (the earliest on ties, as
    ``argmax``) and the (T, K) boolean ground truth (``steps`` and ``truth`` read-only, shared
    by every evaluation of the video on T rows).
    """
    b = np.asarray(beliefs)
    if b.ndim != 2 or b.shape[1] != video.num_steps + 1:
        raise ValueError(
            f"beliefs for video {video.uid!r} must be (T, K+1) with K={video.num_steps}, "
            f"got shape {b.shape}"
        )
    truth = _truth_of(video, b.shape[0])
    return truth.steps, b[:, truth.steps].argmax(axis=0), truth.y


def video_hits(video: Video, beliefs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Evaluable step columns and their hits for one video.

    ``beliefs`` is (T, K+1) with none last (raw scores for the off-the-shelf baseline).
    Returns ``(steps, hits)``: the indices of evaluable steps and a boolean hit per step.
    """
    steps, best, y = best_rows(video, beliefs)
    return steps, y[best, steps]


def pair_hits(
    dataset: str, beliefs: Mapping[str, np.ndarray], videos: Sequence[Video] | None = None
) -> pd.DataFrame:
    """One row per evaluable (video, step) pair of the videos present in ``beliefs``.

    Columns: ``video_uid``, ``task``, ``step_index``, ``hit``, ``num_steps`` (K) and
    ``position`` (the step's first annotated start over the video duration, in [0, 1]).
    Videos keep annotation-file order.
    """
    videos = load_dataset(dataset) if videos is None else videos
    known = {v.uid for v in videos}
    unknown = [uid for uid in beliefs if uid not in known]
    if unknown:
        raise ValueError(f"beliefs name videos not in {dataset}: {unknown[:5]}")
    cols: dict[str, list] = {k: [] for k in ("video_uid", "task", "step_index", "hit")}
    cols["num_steps"], cols["position"] = [], []
    for v in videos:
        if v.uid not in beliefs:
            continue
        steps, best, y = best_rows(v, beliefs[v.uid])
        n = len(steps)
        cols["video_uid"] += [v.uid] * n
        cols["task"] += [v.task] * n
        cols["step_index"] += steps.tolist()
        cols["hit"] += y[best, steps].tolist()
        cols["num_steps"] += [v.num_steps] * n
        cols["position"] += _truth_of(v, y.shape[0]).positions
    return pd.DataFrame(cols)


def recall_subsets(recall: Recall, video_order: Sequence[str]) -> list[list[str]]:
    """A per-task recall's random subsets of uids (``random.seed(0..subsets-1)``; all when fewer).

    CrossTask: 20 subsets of 1850 uids. The draws are kept per (recall, order) and the global
    ``random`` state is left where drawing them leaves it, as on the first call.
    """
    key = (recall.subsets, recall.subset_size, tuple(video_order))
    kept = _SUBSETS.get(key)
    if kept is None:
        uids = list(key[2])
        out = []
        for seed in range(recall.subsets):
            random.seed(seed)
            out.append(tuple(random.sample(uids, min(recall.subset_size, len(uids)))))
        kept = _SUBSETS[key] = (tuple(out), random.getstate())
        while len(_SUBSETS) > _SUBSETS_KEPT:
            del _SUBSETS[next(iter(_SUBSETS))]
    random.setstate(kept[1])
    return [list(chosen) for chosen in kept[0]]


#: The draws of the last few (recall, video order) pairs (an evaluation draws the same ones
#: for BaGLM, the baseline and every point of a sweep).
_SUBSETS: dict[tuple, tuple[tuple[tuple[str, ...], ...], tuple]] = {}
_SUBSETS_KEPT = 16


def recall_from_hits(dataset: str, hits: pd.DataFrame, video_order: Sequence[str]) -> float:
    """The dataset's R@1 in percent from :func:`pair_hits` rows.

    ``video_order`` lists the evaluated uids in annotation-file order (it fixes CrossTask's
    random subsets). A task with no evaluable pair in a subset is left out of that subset's
    mean (the published code would give NaN; module docstring).
    """
    if hits.empty:
        raise ValueError(f"no evaluable (video, step) pairs for {dataset}")
    recall = dataset_spec(dataset).recall
    if not recall.per_task:
        return float(hits["hit"].mean() * 100)
    # per video: its hits, its pairs and its task's code (codes in sorted task order, as a
    # groupby's); a draw then sums them per task with bincount instead of a frame per subset
    uids, row_video = np.unique(hits["video_uid"].to_numpy(), return_inverse=True)
    video_hits_n = np.bincount(row_video, weights=hits["hit"].to_numpy(dtype=float))
    video_pairs_n = np.bincount(row_video, minlength=len(uids)).astype(float)
    video_task = np.empty(len(uids), dtype=object)
    video_task[row_video] = hits["task"].to_numpy()
    tasks, task_code = np.unique(video_task.astype(str), return_inverse=True)
    index = {uid: i for i, uid in enumerate(uids.tolist())}
    values = []  # videos without evaluable pairs still take part in the draw
    for chosen in recall_subsets(recall, video_order):
        picked = np.array([index[u] for u in chosen if u in index], dtype=np.intp)
        codes = task_code[picked]
        task_hits = np.bincount(codes, weights=video_hits_n[picked], minlength=len(tasks))
        task_pairs = np.bincount(codes, weights=video_pairs_n[picked], minlength=len(tasks))
        present = task_pairs > 0
        # a draw without any evaluable pair is NaN, as the mean over no task is
        values.append(
            (task_hits[present] / task_pairs[present]).mean() if present.any() else np.nan
        )
    return float(np.mean(values) * 100)


def evaluate(
    dataset: str, beliefs: Mapping[str, np.ndarray], videos: Sequence[Video] | None = None
) -> float:
    """The dataset's headline number in percent (R@1, or CrossTask's Avg. R@1).

    ``beliefs`` maps video uid to a (T, K+1) array (none last): filter beliefs for BaGLM, raw
    VSG scores for the off-the-shelf baseline. Only the videos present are evaluated.
    """
    videos = load_dataset(dataset) if videos is None else videos
    hits = pair_hits(dataset, beliefs, videos)
    order = [v.uid for v in videos if v.uid in beliefs]
    return recall_from_hits(dataset, hits, order)
