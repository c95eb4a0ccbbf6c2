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

from baglm_nb.atomic import atomic_write_text
from baglm_nb.datasets import DATASETS, dataset_stats
from baglm_nb.observations import Observations
from baglm_nb.pipeline import compare

__all__ = [
    "DATASET_NAMES",
    "METHOD_NAMES",
    "PAPER",
    "PAPER_POSITION",
    "PAPER_PROMPT_QUERIES",
    "PAPER_STATS",
    "PAPER_TIMING",
    "SLOT",
    "dataset_table",
    "main_results_table",
    "oracle_table",
    "paper_value",
    "slot_row",
    "title_for",
    "transition_table",
    "write_table",
]

DATASET_NAMES = {"htstep": "HT-Step", "crosstask": "CrossTask", "ego4d_goalstep": "Ego4D",
                 "coin": "COIN"}  # fmt: skip

#: Reported in the paper (InternVL2.5-8B + LLaMA-3.3-70B, 2-s segments), in percent.
PAPER: dict[str, dict[str, float]] = {
    "baglm": {"htstep": 57.4, "crosstask": 59.8, "ego4d_goalstep": 43.3, "coin": 51.0},
    "off_the_shelf": {"htstep": 52.0, "crosstask": 54.3, "ego4d_goalstep": 45.2, "coin": 47.9},
    "static": {"htstep": 55.9, "crosstask": 58.0, "ego4d_goalstep": 42.1},
    "readiness": {"htstep": 57.0, "crosstask": 58.8, "ego4d_goalstep": 42.0},
    "validity": {"htstep": 56.4, "crosstask": 58.8, "ego4d_goalstep": 43.1},
    "both": {"htstep": 57.4, "crosstask": 59.8, "ego4d_goalstep": 43.3},
    "gpt-4.1-mini": {"htstep": 57.1, "crosstask": 60.9, "ego4d_goalstep": 40.6},
    "binary_prompt": {"htstep": 52.5, "crosstask": 56.0, "ego4d_goalstep": 41.8},
    "prior_next_step": {"htstep": 50.5, "crosstask": 52.6, "ego4d_goalstep": 28.1},
    "prior_propagated": {"htstep": 55.6, "crosstask": 57.3, "ego4d_goalstep": 39.9},
    "oracle_progress": {"htstep": 44.9, "crosstask": 38.6, "ego4d_goalstep": 36.0},
    "oracle_dependency": {"htstep": 54.6, "crosstask": 58.3, "ego4d_goalstep": 45.2},
    "oracle_both": {"htstep": 62.6, "crosstask": 66.9, "ego4d_goalstep": 82.2},
}

#: Dataset figures as the paper states them (text; "" where it gives none for this split).
PAPER_STATS: dict[str, dict[str, str]] = {
    "htstep": {"videos": "600", "tasks": "120", "mean_steps": "about 10",
               "mean_duration_s": "6 min", "mean_segment_s": "16 s"},
    "crosstask": {"videos": "", "tasks": "18", "mean_steps": "7.5",
                  "mean_duration_s": "< 5 min", "mean_segment_s": "10.7 s"},
    "ego4d_goalstep": {"videos": "", "tasks": "", "mean_steps": "17",
                       "mean_duration_s": "28 min", "mean_segment_s": "53 s"},
    "coin": {"videos": "2354 (of 2797 test)", "tasks": "180", "mean_steps": "",
             "mean_duration_s": "", "mean_segment_s": ""},
}  # fmt: skip


#: R@1 (%) per temporal-position bin on HT-Step (Tab. htstep_step_position), bins 0..4 from
#: early to late steps (position = first annotated start / video duration, five equal bins).
PAPER_POSITION: dict[str, dict[str, tuple[float, ...]]] = {
    "htstep": {
        "off_the_shelf": (53.6, 52.7, 54.6, 49.7, 49.3),
        "baglm": (56.1, 57.2, 60.2, 56.8, 56.6),
    },
}

#: LMM queries per segment of the two VSG prompts (Tab. prompt): one multiple-choice query, or
#: one yes/no query per candidate step.
PAPER_PROMPT_QUERIES: dict[str, str] = {"multiple_choice": "1", "binary": "K"}

#: Per-segment inference times stated in the paper (App. inference speed, one H100), for the
#: HT-Step video ``-25-1nbOki0`` (283 segments of 2 s, K = 10 steps), in seconds.
PAPER_TIMING: dict[str, float | str] = {
    "example_uid": "-25-1nbOki0",
    "example_num_steps": 10,
    "decode_s": 1.201,
    "vsg_s": 0.088,
    "progress_s": 0.814,
    "total_s": 2.1,
    "vsg_binary_s": 0.756,
}

#: Display names of the two methods every table compares.
METHOD_NAMES: dict[str, str] = {"baglm": "BaGLM", "off_the_shelf": "off-the-shelf LMM"}

#: Prefix of the ``note`` of a slot row: a row the workbench cannot fill from its inputs yet.
SLOT = "slot"


def paper_value(key: str, dataset: str) -> float:
    """The paper's reported value ``PAPER[key][dataset]``, NaN where it reports none."""
    return float(PAPER.get(key, {}).get(dataset, float("nan")))


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
