"""The paper's headline tables: dataset statistics, main results, transition model, oracles.

Notebooks ``00_dataset_statistics`` and ``03_main_results`` show them. Every R@1 table names its
observation source in the ``source`` column and its dependency source in the ``D`` column (the
oracle table also its progress source in ``progress``), as the paper's tables do, and carries
its (video, step) items (:mod:`baglm_nb.analyses.result_table`); the paper's values come from
:mod:`baglm_nb.inputs.paper`. The default D is :data:`~baglm_nb.core.sources.SIMULATED_LLM`
(the simulated LLaMA-3.3-70B, as the paper's rows use LLaMA); the oracle rows use the oracle
chain. A row whose inputs are missing is a slot row, never a different quantity under the
paper's label.

Exports :func:`dataset_table`, :func:`main_results_table`, :func:`comparison_table` (the main
results with the paper's other methods, offline and online), :func:`transition_table` and
:func:`oracle_table`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from baglm_nb.analyses.tables import (
    DATASET_NAMES,
    METHOD_NAMES,
    NOT_USED,
    ResultTable,
    TableBuilder,
    dataset_key,
    require_dependencies,
    score_baglm,
    score_raw,
)
from baglm_nb.core import sources
from baglm_nb.core.observations import Observations
from baglm_nb.inputs.datasets import DATASETS, dataset_stats
from baglm_nb.inputs.paper import PAPER_BASELINES, PAPER_STATS, RERUN_MARK, paper_value
from baglm_nb.inputs.variants import TRANSITIONS

__all__ = [
    "comparison_table",
    "DATASET_STATISTICS",
    "STATISTIC_NAMES",
    "dataset_table",
    "dataset_view",
    "main_results_table",
    "oracle_table",
    "transition_table",
]

#: Columns of the variant tables (transition model, oracles): the baseline beside each row.
_VARIANT_COLUMNS = (
    "dataset",
    "method",
    "workbench",
    "paper",
    "off_the_shelf",
    "videos",
    "source",
    "D",
)

#: The statistics of :func:`dataset_table`, in its row order (keys of
#: :func:`~baglm_nb.inputs.datasets.dataset_stats` and of the paper's figures).
DATASET_STATISTICS = ("videos", "tasks", "mean_steps", "mean_duration_s", "mean_segment_s")

#: The kinds of dependency source that may fill the paper's "LLM D" rows.
_ESTIMATED = ("llm", "matrices")


def dataset_table(names: Iterable[str] = tuple(DATASETS)) -> ResultTable:
    """Statistics of the annotation files beside the figures the paper states.

    ``workbench`` keeps each statistic's own type (counts are integers, means floats: an object
    column); ``paper`` is the paper's text, None where it states nothing (every statistic of a
    dataset the paper does not report). No items.
    """
    rows = []
    for name in names:
        stats, stated = dataset_stats(name), PAPER_STATS.get(name, {})
        for key in DATASET_STATISTICS:
            paper = stated.get(key)
            rows.append(
                {
                    "dataset": DATASET_NAMES[name],
                    "statistic": key,
                    "workbench": stats[key],
                    "paper": paper or None,
                }
            )
    columns = ["dataset", "statistic", "workbench", "paper"]
    return ResultTable.of(pd.DataFrame(rows, columns=columns, dtype=object))


#: :func:`dataset_table`'s statistics in words, with their units (what notebook 00 shows).
STATISTIC_NAMES: dict[str, str] = {
    "videos": "videos",
    "tasks": "tasks",
    "groups": "task groups",
    "mean_steps": "annotated steps per video (mean)",
    "mean_duration_s": "video duration (s, mean)",
    "mean_segment_s": "annotated step length (s, mean)",
}


def dataset_view(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`dataset_table`'s rows with each statistic in words (:data:`STATISTIC_NAMES`) and
    readable column names; the file keeps the keys."""
    view = table.assign(statistic=[STATISTIC_NAMES.get(k, k) for k in table["statistic"]])
    return view.rename(columns={"workbench": "annotation files", "paper": "paper"})


def main_results_table(
    observations: Iterable[Observations], deps: sources.DependencySource = sources.SIMULATED_LLM
) -> ResultTable:
    """Tab. comparison: BaGLM and the off-the-shelf LMM per dataset, beside the paper.

    ``deps`` is a deps setting (:mod:`baglm_nb.core.sources`); a dataset without a source
    raises ``KeyError``. The ``D`` column names it (``not used`` for the off-the-shelf row).
    """
    table = TableBuilder()
    for obs in observations:
        d = require_dependencies(deps, obs.dataset)
        for key, scored, label in (
            ("baglm", score_baglm(obs, d), d.label),
            ("off_the_shelf", score_raw(obs), NOT_USED),
        ):
            paper = paper_value(key, obs.dataset)
            method = METHOD_NAMES[key]
            table.add(obs.dataset, method, scored, paper, source=obs.label, groups={"D": label})
    return table.result()


#: The ``note`` of a row that only the paper reports (another paper's method).
PAPER_ONLY_NOTE = "paper only: reported in the paper, not run here"

#: Added to :data:`PAPER_ONLY_NOTE` where the paper marks the value with its dagger.
RERUN_NOTE = f" ({RERUN_MARK}: the paper's authors ran the method's released code)"


def comparison_table(main: ResultTable) -> ResultTable:
    """Tab. comparison and Tab. COIN in full: ``main`` with the paper's other methods.

    ``main``: :func:`main_results_table` rows. Per dataset (in ``main``'s order): the paper's
    offline methods, then the online ones (the paper's online NaSVA, the off-the-shelf LMM,
    BaGLM), as the paper orders them (:data:`~baglm_nb.inputs.paper.PAPER_BASELINES`). A
    paper-only row has the paper's value, no workbench value, 0 videos, ``source`` ``"paper"``
    and the ``note`` :data:`PAPER_ONLY_NOTE`; a ``setting`` column (``offline`` / ``online``)
    follows ``method``. The items and sources are ``main``'s.
    """
    rows: list[dict] = []
    for name, part in main.frame.groupby("dataset", sort=False):
        baselines = PAPER_BASELINES.get(dataset_key(str(name)), ())
        for setting, method, value, rerun in baselines:
            note = PAPER_ONLY_NOTE + (RERUN_NOTE if rerun else "")
            rows.append(
                {
                    "dataset": name,
                    "method": method,
                    "setting": setting,
                    "workbench": float("nan"),
                    "paper": value,
                    "videos": 0,
                    "source": "paper",
                    "D": None,
                    "note": note,
                }
            )
        order = [METHOD_NAMES["off_the_shelf"], METHOD_NAMES["baglm"]]
        ours = part.sort_values("method", key=lambda s: s.map(order.index), kind="stable")
        for record in ours.to_dict("records"):
            rows.append({**record, "setting": "online", "note": ""})
    columns = [
        "dataset",
        "method",
        "setting",
        *[c for c in main.frame.columns if c not in ("dataset", "method")],
        "note",
    ]
    return main.with_frame(pd.DataFrame(rows, columns=columns))


def _variants_table(
    observations: Iterable[Observations],
    deps: sources.DependencySource,
    variants: list[tuple[str, str, str, dict]],
    columns: tuple[str, ...] = _VARIANT_COLUMNS,
) -> ResultTable:
    """One row per (dataset, variant) with the dataset's off-the-shelf R@1 beside it.

    ``variants`` are ``(label, paper key, D, run_baglm keyword arguments)`` where D is
    ``"given"`` (``deps``, which must be an estimated D: an LLM's matrices, real or simulated,
    else the row is a slot) or ``"oracle"``. The baseline is computed and each D resolved once
    per dataset. A ``progress`` column (when in ``columns``) names the progress source.
    """
    table = TableBuilder()
    for obs in observations:
        table.observe(obs.label)
        off = round(score_raw(obs).value, 1)
        resolved = {"oracle": require_dependencies("oracle", obs.dataset)}
        if any(v[2] == "given" for v in variants):
            resolved["given"] = sources.dependencies(obs.dataset, deps)
        for label, key, which, kwargs in variants:
            d, paper = resolved[which], paper_value(key, obs.dataset)
            progress = {"progress": obs.label if kwargs.get("progress") != "oracle" else "oracle"}
            extra = {k: v for k, v in progress.items() if k in columns}
            if which == "given" and (d is None or d.kind not in _ESTIMATED):
                why = _why_slot(d, obs.dataset)
                table.slot(obs.dataset, label, paper, why, off_the_shelf=off, D=None, **extra)
                continue
            scored = score_baglm(obs, d, **kwargs)
            table.add(
                obs.dataset,
                label,
                scored,
                paper,
                source=obs.label,
                off_the_shelf=off,
                groups={"D": d.label},
                **extra,
            )
    return table.result(list(columns) + ["note"] if table.has_slots else list(columns))


def _why_slot(d: Any, dataset: str) -> str:
    got = "no dependency source" if d is None else f"D = {d.label} is not an LLM's matrix"
    return (
        f"needs an LLM's dependency matrices for {dataset} ({got}): deps = "
        f"'{sources.SIMULATED_LLM}', 'imported' or a dependency cache"
    )


def transition_table(
    observations: Iterable[Observations], deps: sources.DependencySource = sources.SIMULATED_LLM
) -> ResultTable:
    """Tab. transition model: static, readiness only, validity only, both (with ``deps``).

    ``deps`` must be an estimated D (an LLM's matrices, real or simulated), as in the paper;
    otherwise the rows are slots.
    """
    return _variants_table(
        observations, deps, [(t, t, "given", {"transition": t}) for t in TRANSITIONS]
    )


#: The paper's four oracle rows: (method, paper key, D, progress).
ORACLE_ROWS = (
    ("LLM D, LMM progress", "both", "given", "scores"),
    ("LLM D, oracle progress", "oracle_progress", "given", "oracle"),
    ("oracle D, LMM progress", "oracle_dependency", "oracle", "scores"),
    ("oracle D, oracle progress", "oracle_both", "oracle", "oracle"),
)


def oracle_table(
    observations: Iterable[Observations], deps: sources.DependencySource = sources.SIMULATED_LLM
) -> ResultTable:
    """Tab. oracle: the LLM's or the oracle D, crossed with the LMM's or the oracle progress.

    The two "LLM D" rows use ``deps``, which must be an LLM's matrices (real or simulated);
    with ``"oracle"``, ``"none"`` or no source they are slot rows. ``D`` and ``progress``
    name each row's sources (the LMM's progress is the observation source).
    """
    variants = [(m, key, d, {"progress": p}) for m, key, d, p in ORACLE_ROWS]
    columns = _VARIANT_COLUMNS + ("progress",)
    return _variants_table(observations, deps, variants, columns)
