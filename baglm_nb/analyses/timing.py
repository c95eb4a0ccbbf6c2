"""Per-segment inference timings behind notebook 07, beside the paper's (App. inference speed).

Timings come from a score cache that recorded them
(:meth:`baglm_nb.stores.scores.ScoreCache.timings_frame`); without one the table says ``no
timings available`` and never invents a number. These tables have no (video, step) items.
:func:`sample_run` makes such a cache on any machine: it scores the sample clips that ship with
the repository (:mod:`baglm_nb.inputs.samples`) with a tiny random model, and :func:`run_table`
shows what a scoring run did. The figure is :func:`baglm_nb.analyses.timing_figure.timing_figure`.

Exports :data:`TIMING_ORDER`, :func:`timing_summary`, :func:`timing_table`,
:func:`timing_tables`, :func:`no_timings_table`, :func:`sample_run` and :func:`run_table`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from baglm_nb.analyses.result_table import ResultTable
from baglm_nb.core import sources
from baglm_nb.inputs import samples
from baglm_nb.inputs.datasets import Video, load_dataset
from baglm_nb.inputs.paper import PAPER_TIMING
from baglm_nb.inputs.variants import SEGMENT_DURATION

__all__ = [
    "TIMING_ORDER",
    "no_timings_table",
    "run_table",
    "sample_run",
    "timing_summary",
    "timing_table",
    "timing_tables",
    "timing_view",
]

#: Timing columns in the order the figure stacks them (others follow, alphabetically).
TIMING_ORDER = ("decode_s", "vsg_s", "progress_s")


def _timing_columns(frame: pd.DataFrame) -> list[str]:
    cols = [c for c in frame.columns if c not in ("video_uid", "segment", "total_s")]
    cols = [c for c in cols if pd.api.types.is_numeric_dtype(frame[c])]
    known = [c for c in TIMING_ORDER if c in cols]
    return known + sorted(c for c in cols if c not in known)


def _with_total(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    cols = _timing_columns(frame)
    if not cols and "total_s" not in frame.columns:
        raise ValueError("the timings frame has no timing columns")
    frame = frame.copy()
    if "total_s" not in frame.columns:
        frame["total_s"] = frame[cols].sum(axis=1, min_count=1)
    return frame, cols


def timing_summary(
    frame: pd.DataFrame, videos: Sequence[Video], *, segment_duration: float = SEGMENT_DURATION
) -> pd.DataFrame:
    """Mean seconds per segment of each timing column, by the video's number of steps K.

    ``frame`` is :meth:`baglm_nb.stores.scores.ScoreCache.timings_frame` (``video_uid``, ``segment``
    and one float column per timed stage, e.g. ``decode_s``, ``vsg_s``, ``progress_s``). The
    total is ``total_s`` when recorded, else the sum of the stages. ``realtime_share`` is the
    fraction of segments processed within ``segment_duration`` seconds.

    Returns
    -------
    DataFrame
        ``num_steps, videos, segments, <stage>..., total_s, realtime_share`` (one row per K).
    """
    frame, cols = _with_total(frame)
    k = {v.uid: v.num_steps for v in videos}
    missing = sorted(set(frame["video_uid"]) - set(k))
    if missing:
        raise ValueError(f"timings name videos not in the dataset: {missing[:5]}")
    frame["num_steps"] = frame["video_uid"].map(k)
    frame["realtime"] = frame["total_s"] <= segment_duration
    agg = {c: (c, "mean") for c in [*cols, "total_s"]}
    out = frame.groupby("num_steps").agg(
        videos=("video_uid", "nunique"),
        segments=("segment", "size"),
        realtime_share=("realtime", "mean"),
        **agg,
    )
    out = out[["videos", "segments", *cols, "total_s", "realtime_share"]]
    return out.reset_index().round(4)


def timing_table(
    frame: pd.DataFrame,
    videos: Sequence[Video],
    *,
    source: str,
    example_uid: str = str(PAPER_TIMING["example_uid"]),
) -> pd.DataFrame:
    """Per-segment seconds of each stage beside the paper's (App. inference speed).

    Columns: ``stage``, ``workbench`` (mean over every timed segment), ``workbench_k10``
    (mean over the videos with the paper's example's K = 10 steps), ``workbench_example``
    (the paper's example video, when timed), ``paper`` (that example, one H100), ``segments``
    and ``source``.
    """
    frame, cols = _with_total(frame)
    k = {v.uid: v.num_steps for v in videos}
    k_ex = int(PAPER_TIMING["example_num_steps"])
    same_k = frame[frame["video_uid"].map(k) == k_ex]
    example = frame[frame["video_uid"] == example_uid]
    rows = []
    for col in [*cols, "total_s"]:
        rows.append(
            {
                "stage": col,
                "workbench": round(float(frame[col].mean()), 4),
                "workbench_k10": round(float(same_k[col].mean()), 4) if len(same_k) else np.nan,
                "workbench_example": round(float(example[col].mean()), 4)
                if len(example)
                else np.nan,
                "paper": PAPER_TIMING.get(col, np.nan),
                "segments": int(frame[col].notna().sum()),
                "source": source,
            }
        )
    return pd.DataFrame(rows)


def timing_tables(
    folder: str | os.PathLike | None, annotations: str | os.PathLike | None = None
) -> dict[str, Any]:
    """Everything notebook ``07_timing`` shows, from a score cache with per-segment timings.

    ``annotations`` is the folder of the annotation file the cache's videos come from (default
    ``data/annotations``; the sample clips': :func:`baglm_nb.inputs.samples.annotations`).
    Returns a dict with ``table`` (:func:`timing_table`, or :func:`no_timings_table` when
    ``folder`` is None or its cache recorded no timings) and ``summary``
    (:func:`timing_summary`, or None) as result tables without items, ``source``,
    ``dataset``, ``segment_duration`` and ``message`` (what was found).
    """
    empty = {
        "summary": None,
        "source": "none",
        "dataset": None,
        "segment_duration": SEGMENT_DURATION,
    }
    if folder is None:
        reason = "no score cache given (parameter `timings`)"
        return {
            **empty,
            "table": ResultTable.of(no_timings_table(reason)),
            "message": f"No timings available: {reason}; none are invented.",
        }
    cache = sources.open_score_cache(folder)
    key = cache.key
    source = key.source_label
    frame = cache.timings_frame()
    if not _timing_columns(frame) and "total_s" not in frame.columns:
        reason = f"the score cache {cache.path} recorded no per-segment timings ({source})"
        return {
            **empty,
            "table": ResultTable.of(no_timings_table(reason)),
            "dataset": key.dataset,
            "message": f"No timings available: {reason}; none are invented.",
        }
    videos = load_dataset(key.dataset, annotations)
    d = key.segment_duration
    summary = timing_summary(frame, videos, segment_duration=d)
    return {
        "table": ResultTable.of(timing_table(frame, videos, source=source), observations=[source]),
        "summary": ResultTable.of(summary, observations=[source]),
        "source": source,
        "dataset": key.dataset,
        "segment_duration": d,
        "message": (
            f"{len(frame)} timed segments of {frame['video_uid'].nunique()} videos "
            f"({key.dataset}, {source}, {d}-s segments)"
        ),
    }


def no_timings_table(reason: str) -> pd.DataFrame:
    """The timing table when no timings exist: the paper's values and ``no timings available``.

    Never invents a number: the ``workbench`` column holds the text ``no timings available``.
    """
    return pd.DataFrame(
        [
            {
                "stage": stage,
                "workbench": "no timings available",
                "paper": PAPER_TIMING[stage],
                "segments": 0,
                "source": "none",
                "note": reason,
            }
            for stage in ("decode_s", "vsg_s", "progress_s", "total_s")
        ]
    )


def sample_run(
    model: str = samples.DEFAULT_MODEL, root: str | os.PathLike | None = None
) -> dict[str, Any]:
    """Score the sample clips (:mod:`baglm_nb.inputs.samples`) with ``model`` into a cache.

    ``root`` defaults to :func:`baglm_nb.inputs.samples.cache_root`. A clip already in the
    cache is not scored again (its recorded timings stay). Returns the summary of
    :func:`baglm_nb.models.scoring.score_dataset`.
    """
    from baglm_nb.models.scoring import ScorerSpec, score_dataset

    return score_dataset(
        samples.DATASET,
        samples.videos(),
        ScorerSpec(model),
        root=samples.cache_root() if root is None else root,
        annotations=samples.annotations(),
    )


def run_table(summary: dict[str, Any]) -> pd.DataFrame:
    """One row per video of a scoring run's summary (``score_dataset``'s, ``models.scoring``).

    Columns ``video``, ``outcome`` (``scored now``, ``already cached``, ``rescored (unreadable
    file)`` or ``failed: <error>``), ``model`` and ``label`` (``random-init`` for a tiny random
    model).
    """
    outcome: dict[str, str] = {}
    for uid in summary.get("already_cached", []):
        outcome[uid] = "already cached"
    for uid in summary.get("scored", []):
        outcome[uid] = "scored now"
    for uid in summary.get("rescored_unreadable", []):
        outcome[uid] = "rescored (unreadable file)"
    for uid, error in summary.get("failed", {}).items():
        outcome[uid] = f"failed: {error}"
    return pd.DataFrame(
        {
            "video": list(outcome),
            "outcome": list(outcome.values()),
            "model": summary.get("model", ""),
            "label": summary.get("label", "") or "-",
        }
    )


#: Why a column of :func:`timing_table` can be empty, for the line under the shown table.
_EMPTY_WHY = {
    "workbench_k10": "no timed video has the paper's example's K = {k} steps",
    "workbench_example": "the paper's example video ({uid}) was not timed here",
}


def timing_view(table: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """:func:`timing_table`'s rows as shown: a column with no value (``workbench_k10``,
    ``workbench_example``) is left out, and the line returned says why (None when none is)."""
    empty = [c for c in _EMPTY_WHY if c in table.columns and table[c].isna().all()]
    if not empty:
        return table, None
    k, uid = int(PAPER_TIMING["example_num_steps"]), PAPER_TIMING["example_uid"]
    why = "; ".join(f"{c}: {_EMPTY_WHY[c].format(k=k, uid=uid)}" for c in empty)
    return table.drop(columns=empty), f"Columns left out, having no value: {why}."
