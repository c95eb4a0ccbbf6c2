"""The paper's headline tables: dataset statistics, main results, transition model, oracles.

Notebooks ``00_dataset_statistics`` and ``03_main_results`` show them. Every R@1 table names its
observation source in the ``source`` column and carries its (video, step) items
(:mod:`baglm_nb.analyses.tables`); the paper's values come from
:mod:`baglm_nb.analyses.paper`.

Exports :func:`dataset_table`, :func:`main_results_table`, :func:`transition_table` and
:func:`oracle_table`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from baglm_nb.analyses.paper import PAPER_STATS, paper_value
from baglm_nb.analyses.tables import (
    DATASET_NAMES,
    METHOD_NAMES,
    TableBuilder,
    require_dependencies,
    score_baglm,
    score_raw,
)
from baglm_nb.core.observations import Observations
from baglm_nb.inputs.datasets import DATASETS, dataset_stats

__all__ = ["dataset_table", "main_results_table", "oracle_table", "transition_table"]

#: Columns of the variant tables (transition model, oracles): the baseline beside each row.
_VARIANT_COLUMNS = ("dataset", "method", "workbench", "paper", "off_the_shelf", "videos", "source")


def dataset_table(names: Iterable[str] = tuple(DATASETS)) -> pd.DataFrame:
    """Statistics of the annotation files beside the figures the paper states.

    ``workbench`` keeps each statistic's own type (counts are integers, means floats: an object
    column); ``paper`` is the paper's text, None where it states nothing.
    """
    rows = []
    for name in names:
        stats = dataset_stats(name)
        for key, paper in PAPER_STATS[name].items():
            rows.append({"dataset": DATASET_NAMES[name], "statistic": key,
                         "workbench": stats[key], "paper": paper or None})  # fmt: skip
    columns = ["dataset", "statistic", "workbench", "paper"]
    return pd.DataFrame(rows, columns=columns, dtype=object)


def main_results_table(observations: Iterable[Observations], deps: Any = "oracle") -> pd.DataFrame:
    """Tab. comparison: BaGLM and the off-the-shelf LMM per dataset, beside the paper.

    ``deps`` is a deps setting (:mod:`baglm_nb.core.sources`); a dataset without a source
    raises ``KeyError``.
    """
    table = TableBuilder()
    for obs in observations:
        d = require_dependencies(deps, obs.dataset)
        for key, scored in (("baglm", score_baglm(obs, d)), ("off_the_shelf", score_raw(obs))):
            paper = paper_value(key, obs.dataset)
            table.add(obs.dataset, METHOD_NAMES[key], scored, paper, source=obs.label)
    return table.frame()


def _variants_table(
    observations: Iterable[Observations], deps: Any, variants: list[tuple[str, str, str, dict]]
) -> pd.DataFrame:
    """One row per (dataset, variant) with the dataset's off-the-shelf R@1 beside it.

    ``variants`` are ``(label, paper key, D, run_baglm keyword arguments)`` where D is
    ``"given"`` (``deps``) or ``"oracle"``. The baseline is computed and each D resolved once
    per dataset.
    """
    settings = {"given": deps, "oracle": "oracle"}
    table = TableBuilder()
    for obs in observations:
        off = round(score_raw(obs).value, 1)
        used = dict.fromkeys(v[2] for v in variants)
        resolved = {k: require_dependencies(settings[k], obs.dataset) for k in used}
        for label, key, which, kwargs in variants:
            scored = score_baglm(obs, resolved[which], **kwargs)
            paper = paper_value(key, obs.dataset)
            table.add(obs.dataset, label, scored, paper, source=obs.label, off_the_shelf=off)
    return table.frame(_VARIANT_COLUMNS)


def transition_table(observations: Iterable[Observations], deps: Any = "oracle") -> pd.DataFrame:
    """Tab. transition model: static, readiness only, validity only, both."""
    kinds = ("static", "readiness", "validity", "both")
    return _variants_table(observations, deps, [(t, t, "given", {"transition": t}) for t in kinds])


def oracle_table(observations: Iterable[Observations], deps: Any = "none") -> pd.DataFrame:
    """Tab. oracle: estimated vs oracle progress and dependency matrix.

    ``deps`` is the estimated dependency source (a cache, or ``"none"`` without one); the
    method labels name it.
    """
    name = deps if isinstance(deps, str) else "LLM"
    variants = [
        (f"D={name}, progress=scores", "both", "given", {"progress": "scores"}),
        (f"D={name}, progress=oracle", "oracle_progress", "given", {"progress": "oracle"}),
        ("D=oracle, progress=scores", "oracle_dependency", "oracle", {"progress": "scores"}),
        ("D=oracle, progress=oracle", "oracle_both", "oracle", {"progress": "oracle"}),
    ]
    return _variants_table(observations, deps, variants)
