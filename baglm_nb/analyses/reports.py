"""The paper's reported numbers and the tables that put the workbench's numbers beside them.

Tables are pandas DataFrames; :func:`write_table` saves one as CSV and Markdown (atomically).
Every table built from simulated observations names that source in its ``source`` column and
title.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from baglm_nb.analyses.paper import PAPER, PAPER_STATS
from baglm_nb.core.observations import Observations
from baglm_nb.core.pipeline import compare
from baglm_nb.inputs.datasets import DATASETS, dataset_stats
from baglm_nb.stores.atomic import atomic_write_text

__all__ = [
    "DATASET_NAMES",
    "METHOD_NAMES",
    "SLOT",
    "dataset_table",
    "main_results_table",
    "oracle_table",
    "slot_row",
    "title_for",
    "transition_table",
    "write_table",
]

DATASET_NAMES = {"htstep": "HT-Step", "crosstask": "CrossTask", "ego4d_goalstep": "Ego4D",
                 "coin": "COIN"}  # fmt: skip

#: Display names of the two methods every table compares.
METHOD_NAMES: dict[str, str] = {"baglm": "BaGLM", "off_the_shelf": "off-the-shelf LMM"}

#: Prefix of the ``note`` of a slot row: a row the workbench cannot fill from its inputs yet.
SLOT = "slot"


def slot_row(dataset: str, method: str, paper: float, reason: str, **extra) -> dict:
    """A clearly labelled empty row: the paper's value, no workbench number, and why.

    ``dataset`` is a dataset name (converted to its display name when known); ``reason`` says
    what input would fill the row. Extra keyword arguments become extra columns.
    """
    return {
        "dataset": DATASET_NAMES.get(dataset, dataset),
        "method": method,
        "workbench": float("nan"),
        "paper": paper,
        "videos": 0,
        "source": "none",
        "note": f"{SLOT}: {reason}",
        **extra,
    }


def title_for(what: str, source: str) -> str:
    """A table or figure title that names the observation source (and says ``simulated``)."""
    if source == "simulated":
        return f"{what} (simulated observations, not a real model)"
    return f"{what} (observations: {source})"


def dataset_table(names: Iterable[str] = tuple(DATASETS)) -> pd.DataFrame:
    """Statistics of the annotation files beside the figures the paper states."""
    rows = []
    for name in names:
        stats = dataset_stats(name)
        for key, paper in PAPER_STATS[name].items():
            rows.append({"dataset": DATASET_NAMES[name], "statistic": key,
                         "workbench": stats[key], "paper": paper})  # fmt: skip
    return pd.DataFrame(rows)


def _row(obs: Observations, deps, label: str, paper_key: str, **kwargs) -> dict:
    result = compare(obs, deps, **kwargs)
    return {
        "dataset": DATASET_NAMES[obs.dataset],
        "method": label,
        "workbench": round(result["baglm"], 1),
        "paper": PAPER[paper_key].get(obs.dataset),
        "off_the_shelf": round(result["off_the_shelf"], 1),
        "videos": result["videos"],
        "source": obs.label,
    }


def main_results_table(observations: Iterable[Observations], deps="oracle") -> pd.DataFrame:
    """Tab. comparison: BaGLM and the off-the-shelf LMM per dataset, beside the paper."""
    rows = []
    for obs in observations:
        row = _row(obs, deps, "BaGLM", "baglm")
        rows.append(row)
        rows.append({**row, "method": "off-the-shelf LMM", "workbench": row["off_the_shelf"],
                     "paper": PAPER["off_the_shelf"][obs.dataset]})  # fmt: skip
    return pd.DataFrame(rows).drop(columns="off_the_shelf")


def transition_table(observations: Iterable[Observations], deps="oracle") -> pd.DataFrame:
    """Tab. transition model: static, readiness only, validity only, both."""
    rows = []
    for obs in observations:
        for transition in ("static", "readiness", "validity", "both"):
            rows.append(_row(obs, deps, transition, transition, transition=transition))
    return pd.DataFrame(rows)


def oracle_table(observations: Iterable[Observations], deps="none") -> pd.DataFrame:
    """Tab. oracle: estimated vs oracle progress and dependency matrix.

    ``deps`` is the estimated dependency source (a cache, or ``"none"`` without one); the
    method labels name it.
    """
    name = deps if isinstance(deps, str) else "LLM"
    variants = [
        (f"D={name}, progress=scores", "both", deps, "scores"),
        (f"D={name}, progress=oracle", "oracle_progress", deps, "oracle"),
        ("D=oracle, progress=scores", "oracle_dependency", "oracle", "scores"),
        ("D=oracle, progress=oracle", "oracle_both", "oracle", "oracle"),
    ]
    rows = []
    for obs in observations:
        for label, key, d, progress in variants:
            rows.append(_row(obs, d, label, key, progress=progress))
    return pd.DataFrame(rows)


def to_markdown(df: pd.DataFrame, title: str | None = None) -> str:
    """A GitHub-style Markdown table (no extra dependency)."""
    cells = [[("" if pd.isna(v) else str(v)) for v in row] for row in df.itertuples(index=False)]
    header = [str(c) for c in df.columns]
    lines = [f"**{title}**", ""] if title else []
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join("---" for _ in header) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in cells]
    return "\n".join(lines) + "\n"


def write_table(df: pd.DataFrame, stem: str | os.PathLike, title: str | None = None) -> None:
    """Save ``df`` as ``<stem>.csv`` and ``<stem>.md`` (with ``title``), each atomically."""
    stem = Path(stem)
    atomic_write_text(stem.with_suffix(".csv"), df.to_csv(index=False))
    atomic_write_text(stem.with_suffix(".md"), to_markdown(df, title))
