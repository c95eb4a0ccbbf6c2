"""Figures: small matplotlib functions that take tables and return a Figure.

Every colour comes from :mod:`baglm_nb.analyses.palette` (one hue per method or source, in
every figure; the workbench's curves solid, the paper's dashed in the same hue), and every
reference line is in its figure's legend.

The belief views of one video (:class:`BeliefFigure`, :func:`belief_figure`,
:func:`keyframe_times`) live in :mod:`baglm_nb.analyses.belief_views` and are re-exported here.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.layout_engine import PlaceHolderLayoutEngine
from matplotlib.patches import Patch

from baglm_nb.analyses import palette
from baglm_nb.analyses.agreement import calibrated_mask
from baglm_nb.analyses.belief_views import (
    BeliefFigure,
    belief_figure,
    keyframe_times,
)

__all__ = [
    "SLOTS_ONLY",
    "PAPER_ONLY_TEXT",
    "SLOT_TEXT",
    "BeliefFigure",
    "belief_figure",
    "dependency_quality_lines",
    "duration_lines",
    "keyframe_times",
    "localization_bars",
    "results_bars",
    "save_figure",
    "sensitivity_lines",
    "steps_lines",
    "violation_lines",
]

#: What :func:`results_bars` writes where a slot row (no workbench number) would have its bar.
SLOT_TEXT = "slot: not computed"

#: What :func:`results_bars` writes where a paper-only row (``source`` ``"paper"``) would have
#: its bar.
PAPER_ONLY_TEXT = "paper only"

#: The legend entry of a calibrated bar.
CALIBRATED_LABEL = "calibrated to the paper (agrees by construction)"

#: How the title of a :func:`results_bars` chart of slot rows only begins.
SLOTS_ONLY = "Nothing computed: every row is an empty slot, the black ticks are the paper's values"


def save_figure(fig, stem: str | os.PathLike) -> list[Path]:
    """Save ``fig`` as ``<stem>.png`` and ``<stem>.pdf``; returns the paths.

    A figure laid out already (``fig.tight_layout()``) keeps the placeholder layout engine
    matplotlib leaves, which makes each ``savefig`` draw the whole figure twice (a layout pass
    that changes nothing, then the file); it is set aside while saving, the files unchanged.
    """
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".pdf")]
    engine = getattr(fig, "get_layout_engine", lambda: None)()  # a Figure's, not a wrapper's
    placeholder = isinstance(engine, PlaceHolderLayoutEngine) and not (
        plt.rcParams["figure.autolayout"] or plt.rcParams["figure.constrained_layout.use"]
    )
    if placeholder:
        fig.set_layout_engine(None)
    try:
        for path in paths:
            fig.savefig(path, dpi=150)
    finally:
        if placeholder:
            fig.set_layout_engine(engine)
    return paths


# ------------------------------------------------------------------------------------------
# sweeps and breakdowns


def _wrapped(title: str, width_in: float) -> str:
    return textwrap.fill(title, width=max(40, int(width_in * 13)))


def _bar_texts(ax, x, values, paper_only, colour) -> None:
    """The words at the foot of the places without a bar: slot, or paper only."""
    for xi, only in zip(x[np.isnan(values)], paper_only[np.isnan(values)], strict=True):
        text = PAPER_ONLY_TEXT if only else SLOT_TEXT
        ax.text(
            xi,
            0.02,
            text,
            transform=ax.get_xaxis_transform(),
            rotation=90,
            ha="center",
            va="bottom",
            fontsize=7,
            color=colour,
        )


def _legend_columns(labels: Sequence[str], width_in: float, most: int = 4) -> int:
    """The most legend columns (up to ``most``) whose entries fit across ``width_in`` inches.

    Matplotlib fills the columns one after the other (the first ``len % ncol`` one entry
    longer), each as wide as its widest entry; an entry at font size 7 takes about 0.05 in per
    character plus 0.5 in for its handle and gap.
    """
    widths = [0.5 + 0.05 * len(str(label)) for label in labels]
    for ncol in range(min(len(widths), most), 1, -1):
        rows, longer = divmod(len(widths), ncol)
        sizes = [rows + 1] * longer + [rows] * (ncol - longer)
        starts = np.cumsum([0, *sizes])
        columns = [widths[a:b] for a, b in zip(starts[:-1], starts[1:], strict=True)]
        if sum(max(c) for c in columns) <= 0.95 * width_in:
            return ncol
    return 1


def results_bars(
    df: pd.DataFrame,
    title: str,
    group: str = "dataset",
    bar: str = "method",
    ylabel: str = "R@1 (%)",
    calibrated: Sequence[bool] | None = None,
):
    """Grouped bars of the workbench's numbers, with the paper's values as black ticks.

    ``df`` has the columns ``group``, ``bar``, ``workbench`` and ``paper`` (NaN where the paper
    reports nothing): the main results, the ablations and the binned analyses. Each bar takes
    its method's hue (:mod:`~baglm_nb.analyses.palette`). Rows without a workbench number get
    no bar, only words at the foot of their place: :data:`PAPER_ONLY_TEXT` for a paper-only row
    (``source`` ``"paper"``), else :data:`SLOT_TEXT` (slot rows); a chart of slot rows only
    says :data:`SLOTS_ONLY` first in its title. ``calibrated`` (one flag per row; default, for
    ``group="dataset"``: :func:`~baglm_nb.analyses.agreement.calibrated_mask`) hatches the bars
    that agree with the paper by construction, with a legend entry. The paper's values are
    black ticks (in the legend when there is one); the legend sits below the axes and the
    title wraps, so neither hides a value. Negative values (gains) extend the axis below 0.
    """
    groups = list(dict.fromkeys(df[group]))
    bars = list(dict.fromkeys(df[bar]))
    hues = palette.colours(bars)
    if calibrated is None:
        calibrated = calibrated_mask(df) if group == "dataset" else [False] * len(df)
    marked = pd.Series(list(calibrated), index=df.index, dtype=bool)
    width = 0.8 / len(bars)
    fig_w = max(6.0, 1.4 + 0.45 * len(groups) * len(bars))
    fig, ax = plt.subplots(figsize=(fig_w, 4.2))
    has_paper = pd.to_numeric(df["paper"], errors="coerce").notna().any()
    only = df["source"].eq("paper") if "source" in df.columns else pd.Series(False, df.index)
    top = bottom = 0.0
    for b_i, name in enumerate(bars):
        rows = df[df[bar] == name]
        sub = rows.set_index(group).reindex(groups)
        x = np.arange(len(groups)) + (b_i - (len(bars) - 1) / 2) * width
        values = pd.to_numeric(sub["workbench"], errors="coerce").to_numpy(dtype=float)
        paper = pd.to_numeric(sub["paper"], errors="coerce").to_numpy(dtype=float)
        hatch = marked[rows.index].set_axis(rows[group]).reindex(groups, fill_value=False)
        paper_only = only[rows.index].set_axis(rows[group]).reindex(groups, fill_value=False)
        colour = hues[str(name)]
        drawn = ax.bar(x, np.nan_to_num(values), width, color=colour, label=str(name))
        for patch, flag in zip(drawn.patches, hatch.to_numpy(dtype=bool), strict=True):
            if flag:
                patch.set_hatch(palette.CALIBRATED_HATCH)
                patch.set_edgecolor("white")
        _bar_texts(ax, x, values, paper_only.to_numpy(dtype=bool), colour)
        ax.scatter(
            x,
            paper,
            marker="_",
            s=300,
            color=palette.PAPER_TICK,
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
    _legend_below(ax, fig_w, hatched=bool(marked.any()))
    fig.tight_layout()
    return fig


def _legend_below(ax, fig_w: float, hatched: bool) -> None:
    """The axes' legend under them, plus the calibrated hatch's entry when a bar has it."""
    handles, labels = ax.get_legend_handles_labels()
    if hatched:
        handles.append(
            Patch(facecolor="lightgrey", edgecolor="white", hatch=palette.CALIBRATED_HATCH)
        )
        labels.append(CALIBRATED_LABEL)
    ax.legend(
        handles,
        labels,
        fontsize=7,
        ncol=_legend_columns(labels, fig_w),
        loc="upper center",
        bbox_to_anchor=(0.5, -0.1),
    )


def localization_bars(table: pd.DataFrame, title: str):
    """mAP at each tIoU of the computed rows of a localization table, the paper's as ticks.

    ``table``: :func:`~baglm_nb.analyses.localization.localization_table` rows; slot rows
    (other LMMs, not run) are left out; NaSVA's paper-only row is drawn as its ticks only.
    """
    metrics = [c for c in table.columns if c.startswith("@")]
    notes = table["note"] if "note" in table.columns else pd.Series("", index=table.index)
    kept = table[~notes.fillna("").astype(str).str.startswith("slot")]
    rows = [
        {
            "tIoU": m,
            "method": r["method"],
            "workbench": r[m],
            "paper": r[f"paper {m}"],
            "source": r["source"],
        }
        for r in kept.to_dict("records")
        for m in metrics
    ]
    frame = pd.DataFrame(rows)
    frame["workbench"] = pd.to_numeric(frame["workbench"], errors="coerce")
    frame["paper"] = pd.to_numeric(frame["paper"], errors="coerce")
    return results_bars(frame, title, group="tIoU", ylabel="mAP (%)")


def _by_dataset_axes(n: int, rows: int = 1, height: float = 3.2):
    fig, axes = plt.subplots(rows, n, figsize=(0.6 + 3.6 * n, height * rows), squeeze=False)
    return fig, axes


#: Markers of the sources of :func:`duration_lines` (the first source, then the others).
_SOURCE_MARKERS = ("o", "s", "^", "v", "P", "X")


#: Points of the text of a legend below the panels: readable when the page scales a wide
#: figure down to its column (about 11 px at 100 dpi).
LEGEND_FONTSIZE = 8


def _figure_legend(fig, axes_with_entries) -> int:
    """One legend below the panels with every entry of ``axes_with_entries``; returns its rows."""
    entries: dict[str, object] = {}
    for ax in axes_with_entries:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    ncol = max(1, min(len(entries), 3, int(fig.get_figwidth() // 2.6)))  # no entry cut off
    fig.legend(
        list(entries.values()),
        list(entries),
        fontsize=LEGEND_FONTSIZE,
        loc="lower center",
        ncol=ncol,
    )
    return -(-len(entries) // ncol)


def _legend_bottom(fig, rows: int) -> float:
    """The share of the figure's height a :func:`_figure_legend` of ``rows`` rows takes."""
    return (0.15 + 0.2 * rows) / fig.get_figheight()


def duration_lines(df: pd.DataFrame, title: str):
    """R@1 against the segment duration, one panel per dataset (Fig. segment duration x LMM).

    ``df`` comes from :func:`baglm_nb.analyses.ablations.segment_duration_table`: one hue per
    method (:mod:`~baglm_nb.analyses.palette`: BaGLM, the off-the-shelf model), one marker per
    source, solid; the paper's values (2 s only) as hollow diamonds in the method's hue.
    """
    datasets = list(dict.fromkeys(df["dataset"]))
    sources = list(dict.fromkeys(df["source"]))
    fig, axes = _by_dataset_axes(len(datasets))
    methods = ("BaGLM", "off-the-shelf LMM")
    for ax, name in zip(axes[0], datasets, strict=True):
        sub = df[df["dataset"] == name]
        for s_i, source in enumerate(sources):
            for method in methods:
                m = sub[(sub["source"] == source) & (sub["method"] == method)]
                m = m.sort_values("segment_duration")
                if m.empty:
                    continue
                ax.plot(
                    m["segment_duration"],
                    m["workbench"],
                    palette.WORKBENCH,
                    marker=_SOURCE_MARKERS[s_i % len(_SOURCE_MARKERS)],
                    color=palette.colour(method),
                    label=f"{method} ({source})",
                )
        paper = sub.dropna(subset=["paper"]).drop_duplicates(["segment_duration", "method"])
        for method in methods:
            p = paper[paper["method"] == method]
            ax.scatter(
                p["segment_duration"],
                p["paper"],
                marker="D",
                s=40,
                facecolor="none",
                edgecolor=palette.colour(method),
                linewidths=1.5,
                zorder=3,
                label=f"paper: {method} (InternVL2.5-8B, 2 s)",
            )
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("segment duration (s)")
        ax.set_xticks(sorted(sub["segment_duration"].unique()))
    axes[0, 0].set_ylabel("R@1 (%)")
    rows = _figure_legend(fig, [axes[0, 0]])
    fig.suptitle(_wrapped(title, fig.get_figwidth()), fontsize=9)
    fig.tight_layout(rect=(0, _legend_bottom(fig, rows), 1, 1))
    return fig


def _paper_level(ax, level, colour: str, label: str) -> None:
    if pd.notna(level):
        ax.axhline(level, color=colour, ls=palette.PAPER, lw=1, label=label)


def sensitivity_lines(df: pd.DataFrame, title: str, calibrated: float | None = None):
    """R@1 and BaGLM's gain against the simulated signal strength, one column per dataset.

    ``df``: :func:`baglm_nb.analyses.ablations.sensitivity_table` rows; BaGLM gets one line per
    D (column ``D``), in the D's hue in both rows (:mod:`~baglm_nb.analyses.palette`), the
    off-the-shelf model one. Dashed, in the same hues: the paper's InternVL2.5-8B levels (of no
    signal value). Dash-dot vertical: ``calibrated``, else the rows whose ``calibrated`` is
    True. Every line is in the legend below the panels.
    """
    datasets = list(dict.fromkeys(df["dataset"]))
    deps = list(dict.fromkeys(df["D"])) if "D" in df.columns else [None]
    hues = palette.colours(["BaGLM" if d is None else d for d in deps])
    fig, axes = _by_dataset_axes(len(datasets), rows=2, height=2.6)
    baglm, off = palette.colour("BaGLM"), palette.colour("off-the-shelf LMM")
    for col, name in enumerate(datasets):
        sub = df[df["dataset"] == name].sort_values("signal", kind="stable")
        top, bottom = axes[0, col], axes[1, col]
        for d in deps:
            part = sub if d is None else sub[sub["D"] == d]
            suffix = f" (D={d})" if len(deps) > 1 else ""
            hue = hues["BaGLM" if d is None else d]
            top.plot(part["signal"], part["baglm"], "-o", ms=3, color=hue, label="BaGLM" + suffix)
            bottom.plot(
                part["signal"], part["gain"], "-o", ms=3, color=hue, label="BaGLM gain" + suffix
            )
        first = sub if deps == [None] else sub[sub["D"] == deps[0]]
        top.plot(
            first["signal"],
            first["off_the_shelf"],
            "-o",
            ms=3,
            color=off,
            label="off-the-shelf LMM",
        )
        _paper_level(top, sub["paper_baglm"].iloc[0], baglm, "paper: BaGLM (InternVL2.5-8B)")
        _paper_level(
            top, sub["paper_off_the_shelf"].iloc[0], off, "paper: off-the-shelf (InternVL2.5-8B)"
        )
        bottom.axhline(0, color="grey", lw=0.8)
        _paper_level(bottom, sub["paper_gain"].iloc[0], baglm, "paper: BaGLM gain")
        marked = sub["signal"][sub["calibrated"].astype(bool)] if "calibrated" in sub else []
        mark = calibrated if calibrated is not None or not len(marked) else marked.iloc[0]
        for ax in (top, bottom) if mark is not None else ():
            ax.axvline(
                mark,
                color="black",
                lw=0.8,
                ls=palette.MARK,
                label="calibrated signal (off-the-shelf = paper)",
            )
        top.set_title(name, fontsize=9)
        bottom.set_xlabel("simulated signal strength")
    axes[0, 0].set_ylabel("R@1 (%)")
    axes[1, 0].set_ylabel("gain (points)")
    rows = _figure_legend(fig, [*axes[0], *axes[1]])
    fig.suptitle(_wrapped(title, fig.get_figwidth()), fontsize=9)
    fig.tight_layout(rect=(0, _legend_bottom(fig, rows), 1, 1))
    return fig


def dependency_quality_lines(df: pd.DataFrame, title: str):
    """BaGLM's gain against the dependency noise level, one panel per dataset.

    ``df``: :func:`baglm_nb.analyses.ablations.dependency_quality_table` rows. The ``level`` rows
    (0 = the oracle chain, 1 = noise) are a line in the oracle's hue, the rows without one (the
    simulated LLM presets) levels in their D's hue, labelled with their D; the paper's gain
    (LLaMA's D) is dashed in LLaMA's hue. Every line is in the legend.
    """
    datasets = list(dict.fromkeys(df["dataset"]))
    fig, axes = _by_dataset_axes(len(datasets), rows=1, height=3.0)
    for col, name in enumerate(datasets):
        sub, ax = df[df["dataset"] == name], axes[0, col]
        sweep = sub[sub["level"].notna()].sort_values("level")
        ax.plot(
            sweep["level"],
            sweep["gain"],
            "-o",
            ms=3,
            color=palette.colour("oracle"),
            label="oracle chain + noise",
        )
        refs = list(sub[sub["level"].isna()].itertuples())
        hues = palette.colours([r.D for r in refs])
        for ref in refs:
            ax.axhline(
                ref.gain, color=hues[str(ref.D)], ls=palette.WORKBENCH, lw=1, label=str(ref.D)
            )
        ax.axhline(0, color="grey", lw=0.8)
        _paper_level(ax, sub["paper_gain"].iloc[0], palette.colour("LLaMA"), "paper gain (LLaMA D)")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("fraction of D's entries replaced by noise")
    axes[0, 0].set_ylabel("BaGLM gain (points)")
    rows = _figure_legend(fig, list(axes[0]))  # below the panels, readable at page width
    fig.suptitle(_wrapped(title, fig.get_figwidth()), fontsize=9)
    fig.tight_layout(rect=(0, _legend_bottom(fig, rows), 1, 1))
    return fig


def violation_lines(long: pd.DataFrame, title: str, paper: Mapping[str, Mapping] | None = None):
    """The dependency-violation curves: violated dependencies and tasks with a violation.

    ``long``: :func:`baglm_nb.analyses.violations.violations` rows, one solid line per
    ``source`` in its hue (:mod:`~baglm_nb.analyses.palette`); ``paper``
    (:data:`~baglm_nb.inputs.paper.PAPER_VIOLATIONS`) adds the paper's rows, dashed, each in
    its LLM's hue (the simulated LLaMA and the paper's LLaMA share one).
    """
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.4), squeeze=False)
    metrics = (
        ("violated_pct", "violated dependencies (%)"),
        ("tasks_violated_pct", "tasks with a violation (%)"),
    )
    names = list(dict.fromkeys(long["source"]))
    for ax, (col, ylabel) in zip(axes[0], metrics, strict=True):
        llms = list((paper or {}).get(col, {}))
        hues = palette.colours([*names, *(f"paper: {llm}" for llm in llms)])
        for source, part in long.groupby("source", sort=False):
            ax.plot(
                part["threshold"],
                part[col],
                palette.WORKBENCH,
                marker="o",
                ms=3,
                color=hues[str(source)],
                label=str(source),
            )
        for llm, values in (paper or {}).get(col, {}).items():
            x = np.round(np.linspace(0.0, 1.0, len(values)), 1)
            ax.plot(
                x,
                values,
                palette.PAPER,
                marker="o",
                mfc="none",
                ms=4,
                lw=1,
                color=hues[f"paper: {llm}"],
                label=f"paper: {llm}",
            )
        ax.set(xlabel="threshold t (D >= t kept)", ylabel=ylabel)
    rows = _figure_legend(fig, [axes[0, 1]])  # below the panels: no curve under it
    fig.suptitle(_wrapped(title, fig.get_figwidth()), fontsize=9)
    fig.tight_layout(rect=(0, _legend_bottom(fig, rows), 1, 1))
    return fig


def steps_lines(df: pd.DataFrame, title: str):
    """R@1 against the number of candidate steps K (Fig. recall by step count).

    ``df`` comes from :func:`baglm_nb.analyses.breakdowns.candidate_steps_table`, one line per
    method in its hue; the number of videos per K is printed under the curve of the first
    method (small groups fluctuate).
    """
    fig, ax = plt.subplots(figsize=(7, 3.4))
    methods = list(dict.fromkeys(df["method"]))
    hues = palette.colours(methods)
    for i, method in enumerate(methods):
        sub = df[df["method"] == method].sort_values("num_steps")
        ax.plot(
            sub["num_steps"], sub["workbench"], "-o", ms=3, color=hues[str(method)], label=method
        )
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
