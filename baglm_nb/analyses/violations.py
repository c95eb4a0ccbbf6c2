"""Robustness of dependency matrices: the paper's "dependency violations" table (appendix).

:func:`violations` binarises a source of D at each threshold t as ``D >= t`` (so t = 0 keeps every
pair, and a source without exact ones keeps none at t = 1, as in the paper's table). A dependency
D[i, j] (step j prerequisite of step i) is *violated* when, in some video of its task where both
steps occur, step j does not occur strictly before step i: ``first(j) >= first(i)`` with
``first`` the earliest annotated start of the step's text. See :func:`violations` for the unit of
a "task", the diagonal and why these conventions reproduce the paper's numbers exactly.

Exports :data:`THRESHOLDS`, :func:`violations` (one source), :func:`violations_table` (the
paper's layout, with the paper's rows beside the workbench's), :func:`violation_report`
(several sources on the groups they all hold), :func:`answer_table` (how binary each source's
answers are), and the calibration of the simulated LLM's
presets to the paper's table (:mod:`baglm_nb.core.simulate_deps`): :func:`preset_loss`,
:func:`fit_preset` with :class:`PresetFit`.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from baglm_nb.analyses.result_table import ResultTable
from baglm_nb.core import simulate_deps, sources
from baglm_nb.inputs.datasets import Video, dataset_version, load_dataset
from baglm_nb.inputs.grid import first_starts
from baglm_nb.inputs.paper import PAPER_VIOLATIONS, PAPER_VIOLATIONS_DATASET
from baglm_nb.stores.dependencies import DependencyCache

__all__ = [
    "FIT_STARTS",
    "THRESHOLDS",
    "TASK_WEIGHT",
    "PresetFit",
    "answer_table",
    "fit_preset",
    "preset_loss",
    "violation_report",
    "violations",
    "violations_table",
]

THRESHOLDS: tuple[float, ...] = tuple(round(0.1 * i, 1) for i in range(11))
"""The paper's thresholds 0.0, 0.1, ..., 1.0."""


def _first_times(video: Video) -> dict[str, float]:
    """The first annotated start of each step text (duplicate texts share it)."""
    first: dict[str, float] = {}
    for column, start in first_starts(video).items():
        text = video.steps[column]
        first[text] = min(first.get(text, math.inf), start)
    return first


def violations(
    deps: sources.DependencySource,
    dataset: str | Sequence[Video],
    thresholds: Sequence[float] = THRESHOLDS,
    *,
    scope: str = "group",
    include_diagonal: bool = True,
    source: str | None = None,
) -> pd.DataFrame:
    """The paper's dependency-violation table for one source of D (appendix, HT-Step).

    Parameters
    ----------
    deps
        Any deps setting of :mod:`baglm_nb.core.sources`: ``"oracle"``
        (each video's ground-truth chain), ``"none"``, a :class:`DependencyCache` (LLM or
        imported), or a mapping group (or uid) -> (K, K) matrix.
    dataset
        A dataset name or a sequence of :class:`~baglm_nb.inputs.datasets.Video` records.
    thresholds
        D is binarised as ``D >= t`` for each t (default 0.0, 0.1, ..., 1.0).
    scope
        What a "task" is. ``"group"`` (default): the dependency-matrix group (HT-Step:
        activity + variation, 150 groups); a group's dependencies are checked against the
        group's videos. This is what the paper's percentages are fractions of (its "tasks
        with a violation" are multiples of 1/150). ``"task"``: :attr:`Video.task` (HT-Step:
        the 120 activities); every group's dependencies are checked against all videos of its
        task, steps matched by text.
    include_diagonal
        Count the K diagonal pairs D[i, i] as dependencies (default, as the paper's numbers
        do: a step is never strictly before itself, so a kept diagonal entry is violated
        whenever the step occurs). ``False`` leaves them out.
    source
        A label for the ``source`` column (default: ``deps`` when it is a string, else the
        cache's model name, else ``"matrix"``).

    Returns
    -------
    pandas.DataFrame
        One row per threshold: ``threshold``, ``dependencies`` (kept pairs, pooled over all
        tasks), ``violated``, ``violated_pct`` (violated / dependencies x 100; 0.0 when none
        are kept, as the paper prints), ``tasks``, ``tasks_with_violation``,
        ``tasks_violated_pct``, ``source``.

    Notes
    -----
    A kept dependency D[i, j] (step j is a prerequisite of step i) is violated if, in any
    video of its task where both step texts occur, step j's first occurrence is not strictly
    before step i's: ``first(j) >= first(i)``, ``first`` = earliest annotated start of that
    text. Videos lacking either step say nothing. Per video, a per-video source (the oracle)
    contributes its own matrix; the group's dependencies are the union over its videos
    (``max`` over their matrices, then ``>= t``). Each ordered index pair of a group counts
    once (duplicate step texts count as separate pairs and share occurrences). With these
    conventions the threshold-0 row on HT-Step is 26.1 % / 100.0 %, the paper's value for
    both LLMs (which at t = 0 depends only on the annotations).
    """
    if scope not in ("group", "task"):
        raise ValueError(f"scope must be 'group' or 'task', got {scope!r}")
    videos = load_dataset(dataset) if isinstance(dataset, str) else list(dataset)
    if not videos:
        raise ValueError("no videos")
    resolved = sources.dependencies(videos[0].dataset, deps)
    if resolved is None:
        raise ValueError(f"no dependency source for {videos[0].dataset}")
    source = resolved.label if source is None else source
    if isinstance(dataset, str):  # the whole file: its masks are remembered per version
        masks = _whole_masks(dataset_version(dataset), scope)
    else:
        masks = _group_masks(videos, scope)
    groups = [
        (unit, _union(vs, resolved, include_diagonal), violated) for vs, unit, violated in masks
    ]
    units = sorted({unit for unit, _, _ in groups})
    rows = _threshold_rows([float(t) for t in thresholds], groups, units)
    return pd.DataFrame([{**row, "source": source} for row in rows])


def _group_masks(videos: list[Video], scope: str) -> list[tuple[list[Video], str, np.ndarray]]:
    """Per group: (its videos, its unit, the "violated if kept" mask), which do not depend on D.

    The mask is checked against the videos of the group's unit (the group, or its task with
    ``scope="task"``).
    """
    by_group: dict[str, list[Video]] = {}
    by_task: dict[str, list[Video]] = {}
    for v in videos:
        by_group.setdefault(v.group, []).append(v)
        by_task.setdefault(v.task, []).append(v)
    firsts = {v.uid: _first_times(v) for v in videos}
    masks = []
    for g, vs in by_group.items():
        steps = vs[0].steps
        for v in vs:
            if v.steps != steps:
                raise ValueError(f"group {g!r}: videos {vs[0].uid!r} and {v.uid!r} differ in steps")
        check = vs if scope == "group" else by_task[vs[0].task]
        times = np.array([[firsts[w.uid].get(s, math.inf) for s in steps] for w in check])
        present = np.isfinite(times)
        # bad[w, i, j]: both present in w and not first(j) < first(i)
        bad = present[:, :, None] & present[:, None, :] & ~(times[:, None, :] < times[:, :, None])
        violated = bad.any(axis=0)
        violated.setflags(write=False)
        masks.append((vs, g if scope == "group" else vs[0].task, violated))
    return masks


@functools.lru_cache(maxsize=8)
def _whole_masks(version: tuple, scope: str) -> list[tuple[list[Video], str, np.ndarray]]:
    """:func:`_group_masks` of a whole annotation file, remembered per ``version``: a preset fit
    (:func:`fit_preset`) checks many matrices against the same annotations."""
    return _group_masks(load_dataset(version[0].name), scope)


def _union(vs: list[Video], resolved: Any, include_diagonal: bool) -> np.ndarray:
    """The group's matrix: the ``max`` over its videos' (``-inf`` on the diagonal when it is
    left out)."""
    k = vs[0].num_steps
    d = np.zeros((k, k))
    for v in vs:
        d = np.maximum(d, resolved.matrix(v))
    if not include_diagonal:
        np.fill_diagonal(d, -np.inf)  # d is this function's own array
    return d


def _threshold_rows(
    thresholds: list[float], groups: list[tuple[str, np.ndarray, np.ndarray]], units: list[str]
) -> list[dict[str, Any]]:
    """The counts of each threshold, pooled over the groups (unit, union matrix, mask)."""
    ts = np.asarray(thresholds, dtype=np.float64)[:, None, None]
    kept = np.zeros(len(thresholds), dtype=np.int64)
    violated_n = np.zeros(len(thresholds), dtype=np.int64)
    unit_bad = {unit: np.zeros(len(thresholds), dtype=bool) for unit in units}
    for unit, d, violated in groups:
        keep = d[None] >= ts  # (thresholds, K, K)
        n_bad = (keep & violated).sum(axis=(1, 2))
        kept += keep.sum(axis=(1, 2))
        violated_n += n_bad
        unit_bad[unit] |= n_bad > 0
    n_units = len(units)
    rows = []
    for i, t in enumerate(thresholds):
        kept_i, bad_i = int(kept[i]), int(violated_n[i])
        n_bad_units = sum(bool(bad[i]) for bad in unit_bad.values())
        rows.append(
            {
                "threshold": t,
                "dependencies": kept_i,
                "violated": bad_i,
                "violated_pct": 100.0 * bad_i / kept_i if kept_i else 0.0,
                "tasks": n_units,
                "tasks_with_violation": n_bad_units,
                "tasks_violated_pct": 100.0 * n_bad_units / n_units,
            }
        )
    return rows


def violations_table(
    results: Mapping[str, pd.DataFrame], decimals: int = 1, *, paper: bool = False
) -> pd.DataFrame:
    """The paper's layout: rows (metric, source), one column per threshold, rounded.

    ``results`` maps a source label to a :func:`violations` frame. With ``paper`` (HT-Step,
    ``scope="group"``: what the paper's table is), each metric's rows are followed by the
    paper's two rows, ``source`` ``"paper: <LLM>"``, at the same thresholds
    (:data:`~baglm_nb.inputs.paper.PAPER_VIOLATIONS`; NaN at a threshold it does not print).
    """
    rows = []
    for metric, col in (
        ("Violated dependencies (%)", "violated_pct"),
        ("Tasks w/ violation (%)", "tasks_violated_pct"),
    ):
        thresholds: list[float] = []
        for label, df in results.items():
            row: dict[str, Any] = {"metric": metric, "source": label}
            for t, v in zip(df["threshold"], df[col], strict=True):
                row[f"{t:.2f}"] = round(float(v), decimals)
                thresholds.append(float(t))
            rows.append(row)
        if paper:
            rows += _paper_rows(metric, col, list(dict.fromkeys(thresholds)))
    return pd.DataFrame(rows)


def _paper_rows(metric: str, col: str, thresholds: Sequence[float]) -> list[dict[str, Any]]:
    """The paper's rows of one metric at ``thresholds`` (NaN where it prints no value)."""
    rows = []
    for llm, values in PAPER_VIOLATIONS[col].items():
        printed = {round(t, 6): v for t, v in zip(THRESHOLDS, values, strict=True)}
        row: dict[str, Any] = {"metric": metric, "source": f"paper: {llm}"}
        for t in thresholds:
            row[f"{t:.2f}"] = printed.get(round(t, 6), float("nan"))
        rows.append(row)
    return rows


def violation_report(
    dataset: str,
    specs: Sequence[sources.DependencySource],
    *,
    root: str | os.PathLike | None = None,
    group_limit: int | None = None,
    thresholds: Sequence[float] = THRESHOLDS,
    scope: str = "group",
) -> tuple[ResultTable, ResultTable]:
    """The violation table of several sources over the same videos.

    Every source is evaluated on the videos of the groups that all cache sources hold (and,
    with ``group_limit``, only the first ``group_limit`` task groups of the dataset), so the
    rows compare like with like. ``specs`` are deps settings of :mod:`baglm_nb.core.sources`.

    Returns
    -------
    (table, long)
        ``table``: the paper's layout (:func:`violations_table`), with the paper's rows for
        HT-Step at ``scope="group"``; ``long``: the :func:`violations` rows of every source,
        concatenated. Both without items; their dependency sources are ``specs``'.
    """
    videos = load_dataset(dataset)
    keys = list(dict.fromkeys(v.group for v in videos))
    if group_limit is not None:
        keys = keys[:group_limit]
    opened = [sources.dependencies(dataset, s, root=root) for s in specs]
    selected = set(keys)
    for dep in opened:
        if isinstance(dep.source, DependencyCache):
            selected &= set(dep.source.groups())
    chosen = [v for v in videos if v.group in selected]
    if not chosen:
        raise ValueError(f"no group of {dataset!r} has a matrix in every source")
    frames = {dep.label: violations(dep, chosen, thresholds, scope=scope) for dep in opened}
    paper = dataset == PAPER_VIOLATIONS_DATASET and scope == "group"
    table = ResultTable.of(violations_table(frames, paper=paper), dependencies=list(frames))
    long = pd.concat(frames.values(), ignore_index=True)
    return table, ResultTable.of(long, dependencies=list(frames))


def answer_table(
    dataset: str, specs: Sequence[sources.DependencySource], *, group_limit: int | None = None
) -> ResultTable:
    """How each source's D values are spread: exact 0, exact 1, or graded (in percent).

    One matrix per group of ``dataset`` (the first ``group_limit`` task groups), the first
    video's for a per-video source (the oracle). The paper describes LLaMA-3.3-70B's answers
    as "mostly binary" and GPT-4.1-mini's as graded.

    Returns
    -------
    ResultTable
        ``source, matrices, entries, exact_0_pct, exact_1_pct, graded_pct, mean``; no items.
    """
    videos = load_dataset(dataset)
    firsts: dict[str, Video] = {}
    for v in videos:
        firsts.setdefault(v.group, v)
    chosen = list(firsts.values())[:group_limit]
    rows = []
    for spec in specs:
        dep = sources.dependencies(dataset, spec)
        values = np.concatenate([np.ravel(dep.matrix(v)) for v in chosen])
        n = values.size
        zeros, ones = int((values == 0).sum()), int((values == 1).sum())
        rows.append(
            {
                "source": dep.label,
                "matrices": len(chosen),
                "entries": n,
                "exact_0_pct": round(100 * zeros / n, 1),
                "exact_1_pct": round(100 * ones / n, 1),
                "graded_pct": round(100 * (n - zeros - ones) / n, 1),
                "mean": round(float(values.mean()), 3),
            }
        )
    return ResultTable.of(pd.DataFrame(rows), dependencies=[r["source"] for r in rows])


# ------------------------------------------------------------------------------------------
# calibration of the simulated LLM's presets (baglm_nb.core.simulate_deps)

#: Weight of the task-level curve in :func:`preset_loss` (its values are multiples of 1/150
#: and move in steps, so the pair-level curve leads).
TASK_WEIGHT = 0.3

#: Fixed Nelder-Mead starting points ``(weight, bias, noise, spread)`` of :func:`fit_preset`.
FIT_STARTS: tuple[tuple[float, float, float, float], ...] = (
    (6.0, -7.0, 6.0, 0.5),
    (6.0, -7.0, 6.0, 1.0),
    (4.0, -4.0, 3.0, 1.0),
    (10.0, -6.0, 6.0, 1.5),
    (15.0, -6.0, 10.0, 0.8),
    (3.0, -3.0, 2.0, 1.5),
)


def preset_loss(
    preset: simulate_deps.LLMPreset, videos: Sequence[Video] | None = None, seed: int = 0
) -> tuple[float, pd.DataFrame]:
    """How far a preset's HT-Step violation curves are from the paper's, and the curves.

    The loss is the sum over the thresholds 0.1 .. 1.0 of the squared differences (in points)
    of the violated-dependency percentage, plus :data:`TASK_WEIGHT` times those of the
    percentage of tasks with a violation, against the paper's row of ``preset.llm``
    (:data:`~baglm_nb.inputs.paper.PAPER_VIOLATIONS`; threshold 0 depends on the
    annotations only). ``videos`` defaults to all of HT-Step (the paper's 150 groups).
    """
    dataset = PAPER_VIOLATIONS_DATASET
    matrices = simulate_deps.simulated_dependencies(dataset, preset, seed, videos=videos)
    frame = violations(matrices, dataset if videos is None else list(videos), source=preset.label)
    loss = 0.0
    for col, weight in (("violated_pct", 1.0), ("tasks_violated_pct", TASK_WEIGHT)):
        paper = np.asarray(PAPER_VIOLATIONS[col][preset.llm], dtype=np.float64)
        ours = frame[col].to_numpy()
        loss += weight * float(((ours - paper)[1:] ** 2).sum())
    return loss, frame


@dataclass(frozen=True)
class PresetFit:
    """Result of :func:`fit_preset`: the fitted preset (values rounded), its loss and curves."""

    preset: simulate_deps.LLMPreset
    loss: float
    curves: pd.DataFrame
    evaluations: int


def fit_preset(
    name: str,
    *,
    starts: Sequence[Sequence[float]] = FIT_STARTS,
    max_evaluations: int = 250,
    seed: int = 0,
) -> PresetFit:
    """Fit ``(weight, bias, noise, spread)`` of preset ``name`` to the paper's violation table.

    Nelder-Mead (scipy) from each of ``starts`` (at most ``max_evaluations`` each; negative
    ``noise`` or ``spread`` are refused), on HT-Step, seed ``seed``; the best point is rounded
    to 3 decimals and evaluated again. Deterministic: the same call gives the same values,
    which :data:`~baglm_nb.core.simulate_deps.PRESETS` stores.
    """
    from scipy.optimize import minimize

    base = simulate_deps.PRESETS[name]
    count = 0

    def objective(x: np.ndarray) -> float:
        nonlocal count
        count += 1
        if x[2] < 0 or x[3] < 0:
            return 1e9
        return preset_loss(base.with_values(x), seed=seed)[0]

    best: tuple[float, np.ndarray] | None = None
    for start in starts:
        options = {"maxfev": max_evaluations, "xatol": 0.05, "fatol": 0.5}
        result = minimize(
            objective, np.asarray(start, float), method="Nelder-Mead", options=options
        )
        if best is None or result.fun < best[0]:
            best = (float(result.fun), result.x)
    fitted = base.with_values(np.round(best[1], 3))
    loss, curves = preset_loss(fitted, seed=seed)
    return PresetFit(fitted, loss, curves, count)
