"""Online quality beside R@1: what a person following ``follow`` sees, second by second.

R@1 asks whether the single row where a step's belief peaks falls inside its annotation. These
metrics judge the per-second top state and the announcements instead (``docs/metrics.md`` holds
the same definitions):

- **per-second accuracy** (``frame_accuracy``): the share of per-second rows whose top state (the
  most probable of the K steps and none, first on ties) is right: a step annotated at that row
  (:func:`~baglm_nb.inputs.grid.ground_truth`), or none where no step is annotated. Every row
  counts, none included; ``frame_accuracy_on_steps`` counts only the rows where a step is
  annotated.
- **announcements**: the hysteresis of ``follow``
  (:class:`~baglm_nb.core.online.Hysteresis`, same threshold and patience) fed once per segment
  with the top state of the segment's last row and its value (:func:`announcements`). An
  announcement of step k at segment s is *correct* when row ``s * segment_duration`` (the
  segment's start) lies inside an annotated interval of k. Announcements of none are not
  counted. **Precision** (``announce_precision``): correct step announcements over step
  announcements; **recall** (``announce_recall``): annotated steps (steps with at least one
  ground-truth row) that get at least one correct announcement, over annotated steps; **F1**
  (``announce_f1``): ``2 P R / (P + R)``.
- **delay** (``delay_median_s``, ``delay_p90_s``): for each annotated step with a correct
  announcement, the time the first correct announcement is made, ``(s + 1) *
  segment_duration + lag_s`` (the segment's end, plus the look-ahead of a fixed-lag smoother;
  the video's end for the offline smoother), minus the start of the annotated interval it
  falls in (the latest-starting one if several); median and 90th percentile over all such
  steps.
- **flicker** (``flicker_per_min``): changes of the per-second top state per minute of video
  (``changes / (T / 60)``), beside the ground truth's (``truth_flicker_per_min``), whose state
  per row is the annotated step there, the later-starting one where two share a row
  (:func:`truth_states`), none elsewhere.

Per dataset the counts are pooled over videos (rows, announcements, annotated steps, changes,
minutes; delays pooled) and the ratios taken once; CrossTask averages each ratio per task over
the same 20 random subsets as its Avg. R@1 (:func:`~baglm_nb.core.evaluation.recall_subsets`),
its delays pooled. A ratio with nothing to count (no announcement) is NaN.

The off-the-shelf model's announcements come from its VSG scores normalised per row (its
"belief"), so that the same threshold means the same for both methods.

**absent-step share** (:func:`absent_step_share`, not per dataset's task average): of the rows
where a step is annotated, the share whose top state is a step the video never does (no
annotated interval), pooled over videos; it explains what an oracle chain D does per second
(``docs/metrics.md``).

Each metric's key, label, unit, description, aggregation and direction are its
:class:`~baglm_nb.inputs.metric_specs.MetricSpec` (:data:`~baglm_nb.inputs.metric_specs.METRICS`,
group ``online``): :func:`dataset_metrics` aggregates each as its spec says, from the counts of
:func:`video_counts` named in the spec.

Exports :func:`online_keys`, :func:`absent_step_share`, :func:`truth_states`,
:func:`announcements`, :func:`video_counts`, :func:`dataset_metrics` and :func:`measure`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from baglm_nb.core.evaluation import recall_subsets
from baglm_nb.core.online import Hysteresis
from baglm_nb.inputs.datasets import Recall, Video, dataset_spec
from baglm_nb.inputs.grid import ground_truth
from baglm_nb.inputs.metric_specs import METRICS, ONLINE, MetricSpec, metric_keys
from baglm_nb.inputs.variants import SEGMENT_DURATION

__all__ = [
    "absent_step_share",
    "announcements",
    "dataset_metrics",
    "measure",
    "online_keys",
    "truth_states",
    "video_counts",
]


def online_keys() -> tuple[str, ...]:
    """The keys of :func:`dataset_metrics`, in reading order (the ``online`` metric specs)."""
    return metric_keys(ONLINE)


def _online_specs() -> list[MetricSpec]:
    return [METRICS[k] for k in online_keys()]


def _ratios() -> dict[str, tuple[str, str]]:
    """The online ratio metrics as (numerator, denominator) columns of :func:`video_counts`."""
    return {s.key: s.counts for s in _online_specs() if s.aggregation == "pooled_ratio"}


def truth_states(video: Video, num_rows: int) -> np.ndarray:
    """The ground-truth state per row (T,): the annotated step, K (none) where none is.

    Rows are :func:`~baglm_nb.inputs.grid.ground_truth`'s; where two annotated steps share a
    row (a boundary), the later-starting one.
    """
    out = np.full(num_rows, video.num_steps, dtype=np.int64)
    for seg in sorted(video.segments, key=lambda s: s.start):
        out[math.floor(seg.start) : math.ceil(seg.end) + 1] = seg.step_index
    return out


def announcements(
    segment_rows: np.ndarray, threshold: float = 0.5, patience: int = 2
) -> list[tuple[int, int]]:
    """``(segment, state)`` of each announcement ``follow``'s hysteresis makes.

    ``segment_rows`` (S, K+1) holds each segment's belief (its last per-second row); each is
    fed once, with its top state and that state's value as confidence.
    """
    h = Hysteresis(threshold, patience)
    rows = np.asarray(segment_rows)
    tops = rows.argmax(axis=1) if len(rows) else np.zeros(0, dtype=np.int64)
    confidences = rows[np.arange(len(rows)), tops]
    out = []
    for s, (top, confidence) in enumerate(zip(tops.tolist(), confidences.tolist(), strict=True)):
        new = h.update(top, confidence)
        if new is not None:
            out.append((s, new))
    return out


def _interval_start(video: Video, step: int, row: int) -> float:
    """The start of the latest-starting annotated interval of ``step`` that holds ``row``."""
    return max(
        seg.start
        for seg in video.segments
        if seg.step_index == step and math.floor(seg.start) <= row <= math.ceil(seg.end)
    )


def video_counts(
    video: Video,
    beliefs: np.ndarray,
    said: Sequence[tuple[int, int]],
    *,
    segment_duration: int = SEGMENT_DURATION,
    lag_s: float | None = 0.0,
) -> dict:
    """The counts behind every metric for one video (module docstring).

    Parameters
    ----------
    video : Video
        The annotated video.
    beliefs : (T, K+1) array
        Per-second beliefs (or scores), none last.
    said : sequence of (segment, state)
        The announcements (:func:`announcements`, or a ``follow`` run's).
    segment_duration : int
        Seconds per segment.
    lag_s : float or None
        Seconds of look-ahead behind each announcement (fixed-lag smoothing), added to delays;
        None: the offline smoother, whose announcements come at the video's end.

    Returns
    -------
    dict with ``rows``, ``rows_correct``, ``step_rows``, ``step_rows_correct``, ``announced``,
    ``announced_correct``, ``steps_annotated``, ``steps_found``, ``delays`` (list of s, one per
    found step), ``changes``, ``truth_changes``, ``minutes``.
    """
    b = np.asarray(beliefs)
    t_len, k = b.shape[0], video.num_steps
    y = ground_truth(video, t_len)
    y[:, k] = ~y[:, :k].any(axis=1)
    top = b.argmax(axis=1)
    right = y[np.arange(t_len), top]
    on_steps = ~y[:, k]
    truth = truth_states(video, t_len)
    first: dict[int, float] = {}
    announced = correct = 0
    for s, state in said:
        row = s * segment_duration
        if state >= k or row >= t_len:
            continue
        announced += 1
        if y[row, state]:
            correct += 1
            if state not in first:
                start = _interval_start(video, state, row)
                made = t_len if lag_s is None else (s + 1) * segment_duration + lag_s
                first[state] = made - start
    return {
        "rows": t_len,
        "rows_correct": int(right.sum()),
        "step_rows": int(on_steps.sum()),
        "step_rows_correct": int(right[on_steps].sum()),
        "announced": announced,
        "announced_correct": correct,
        "steps_annotated": int(y[:, :k].any(axis=0).sum()),
        "steps_found": len(first),
        "delays": list(first.values()),
        "changes": int((np.diff(top) != 0).sum()),
        "truth_changes": int((np.diff(truth) != 0).sum()),
        "minutes": t_len / 60.0,
    }


def absent_step_share(videos: Sequence[Video], beliefs: Mapping[str, np.ndarray]) -> float:
    """Of the per-second rows where a step is annotated, the share whose top state (first on
    ties) is a step with no annotated interval in the video; pooled over the videos of
    ``videos`` that ``beliefs`` covers (NaN without such rows)."""
    rows = absent = 0
    for video in videos:
        if video.uid not in beliefs:
            continue
        b = np.asarray(beliefs[video.uid])
        k = video.num_steps
        y = ground_truth(video, b.shape[0])[:, :k]
        on_steps = y.any(axis=1)
        never = np.ones(k + 1, dtype=bool)
        never[[seg.step_index for seg in video.segments]] = False
        never[k] = False  # none is no step
        rows += int(on_steps.sum())
        absent += int(never[b.argmax(axis=1)[on_steps]].sum())
    return _ratio(absent, rows)


def _ratio(num: float, den: float) -> float:
    return float(num / den) if den else math.nan


def _pooled(counts: pd.DataFrame) -> dict[str, float]:
    return {name: _ratio(counts[n].sum(), counts[d].sum()) for name, (n, d) in _ratios().items()}


def _per_task(counts: pd.DataFrame, order: Sequence[str], recall: Recall) -> dict[str, float]:
    """Each ratio per task, averaged over tasks, over R@1's random subsets (CrossTask)."""
    per_video = counts.set_index("video_uid")
    ratios = _ratios()
    values = []
    for chosen in recall_subsets(recall, [u for u in order if u in per_video.index]):
        picked = per_video.loc[chosen]
        by_task = [_pooled(g) for _, g in picked.groupby("task")]
        values.append({m: float(np.nanmean([t[m] for t in by_task])) for m in ratios})
    return {m: float(np.mean([v[m] for v in values])) for m in ratios}


def _harmonic_mean(p: float, r: float) -> float:
    """``2 P R / (P + R)``: 0 where both are 0, NaN where either is NaN."""
    return 2 * p * r / (p + r) if p + r > 0 else (0.0 if p == p else math.nan)


def _of_values(aggregation: str, values: list[float]) -> float:
    """The ``median`` or ``p90`` of pooled values (NaN without any)."""
    if not values:
        return math.nan
    return float(np.median(values) if aggregation == "median" else np.percentile(values, 90))


def dataset_metrics(
    dataset: str, per_video: Mapping[str, dict], videos: Sequence[Video]
) -> dict[str, float]:
    """Every online metric (:func:`online_keys`) over a dataset from :func:`video_counts` per
    uid, each aggregated as its spec says (ratios first, then the harmonic means and the
    medians and percentiles of pooled values).

    ``videos`` gives annotation order and tasks; only the uids in ``per_video`` count.
    """
    rows = [
        {"video_uid": v.uid, "task": v.task, **per_video[v.uid]}
        for v in videos
        if v.uid in per_video
    ]
    if not rows:
        raise ValueError(f"no videos to measure for {dataset}")
    counts = pd.DataFrame(rows)
    recall = dataset_spec(dataset).recall
    if recall.per_task:
        with np.errstate(all="ignore"):
            out = _per_task(counts, [r["video_uid"] for r in rows], recall)
    else:
        out = _pooled(counts)
    for spec in _online_specs():
        if spec.aggregation == "harmonic_mean":
            out[spec.key] = _harmonic_mean(out[spec.counts[0]], out[spec.counts[1]])
        elif spec.aggregation in ("median", "p90"):
            pooled = [d for ds in counts[spec.counts[0]] for d in ds]
            out[spec.key] = _of_values(spec.aggregation, pooled)
        elif spec.aggregation != "pooled_ratio":
            raise ValueError(f"online metric {spec.key}: no per-video {spec.aggregation}")
    return {k: out[k] for k in online_keys()}


def measure(
    dataset: str,
    videos: Sequence[Video],
    beliefs: Mapping[str, np.ndarray],
    *,
    segment_duration: int = SEGMENT_DURATION,
    threshold: float = 0.5,
    patience: int = 2,
    lag_s: float | None = 0.0,
    scores: bool = False,
) -> dict[str, float]:
    """:func:`dataset_metrics` of per-second ``beliefs`` (uid -> (T, K+1)), announcing on each
    segment's last row; ``scores=True`` for raw VSG scores (normalised per row first)."""
    d = int(segment_duration)
    per_video = {}
    for video in videos:
        if video.uid not in beliefs:
            continue
        b = np.asarray(beliefs[video.uid], dtype=np.float64)
        if scores:
            total = b.sum(axis=1, keepdims=True)
            b = np.divide(b, total, out=np.zeros_like(b), where=total > 0)
        said = announcements(b[d - 1 :: d], threshold, patience)
        per_video[video.uid] = video_counts(video, b, said, segment_duration=d, lag_s=lag_s)
    return dataset_metrics(dataset, per_video, videos)
