"""Figures: small matplotlib functions that take tables and return a Figure.

The belief views of one video (:class:`BeliefFigure`, :func:`belief_figure`,
:func:`keyframe_times`) live in :mod:`baglm_nb.analyses.belief_views` and are re-exported here.
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use(os.environ.get("MPLBACKEND", "Agg"))
import textwrap  # noqa: E402
from collections.abc import Mapping  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from baglm_nb.analyses.belief_views import (  # noqa: E402
    BeliefFigure,
    belief_figure,
    keyframe_times,
)

__all__ = [
    "SLOTS_ONLY",
    "SLOT_TEXT",
    "BeliefFigure",
    "belief_figure",
    "dependency_quality_lines",
    "duration_lines",
    "keyframe_times",
    "results_bars",
    "save_figure",
    "sensitivity_lines",
    "steps_lines",
    "timing_bars",
    "violation_lines",
]

#: What :func:`results_bars` writes where a slot row (no workbench number) would have its bar.
SLOT_TEXT = "slot: not computed"

#: How the title of a :func:`results_bars` chart of slot rows only begins.
SLOTS_ONLY = "Nothing computed: every row is an empty slot, the black ticks are the paper's values"


def save_figure(fig, stem: str | os.PathLike) -> list[Path]:
    """Save ``fig`` as ``<stem>.png`` and ``<stem>.pdf``; returns the paths."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".pdf")]
    for path in paths:
        fig.savefig(path, dpi=150)
    return paths


# ------------------------------------------------------------------------------------------
# sweeps and breakdowns


def _wrapped(title: str, width_in: float) -> str:
    return textwrap.fill(title, width=max(40, int(width_in * 13)))


def results_bars(
    df: pd.DataFrame,
    title: str,
    group: str = "dataset",
    bar: str = "method",
    ylabel: str = "R@1 (%)",
):
    """Grouped bars of the workbench's numbers, with the paper's values as black ticks.

    ``df`` has the columns ``group``, ``bar``, ``workbench`` and ``paper`` (NaN where the paper
    reports nothing): the main results, the ablations and the binned analyses. Rows without a
    workbench number (slot rows, ``note`` starting with ``slot:``) get no bar, only the words
    :data:`SLOT_TEXT` at the foot of their place, and a chart of slot rows only says
    :data:`SLOTS_ONLY` first in its title; the paper's values are black ticks (in the legend
    when there is one); the legend sits below the axes and the title wraps, so neither hides a
    value. Negative values (gains) extend the axis below 0.
    """
    groups = list(dict.fromkeys(df[group]))
    bars = list(dict.fromkeys(df[bar]))
    width = 0.8 / len(bars)
    fig_w = max(6.0, 1.4 + 0.45 * len(groups) * len(bars))
    fig, ax = plt.subplots(figsize=(fig_w, 4.2))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    has_paper = pd.to_numeric(df["paper"], errors="coerce").notna().any()
    top = bottom = 0.0
    for b_i, name in enumerate(bars):
        sub = df[df[bar] == name].set_index(group).reindex(groups)
        x = np.arange(len(groups)) + (b_i - (len(bars) - 1) / 2) * width
        values = pd.to_numeric(sub["workbench"], errors="coerce").to_numpy(dtype=float)
        paper = pd.to_numeric(sub["paper"], errors="coerce").to_numpy(dtype=float)
        colour = colours[b_i % len(colours)]
        ax.bar(x, np.nan_to_num(values), width, color=colour, label=str(name))
        for xi in x[np.isnan(values)]:
            ax.text(xi, 0.02, SLOT_TEXT, transform=ax.get_xaxis_transform(), rotation=90,
                    ha="center", va="bottom", fontsize=7, color=colour)  # fmt: skip
        ax.scatter(
            x,
            paper,
            marker="_",
            s=300,
            color="black",
            zorder=3,
            label="paper" if b_i == 0 and has_paper else None,
        )
        top = max(top, np.nanmax(np.concatenate([values, paper, [0.0]])))
        bottom = min(bottom, np.nanmin(np.concatenate([values, paper, [0.0]])))
    ax.set_ylim(bottom * 1.1, max(top * 1.1, 1.0))
    if bottom < 0:
        ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(np.arange(len(groups)), groups)
    ax.set_ylabel(ylabel)
    if pd.to_numeric(df["workbench"], errors="coerce").isna().all():
        title = f"{SLOTS_ONLY}. {title}"
    ax.set_title(_wrapped(title, fig_w), fontsize=9)
    ax.legend(
        fontsize=7, ncol=min(len(bars) + 1, 4), loc="upper center", bbox_to_anchor=(0.5, -0.1)
    )
    fig.tight_layout()
    return fig


def _by_dataset_axes(n: int, rows: int = 1, height: float = 3.2):
    fig, axes = plt.subplots(rows, n, figsize=(0.6 + 3.6 * n, height * rows), squeeze=False)
    return fig, axes


def duration_lines(df: pd.DataFrame, title: str):
    """R@1 against the segment duration, one panel per dataset (Fig. segment duration x LMM).

    ``df`` comes from :func:`baglm_nb.analyses.ablations.segment_duration_table`: BaGLM solid, the
    off-the-shelf model dashed, one colour per source; the paper's values (2 s only) as black
    ticks.
    """
    datasets = list(dict.fromkeys(df["dataset"]))
    sources = list(dict.fromkeys(df["source"]))
    fig, axes = _by_dataset_axes(len(datasets))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, name in zip(axes[0], datasets, strict=True):
        sub = df[df["dataset"] == name]
        for s_i, source in enumerate(sources):
            for method, style in (("BaGLM", "-"), ("off-the-shelf LMM", "--")):
                m = sub[(sub["source"] == source) & (sub["method"] == method)]
                m = m.sort_values("segment_duration")
                if m.empty:
                    continue
                ax.plot(
                    m["segment_duration"],
                    m["workbench"],
                    style,
                    marker="o",
                    color=colours[s_i % len(colours)],
                    label=f"{method} ({source})",
                )
        paper = sub.dropna(subset=["paper"]).drop_duplicates(["segment_duration", "method"])
        ax.scatter(
            paper["segment_duration"],
            paper["paper"],
            marker="_",
            s=300,
            color="black",
            zorder=3,
            label="paper (InternVL2.5-8B)",
        )
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("segment duration (s)")
        ax.set_xticks(sorted(sub["segment_duration"].unique()))
    axes[0, 0].set_ylabel("R@1 (%)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    ncol = max(1, min(len(labels), 4, int(fig.get_figwidth() // 2.4)))  # no entry cut off
    fig.legend(handles, labels, fontsize=7, loc="lower center", ncol=ncol)
    fig.suptitle(_wrapped(title, fig.get_figwidth()), fontsize=9)
    rows = -(-len(labels) // ncol)
    fig.tight_layout(rect=(0, 0.05 + 0.05 * rows, 1, 1))
    return fig


def sensitivity_lines(df: pd.DataFrame, title: str, calibrated: float | None = None):
    """R@1 and BaGLM's gain against the simulated signal strength, one column per dataset.

    ``df``: :func:`baglm_nb.analyses.ablations.sensitivity_table` rows; BaGLM gets one line per
    D (column ``D``), the off-the-shelf model one. Dotted: the paper's InternVL2.5-8B levels (of
    no signal value); vertical: ``calibrated``, else the rows whose ``calibrated`` is True.
    """
    datasets = list(dict.fromkeys(df["dataset"]))
    deps = list(dict.fromkeys(df["D"])) if "D" in df.columns else [None]
    fig, axes = _by_dataset_axes(len(datasets), rows=2, height=2.6)
    for col, name in enumerate(datasets):
        sub = df[df["dataset"] == name].sort_values("signal", kind="stable")
        top, bottom = axes[0, col], axes[1, col]
        for i, d in enumerate(deps):
            part = sub if d is None else sub[sub["D"] == d]
            suffix = f" (D={d})" if len(deps) > 1 else ""
            top.plot(part["signal"], part["baglm"], "-o", ms=3, color=f"C{3 * i}",
                     label="BaGLM" + suffix)  # fmt: skip
            bottom.plot(part["signal"], part["gain"], "-o", ms=3, color=f"C{3 * i + 2}",
                        label="BaGLM gain" + suffix)  # fmt: skip
        first = sub if deps == [None] else sub[sub["D"] == deps[0]]
        top.plot(first["signal"], first["off_the_shelf"], "--o", ms=3, color="C1",
                 label="off-the-shelf LMM")  # fmt: skip
        for key, colour in (("paper_baglm", "C0"), ("paper_off_the_shelf", "C1")):
            level = sub[key].iloc[0]
            if pd.notna(level):
                top.axhline(level, color=colour, ls=":", lw=1)
        bottom.axhline(0, color="grey", lw=0.8)
        if pd.notna(sub["paper_gain"].iloc[0]):
            bottom.axhline(sub["paper_gain"].iloc[0], color="C2", ls=":", lw=1,
                           label="paper gain (InternVL2.5-8B)")  # fmt: skip
        marked = sub["signal"][sub["calibrated"].astype(bool)] if "calibrated" in sub else []
        mark = calibrated if calibrated is not None or not len(marked) else marked.iloc[0]
        for ax in (top, bottom) if mark is not None else ():
            ax.axvline(mark, color="black", lw=0.8, ls="-.")
        top.set_title(name, fontsize=9)
        bottom.set_xlabel("simulated signal strength")
    axes[0, 0].set_ylabel("R@1 (%)")
    axes[1, 0].set_ylabel("gain (points)")
    axes[0, -1].legend(fontsize=6)
    axes[1, -1].legend(fontsize=6)
    fig.suptitle(_wrapped(title, fig.get_figwidth()), fontsize=9)
    fig.tight_layout()
    return fig


def dependency_quality_lines(df: pd.DataFrame, title: str):
    """BaGLM's gain against the dependency noise level, one panel per dataset.

    ``df``: :func:`baglm_nb.analyses.ablations.dependency_quality_table` rows. The ``level`` rows
    (0 = the oracle chain, 1 = noise) are a line, the rows without one (the simulated LLM
    presets) dashed levels labelled with their D; the paper's gain is dotted.
    """
    datasets = list(dict.fromkeys(df["dataset"]))
    fig, axes = _by_dataset_axes(len(datasets), rows=1, height=3.0)
    for col, name in enumerate(datasets):
        sub, ax = df[df["dataset"] == name], axes[0, col]
        sweep = sub[sub["level"].notna()].sort_values("level")
        ax.plot(sweep["level"], sweep["gain"], "-o", ms=3, color="C0", label="oracle chain + noise")
        for i, ref in enumerate(sub[sub["level"].isna()].itertuples()):
            ax.axhline(ref.gain, color=f"C{i + 1}", ls="--", lw=1, label=str(ref.D))
        ax.axhline(0, color="grey", lw=0.8)
        if pd.notna(sub["paper_gain"].iloc[0]):
            ax.axhline(sub["paper_gain"].iloc[0], color="black", ls=":", lw=1,
                       label="paper gain (LLaMA D)")  # fmt: skip
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("fraction of D's entries replaced by noise")
    axes[0, 0].set_ylabel("BaGLM gain (points)")
    axes[0, -1].legend(fontsize=6)
    fig.suptitle(_wrapped(title, fig.get_figwidth()), fontsize=9)
    fig.tight_layout()
    return fig


def violation_lines(long: pd.DataFrame, title: str, paper: Mapping[str, Mapping] | None = None):
    """The dependency-violation curves: violated dependencies and tasks with a violation.

    ``long``: :func:`baglm_nb.analyses.violations.violations` rows, one line per ``source``;
    ``paper`` (:data:`~baglm_nb.analyses.paper.PAPER_VIOLATIONS`) adds the paper's rows, dashed.
    """
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.4), squeeze=False)
    metrics = (("violated_pct", "violated dependencies (%)"),
               ("tasks_violated_pct", "tasks with a violation (%)"))  # fmt: skip
    for ax, (col, ylabel) in zip(axes[0], metrics, strict=True):
        for i, (source, part) in enumerate(long.groupby("source", sort=False)):
            ax.plot(part["threshold"], part[col], "-o", ms=3, color=f"C{i}", label=str(source))
        for j, (llm, values) in enumerate((paper or {}).get(col, {}).items()):
            x = np.round(np.linspace(0.0, 1.0, len(values)), 1)
            ax.plot(x, values, "--", marker="o", mfc="none", ms=4, lw=1,
                    color=("black", "grey")[j % 2], label=f"paper: {llm}")  # fmt: skip
        ax.set(xlabel="threshold t (D >= t kept)", ylabel=ylabel)
    axes[0, 1].legend(fontsize=6)
    fig.suptitle(_wrapped(title, fig.get_figwidth()), fontsize=9)
    fig.tight_layout()
    return fig


def steps_lines(df: pd.DataFrame, title: str):
    """R@1 against the number of candidate steps K (Fig. recall by step count).

    ``df`` comes from :func:`baglm_nb.analyses.breakdowns.candidate_steps_table`; the number of
    videos per K is printed under the curve of the first method (small groups fluctuate).
    """
    fig, ax = plt.subplots(figsize=(7, 3.4))
    methods = list(dict.fromkeys(df["method"]))
    for i, method in enumerate(methods):
        sub = df[df["method"] == method].sort_values("num_steps")
        ax.plot(sub["num_steps"], sub["workbench"], "-o" if i == 0 else "--o", ms=3, label=method)
        if i == 0:
            for k, n in zip(sub["num_steps"], sub["videos"], strict=True):
                ax.annotate(
                    str(n),
                    (k, 0),
                    textcoords="offset points",
                    xytext=(0, 2),
                    ha="center",
                    fontsize=6,
                    color="grey",
                )
    ax.set_ylim(0, 100)
    ax.set_xlabel("candidate steps K (grey: videos per K)")
    ax.set_ylabel("R@1 (%)")
    ax.set_title(_wrapped(title, fig.get_figwidth()), fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def timing_bars(summary: pd.DataFrame, title: str, segment_duration: float = 2.0):
    """Stacked mean seconds per segment of each stage, by K (Fig. inference timing).

    ``summary`` comes from :func:`baglm_nb.analyses.timing.timing_summary`; a dashed line marks
    ``segment_duration`` (real time).
    """
    skip = {"num_steps", "videos", "segments", "total_s", "realtime_share"}
    stages = [c for c in summary.columns if c not in skip]
    fig, ax = plt.subplots(figsize=(7, 3.4))
    x = summary["num_steps"].to_numpy()
    bottom = np.zeros(len(summary))
    for stage in stages:
        values = summary[stage].fillna(0).to_numpy(dtype=float)
        ax.bar(x, values, bottom=bottom, label=stage.removesuffix("_s"))
        bottom += values
    ax.axhline(segment_duration, color="black", ls="--", lw=1, label="real time")
    ax.set_xlabel("steps in the task (K)")
    ax.set_ylabel("seconds per segment")
    ax.set_title(_wrapped(title, fig.get_figwidth()), fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
