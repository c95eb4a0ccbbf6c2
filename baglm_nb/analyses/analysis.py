"""Ablation sweeps, breakdowns and timing summaries behind notebooks 04, 05, 07 and 08.

Every function returns a pandas DataFrame (one row per number) with the workbench's value
beside the paper's (``paper``, NaN where the paper reports none) and the observation
``source`` (``simulated`` for the CPU default). Rows that the inputs cannot fill (no next-step
scores, no second dependency cache, no binary-prompt scores, no timings) are *slot rows*: the
paper's value, an empty ``workbench`` and a ``note`` starting with ``slot:`` that says which
input fills it (:func:`baglm_nb.analyses.reports.slot_row`).

R@1 breakdowns (temporal position, number of candidate steps) are flat means over the
evaluable (video, step) pairs of each group, as the paper's appendix computes them on HT-Step.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from baglm_nb.analyses.paper import (
    PAPER_POSITION,
    PAPER_PROMPT_QUERIES,
    PAPER_TIMING,
    paper_value,
)
from baglm_nb.analyses.reports import DATASET_NAMES, METHOD_NAMES, slot_row, title_for
from baglm_nb.core import sources
from baglm_nb.core.evaluation import evaluate, pair_hits
from baglm_nb.core.observations import Observations, from_simulation
from baglm_nb.core.pipeline import run_baglm
from baglm_nb.core.simulate import SimulationParams
from baglm_nb.inputs import grid
from baglm_nb.inputs.datasets import Video, load_dataset
from baglm_nb.stores.scores import ScoreCache

__all__ = [
    "TIMING_ORDER",
    "breakdown_hits",
    "breakdown_tables",
    "candidate_steps_table",
    "llm_table",
    "no_timings_table",
    "position_table",
    "prior_table",
    "prompt_table",
    "qualitative_case",
    "segment_duration_table",
    "sensitivity_table",
    "stepping_table",
    "timing_summary",
    "timing_table",
    "timing_tables",
    "vsg_from_cache",
]

#: Timing columns in the order the figure stacks them (others follow, alphabetically).
TIMING_ORDER = ("decode_s", "vsg_s", "progress_s")


# ------------------------------------------------------------------------------------------
# observation and dependency sources


def vsg_from_cache(path: str | os.PathLike) -> tuple[str, str, dict[str, np.ndarray]]:
    """Per-second VSG rows of every video of a score cache; progress is not needed.

    Returns ``(dataset, label, {uid: (T, K+1) array})``; used for off-the-shelf comparisons
    such as the binary prompt, whose caches may hold no progress scores.
    """
    cache = ScoreCache.open(Path(path))
    key = cache.key
    rows = {u: grid.per_second(s.vsg, key.segment_duration) for u, s in cache.read_all().items()}
    return key.dataset, key.source_label, rows


# ------------------------------------------------------------------------------------------
# ablations (notebook 04)


def _result(obs: Observations, method: str, value: float, paper: float, note: str = "", **kw):
    return {
        "dataset": DATASET_NAMES.get(obs.dataset, obs.dataset),
        "method": method,
        "workbench": round(float(value), 1),
        "paper": paper,
        "videos": len(obs.vsg),
        "source": obs.label,
        "note": note,
        **kw,
    }


def _baglm(obs: Observations, deps: Any, videos: list[Video], **kwargs) -> float:
    return evaluate(obs.dataset, run_baglm(obs, deps, videos=videos, **kwargs), videos)


def prior_table(observations: Iterable[Observations], deps: Any = "oracle") -> pd.DataFrame:
    """Tab. prior: the state prior divided out in the update.

    Rows per dataset: 1) the LMM's next-step scores (only when the source has them, else a
    slot row), 2) the uniform prior propagated through the transition model, 3) uniform
    ``1/(K+1)`` (published). ``deps`` as in :func:`deps_source`.
    """
    rows = []
    for obs in observations:
        d = sources.dependencies(deps, obs.dataset)
        videos = obs.videos
        name = "1) next-step scores (pi_next)"
        if obs.next_step and d is not None:
            rows.append(
                _result(
                    obs,
                    name,
                    _baglm(obs, d, videos, prior="next_step"),
                    paper_value("prior_next_step", obs.dataset),
                )
            )
        else:
            why = (
                f"the {obs.label} source has no next-step (pi_next) scores"
                if not obs.next_step
                else "no dependency source for this dataset"
            )
            rows.append(
                slot_row(obs.dataset, name, paper_value("prior_next_step", obs.dataset), why)
            )
        for label, prior, key in (
            ("2) propagated", "propagated", "prior_propagated"),
            ("3) uniform 1/(K+1)", "uniform", "both"),
        ):
            if d is None:
                rows.append(
                    slot_row(
                        obs.dataset,
                        label,
                        paper_value(key, obs.dataset),
                        "no dependency source for this dataset",
                    )
                )
                continue
            value = _baglm(obs, d, videos, prior=prior)
            rows.append(
                _result(
                    obs,
                    label,
                    value,
                    paper_value(key, obs.dataset),
                    note=f"D={sources.label_of(d)}",
                )
            )
    return pd.DataFrame(rows)


def _paper_key_for_llm(name: str) -> str | None:
    low = name.lower()
    if "gpt-4.1-mini" in low or "gpt4.1-mini" in low:
        return "gpt-4.1-mini"
    if "llama" in low:
        return "both"
    return None


def llm_table(
    observations: Iterable[Observations], llms: Mapping[str, Mapping[str, Any]]
) -> pd.DataFrame:
    """Tab. LLM: BaGLM with the dependency matrices of two (or more) LLMs.

    ``llms`` maps an LLM's display name to ``{dataset: dependency-cache folder}``; a dataset
    without a cache for an LLM gets a slot row. The paper's column is filled for names that
    contain ``llama`` (LLaMA-3.3-70B) or ``gpt-4.1-mini``.
    """
    rows = []
    for obs in observations:
        videos = obs.videos
        for name, caches in llms.items():
            key = _paper_key_for_llm(name)
            paper = paper_value(key, obs.dataset) if key else float("nan")
            d = sources.dependencies(dict(caches or {}), obs.dataset)
            if d is None:
                rows.append(
                    slot_row(
                        obs.dataset,
                        name,
                        paper,
                        f"pass a {name} dependency cache (02_dependencies) for {obs.dataset}",
                    )
                )
                continue
            rows.append(_result(obs, name, _baglm(obs, d, videos), paper))
    return pd.DataFrame(rows)


def prompt_table(
    observations: Iterable[Observations],
    binary: Mapping[str, str | os.PathLike | Mapping[str, np.ndarray]] | None = None,
) -> pd.DataFrame:
    """Tab. prompt: the off-the-shelf LMM with the multiple-choice vs the binary VSG prompt.

    ``observations`` give the multiple-choice rows; ``binary`` maps a dataset to a score-cache
    folder of binary-prompt scores (or a mapping uid -> per-second VSG rows). Without one the
    binary row is a slot. When both exist, both are evaluated on the videos they share.
    """
    binary = binary or {}
    rows = []
    for obs in observations:
        mc_paper = paper_value("off_the_shelf", obs.dataset)
        bin_paper = paper_value("binary_prompt", obs.dataset)
        mc_name, bin_name = "multiple choice (pi_VSG)", "binary (pi_VSG^bin)"
        if obs.dataset not in binary:
            videos = obs.videos
            value = evaluate(obs.dataset, {v.uid: obs.vsg[v.uid] for v in videos}, videos)
            rows.append(
                _result(
                    obs,
                    mc_name,
                    value,
                    mc_paper,
                    queries_per_segment=PAPER_PROMPT_QUERIES["multiple_choice"],
                )
            )
            rows.append(
                slot_row(
                    obs.dataset,
                    bin_name,
                    bin_paper,
                    f"pass a binary-prompt score cache for {obs.dataset}",
                    queries_per_segment=PAPER_PROMPT_QUERIES["binary"],
                )
            )
            continue
        value = binary[obs.dataset]
        if isinstance(value, Mapping):
            bin_label, bin_rows = obs.label, dict(value)
        else:
            _, bin_label, bin_rows = vsg_from_cache(value)
        videos = [v for v in obs.videos if v.uid in bin_rows]
        if not videos:
            raise ValueError(f"the binary-prompt scores share no video with {obs.dataset}")
        mc = evaluate(obs.dataset, {v.uid: obs.vsg[v.uid] for v in videos}, videos)
        bi = evaluate(obs.dataset, {v.uid: bin_rows[v.uid] for v in videos}, videos)
        for name, val, paper, label, q in (
            (mc_name, mc, mc_paper, obs.label, "multiple_choice"),
            (bin_name, bi, bin_paper, bin_label, "binary"),
        ):
            row = _result(obs, name, val, paper, queries_per_segment=PAPER_PROMPT_QUERIES[q])
            row.update(videos=len(videos), source=label)
            rows.append(row)
    return pd.DataFrame(rows)


def stepping_table(observations: Iterable[Observations], deps: Any = "oracle") -> pd.DataFrame:
    """Per-second vs per-segment stepping (a new ablation; the paper does not report it).

    The published code steps the filter once per second row, so each 2-s segment's observation
    is applied twice; the paper's equations step once per segment. The paper's numbers come
    from the published code, so only the per-second row has a paper value.
    """
    rows = []
    for obs in observations:
        d = sources.dependencies(deps, obs.dataset)
        videos = obs.videos
        for label, stepping, paper, note in (
            (
                "per second (published code)",
                "second",
                paper_value("both", obs.dataset),
                "the published code's undocumented choice",
            ),
            (
                "per segment (paper's equations)",
                "segment",
                float("nan"),
                "new ablation: not reported in the paper",
            ),
        ):
            if d is None:
                rows.append(slot_row(obs.dataset, label, paper, "no dependency source"))
                continue
            value = _baglm(obs, d, videos, stepping=stepping)
            rows.append(_result(obs, label, value, paper, note=note))
    return pd.DataFrame(rows)


def segment_duration_table(
    datasets: Iterable[str],
    durations: Sequence[int] = (1, 2, 3, 4),
    *,
    deps: Any = "oracle",
    params: SimulationParams | None = None,
    limit: int | None = None,
    caches: Iterable[str | os.PathLike] = (),
) -> pd.DataFrame:
    """Fig. segment duration x LMM: BaGLM and the off-the-shelf model per segment duration.

    The simulated source is rebuilt at every duration (``SimulationParams(segment_duration=d)``)
    for every dataset in ``datasets``; each score-cache folder in ``caches`` adds one point
    (its dataset, model and segment duration are read from its key). The paper gives numbers
    only for InternVL2.5-8B at 2 s (the main table); other points of its figure are not stated.

    Returns
    -------
    DataFrame
        ``dataset, source, segment_duration, method, workbench, paper, videos``.
    """
    params = SimulationParams() if params is None else params
    observed: list[Observations] = []
    for name in datasets:
        videos = sources.select_videos(name, limit)
        for d in durations:
            p = replace(params, segment_duration=int(d))
            observed.append(from_simulation(name, p, videos=videos))
    for folder in caches:
        dataset = ScoreCache.open(Path(folder)).key.dataset
        observed.append(sources.observations(dataset, folder, limit=limit))
    rows = []
    for obs in observed:
        dep = sources.dependencies(deps, obs.dataset)
        videos = obs.videos
        off = evaluate(obs.dataset, {v.uid: obs.vsg[v.uid] for v in videos}, videos)
        values = {"off_the_shelf": off}
        values["baglm"] = _baglm(obs, dep, videos) if dep is not None else float("nan")
        for key in ("baglm", "off_the_shelf"):
            rows.append(
                {
                    "dataset": DATASET_NAMES.get(obs.dataset, obs.dataset),
                    "source": obs.label,
                    "segment_duration": obs.segment_duration,
                    "method": METHOD_NAMES[key],
                    "workbench": round(values[key], 1),
                    "paper": paper_value(key, obs.dataset) if obs.segment_duration == 2 else np.nan,
                    "videos": len(videos),
                }
            )
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------
# sensitivity and breakdowns (notebook 05)


def sensitivity_table(
    dataset: str,
    signals: Sequence[float],
    *,
    deps: Any = "oracle",
    params: SimulationParams | None = None,
    limit: int | None = None,
) -> pd.DataFrame:
    """BaGLM's gain over the off-the-shelf model as the simulated signal strength varies.

    A figure the paper does not have: for each ``signal`` the simulated source is rebuilt
    (other parameters from ``params``) and both methods are evaluated. The paper's columns
    repeat its InternVL2.5-8B numbers as a reference level (they belong to no signal value).

    Returns
    -------
    DataFrame
        ``dataset, signal, off_the_shelf, baglm, gain, paper_off_the_shelf, paper_baglm,
        paper_gain, videos, source``.
    """
    params = SimulationParams() if params is None else params
    videos = sources.select_videos(dataset, limit)
    dep = sources.dependencies(deps, dataset)
    p_off, p_bag = paper_value("off_the_shelf", dataset), paper_value("baglm", dataset)
    rows = []
    for signal in signals:
        obs = from_simulation(dataset, replace(params, signal=float(signal)), videos=videos)
        off = evaluate(dataset, obs.vsg, videos)
        bag = _baglm(obs, dep, videos) if dep is not None else float("nan")
        rows.append(
            {
                "dataset": DATASET_NAMES.get(dataset, dataset),
                "signal": float(signal),
                "off_the_shelf": round(off, 1),
                "baglm": round(bag, 1),
                "gain": round(bag - off, 1),
                "paper_off_the_shelf": p_off,
                "paper_baglm": p_bag,
                "paper_gain": round(p_bag - p_off, 1),
                "videos": len(videos),
                "source": obs.label,
            }
        )
    return pd.DataFrame(rows)


def breakdown_hits(
    dataset: str,
    beliefs: Mapping[str, Mapping[str, np.ndarray]],
    videos: Sequence[Video] | None = None,
) -> pd.DataFrame:
    """:func:`~baglm_nb.core.evaluation.pair_hits` of several methods, stacked.

    ``beliefs`` maps a method key (``baglm``, ``off_the_shelf`` or any name) to its
    ``{uid: (T, K+1) array}``. Adds a ``method`` column with the display name.
    """
    videos = load_dataset(dataset) if videos is None else videos
    frames = []
    for key, rows in beliefs.items():
        hits = pair_hits(dataset, rows, videos)
        hits.insert(0, "method", METHOD_NAMES.get(key, key))
        frames.append(hits)
    return pd.concat(frames, ignore_index=True)


def _method_key(name: str) -> str:
    return {v: k for k, v in METHOD_NAMES.items()}.get(name, name)


def position_table(
    dataset: str, hits: pd.DataFrame, *, bins: int = 5, source: str = "simulated"
) -> pd.DataFrame:
    """R@1 by the temporal position of the step (Tab. htstep_step_position).

    A step's position is its first annotated start over the video's duration (``position`` of
    :func:`~baglm_nb.core.evaluation.pair_hits`); positions go into ``bins`` equal bins over [0, 1]
    (1.0 falls in the last). ``hits`` comes from :func:`breakdown_hits`.

    Returns
    -------
    DataFrame
        ``dataset, method, bin, range, workbench, paper, pairs, source``.
    """
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    b = np.minimum((hits["position"].to_numpy() * bins).astype(int), bins - 1)
    frame = hits.assign(bin=b)
    rows = []
    for method, sub in frame.groupby("method", sort=False):
        paper = PAPER_POSITION.get(dataset, {}).get(_method_key(str(method)))
        for i in range(bins):
            in_bin = sub[sub["bin"] == i]
            rows.append(
                {
                    "dataset": DATASET_NAMES.get(dataset, dataset),
                    "method": method,
                    "bin": f"bin {i}",
                    "range": f"{i / bins:.1f}-{(i + 1) / bins:.1f}",
                    "workbench": round(in_bin["hit"].mean() * 100, 1) if len(in_bin) else np.nan,
                    "paper": paper[i] if paper is not None and bins == len(paper) else np.nan,
                    "pairs": len(in_bin),
                    "source": source,
                }
            )
    return pd.DataFrame(rows)


def candidate_steps_table(
    dataset: str, hits: pd.DataFrame, *, source: str = "simulated"
) -> pd.DataFrame:
    """R@1 by the number of candidate steps K of the video's task (Fig. recall by step count).

    The paper shows this as a figure without numbers, so ``paper`` is NaN.

    Returns
    -------
    DataFrame
        ``dataset, method, num_steps, videos, pairs, workbench, paper, source``.
    """
    grouped = hits.groupby(["method", "num_steps"], sort=False).agg(
        videos=("video_uid", "nunique"), pairs=("hit", "size"), recall=("hit", "mean")
    )
    out = grouped.reset_index().sort_values(["method", "num_steps"], kind="stable")
    out["workbench"] = (out.pop("recall") * 100).round(1)
    out.insert(0, "dataset", DATASET_NAMES.get(dataset, dataset))
    out["paper"] = np.nan
    out["source"] = source
    order = list(dict.fromkeys(hits["method"]))
    out["_o"] = out["method"].map(order.index)
    return out.sort_values(["_o", "num_steps"]).drop(columns="_o").reset_index(drop=True)


def breakdown_tables(
    obs: Observations, deps: Any = "oracle", *, bins: int = 5
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Position and candidate-step breakdowns of BaGLM and the off-the-shelf model on ``obs``.

    Runs the filter once over ``obs`` (``deps`` as in :func:`deps_source`; a mapping without
    the dataset raises) and returns ``(position_table, candidate_steps_table)``.
    """
    d = sources.dependencies(deps, obs.dataset)
    if d is None:
        raise KeyError(f"no dependency source for {obs.dataset}; pass one in deps")
    videos = obs.videos
    beliefs = run_baglm(obs, d, videos=videos)
    hits = breakdown_hits(
        obs.dataset,
        {"off_the_shelf": {v.uid: obs.vsg[v.uid] for v in videos}, "baglm": beliefs},
        videos,
    )
    return (
        position_table(obs.dataset, hits, bins=bins, source=obs.label),
        candidate_steps_table(obs.dataset, hits, source=obs.label),
    )


# ------------------------------------------------------------------------------------------
# timings (notebook 07)


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
    frame: pd.DataFrame, videos: Sequence[Video], *, segment_duration: float = 2.0
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


def timing_tables(folder: str | os.PathLike | None) -> dict[str, Any]:
    """Everything notebook ``07_timing`` shows, from a score cache with per-segment timings.

    Returns a dict with ``table`` (:func:`timing_table`, or :func:`no_timings_table` when
    ``folder`` is None or its cache recorded no timings), ``summary`` (:func:`timing_summary`,
    or None), ``source``, ``dataset``, ``segment_duration`` and ``message`` (what was found).
    """
    empty = {"summary": None, "source": "none", "dataset": None, "segment_duration": 2}
    if folder is None:
        reason = "no score cache given (parameter `timings`)"
        return {
            **empty,
            "table": no_timings_table(reason),
            "message": f"No timings available: {reason}; none are invented.",
        }
    cache = ScoreCache.open(Path(folder))
    key = cache.key
    source = key.source_label
    frame = cache.timings_frame()
    if not _timing_columns(frame) and "total_s" not in frame.columns:
        reason = f"the score cache {cache.path} recorded no per-segment timings ({source})"
        return {
            **empty,
            "table": no_timings_table(reason),
            "dataset": key.dataset,
            "message": f"No timings available: {reason}; none are invented.",
        }
    videos = load_dataset(key.dataset)
    d = key.segment_duration
    summary = timing_summary(frame, videos, segment_duration=d)
    return {
        "table": timing_table(frame, videos, source=source),
        "summary": summary,
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


# ------------------------------------------------------------------------------------------
# qualitative belief plots (notebook 08)


def qualitative_case(
    dataset: str,
    uid: str,
    *,
    scores: Mapping[str, str | os.PathLike] | None = None,
    deps: Any = "oracle",
    video_dir: str | os.PathLike | None = None,
    keyframes: int = 4,
) -> tuple[Any, dict]:
    """One video's belief plot (Fig. qualitative) and a summary row.

    Observations come from ``scores[dataset]`` when given, else the simulation. Keyframes are
    decoded from ``<video_dir>/<uid>.<ext>`` at the times
    :func:`~baglm_nb.analyses.plots.keyframe_times` picks, when that file exists.

    Returns
    -------
    (Figure, dict)
        The figure and a row ``dataset, video, task, K, baglm, off_the_shelf, keyframes,
        source`` (per-video R@1 in percent).
    """
    from baglm_nb.analyses.plots import belief_figure, keyframe_times
    from baglm_nb.core.evaluation import video_hits
    from baglm_nb.inputs.video import find_video_file, frames_at

    video = next((v for v in load_dataset(dataset) if v.uid == uid), None)
    if video is None:
        raise KeyError(f"video {uid!r} is not in {dataset}")
    obs = sources.observations(dataset, scores or {}, videos=[video])
    if uid not in obs.vsg:
        raise KeyError(f"video {uid!r} is not in the score cache {scores[dataset]}")
    d = sources.dependencies(deps, dataset)
    d = "none" if d is None else d
    beliefs = run_baglm(obs, d, videos=[video])[uid]
    raw = obs.vsg[uid]
    path = find_video_file(video_dir, uid)
    frames = frames_at(path, keyframe_times(beliefs, raw, keyframes)) if path else None
    what = f"{DATASET_NAMES.get(dataset, dataset)} {uid}: {video.goal}"
    fig = belief_figure(video, beliefs, raw, title=title_for(what, obs.label), keyframes=frames)

    def r1(rows: np.ndarray) -> float:
        _, hits = video_hits(video, rows)
        return round(float(hits.mean() * 100), 1) if len(hits) else float("nan")

    row = {
        "dataset": DATASET_NAMES.get(dataset, dataset),
        "video": uid,
        "task": video.goal,
        "K": video.num_steps,
        "baglm": r1(beliefs),
        "off_the_shelf": r1(raw),
        "keyframes": len(frames) if frames else 0,
        "source": obs.label,
    }
    return fig, row
