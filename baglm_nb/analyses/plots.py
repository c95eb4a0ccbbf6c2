"""Figures: small matplotlib functions that take tables and return a Figure.

Besides the table plots, :class:`BeliefFigure` draws one video's ground-truth step bands above
BaGLM's and the off-the-shelf model's step probabilities over time, and can replace its curves
in place (``set_data`` on the existing artists) and render a PNG quickly: the widget explorer
(:mod:`baglm_nb.apps.widgets`) and notebook ``08_qualitative`` both use it. Keyframes come from the
video file, decoded with torchcodec (:func:`baglm_nb.inputs.video.frames_at`).
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use(os.environ.get("MPLBACKEND", "Agg"))
import io  # noqa: E402
import textwrap  # noqa: E402
from collections.abc import Mapping, Sequence  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator, ScalarFormatter  # noqa: E402

from baglm_nb.inputs.datasets import Video  # noqa: E402
from baglm_nb.inputs.grid import ground_truth  # noqa: E402

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

#: Above this many steps the belief panels are heatmaps instead of one line per step.
MAX_LINE_STEPS = 12

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


# ------------------------------------------------------------------------------------------
# belief plots


def _mmss(x: float, _pos=None) -> str:
    x = max(float(x), 0.0)
    return f"{int(x // 60):02d}:{int(x % 60):02d}"


def _step_colours(k: int) -> np.ndarray:
    cmap = matplotlib.colormaps["tab20" if k > 10 else "tab10"]
    n = 20 if k > 10 else 10
    return np.array([cmap(i % n) for i in range(k)])


def _short(text: str, width: int = 32) -> str:
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(start, length) of the runs of True in a 1-D boolean array."""
    padded = np.concatenate([[False], mask, [False]]).astype(np.int8)
    edges = np.flatnonzero(np.diff(padded))
    return [(int(a), int(b - a)) for a, b in zip(edges[::2], edges[1::2], strict=True)]


def _label(ax, text: str, *, x: bool = False, y: bool = False):
    """A panel title (default), x label or y label at a fixed place; returns the Text.

    Fixed-position texts instead of ``set_title``/``set_xlabel``/``set_ylabel``: those are
    placed by measuring every tick label, which dominates the cost of a full redraw.
    """
    kw = {"transform": ax.transAxes, "fontsize": 8}
    if y:
        return ax.text(-0.045, 0.5, text, rotation=90, ha="right", va="center", **kw)
    if x:
        return ax.text(0.5, -0.24, text, ha="center", va="top", **kw)
    return ax.text(0.0, 1.03, text, ha="left", va="bottom", **kw)


class BeliefFigure:
    """Ground-truth step bands above BaGLM's and the off-the-shelf model's step probabilities.

    The axes are built once; :meth:`set_video` swaps in another video (ground truth, step
    labels, one artist per curve), :meth:`update` replaces the curves in place (``set_ydata``
    for lines, ``set_data`` for heatmaps) and :meth:`png` renders the figure with the Agg
    canvas, so moving a slider costs one render of the curves.

    Parameters
    ----------
    video : Video
        The annotated video (its steps and ground truth).
    num_rows : int
        T, the number of per-second rows of the beliefs that :meth:`update` will receive.
    style : {"auto", "lines", "heatmap"}
        One line per step, or a step x time heatmap; ``"auto"`` uses lines up to
        :data:`MAX_LINE_STEPS` steps.
    figsize, dpi
        Figure size in inches and resolution of :meth:`png`.
    keyframes : sequence of (float, array), optional
        ``(time_s, (H, W, 3) uint8 image)`` pairs shown in a row above the panels, with dashed
        markers at their times.
    blit : bool
        Render the static parts (axes, ticks, ground truth, title) once per video and redraw
        only the curves in :meth:`png` (for the widget). A blitted figure's curves are
        *animated* artists, which ``savefig`` leaves out: use ``blit=False`` to save figures.
    """

    PANELS = ("baglm", "off_the_shelf")
    NAMES = {"baglm": "BaGLM", "off_the_shelf": "off-the-shelf LMM"}

    def __init__(
        self,
        video: Video,
        num_rows: int,
        *,
        style: str = "auto",
        figsize: tuple[float, float] = (10.0, 6.0),
        dpi: float = 80,
        keyframes: Sequence[tuple[float, np.ndarray]] | None = None,
        blit: bool = False,
    ) -> None:
        if style not in ("auto", "lines", "heatmap"):
            raise ValueError(f"style must be 'auto', 'lines' or 'heatmap', got {style!r}")
        self.requested_style, self.dpi, self.blit = style, dpi, blit
        self.figure = Figure(figsize=figsize, dpi=dpi)
        FigureCanvasAgg(self.figure)
        self._keyframes = list(keyframes or [])
        n_top = 1 if self._keyframes else 0
        self._grid = self.figure.add_gridspec(3 + n_top, max(len(self._keyframes), 1))
        gt_ax = self.figure.add_subplot(self._grid[n_top, :])
        self.axes = {
            "gt": gt_ax,
            "baglm": self.figure.add_subplot(self._grid[n_top + 1, :], sharex=gt_ax),
            "off_the_shelf": self.figure.add_subplot(self._grid[n_top + 2, :], sharex=gt_ax),
        }
        _label(gt_ax, "ground truth")
        gt_ax.tick_params(labelsize=6, labelbottom=False)
        gt_ax.grid(axis="x", lw=0.3)
        self._ylabels = {"gt": _label(gt_ax, "", y=True)}
        for key in self.PANELS:
            ax = self.axes[key]
            _label(ax, self.NAMES[key])
            self._ylabels[key] = _label(ax, "", y=True)
            ax.tick_params(labelsize=7)
        self.axes["baglm"].tick_params(labelbottom=False)
        bottom = self.axes["off_the_shelf"]
        bottom.xaxis.set_major_locator(MaxNLocator(8))
        bottom.xaxis.set_major_formatter(FuncFormatter(_mmss))
        _label(bottom, "time (mm:ss)", x=True)
        self.title = self.figure.suptitle("", fontsize=9)
        self._gt_artists: list = []
        self.artists: dict[str, list] = {key: [] for key in self.PANELS}
        self._background = None
        self.video: Video | None = None
        self.set_video(video, num_rows)
        if self._keyframes:
            self._draw_keyframes(self._keyframes)

    # -- content ---------------------------------------------------------------------------

    def set_video(self, video: Video, num_rows: int) -> None:
        """Show another video (or the same one with another row count); curves start at 0."""
        k = video.num_steps
        self.video, self.num_rows = video, int(num_rows)
        style = self.requested_style
        self.style = ("lines" if k <= MAX_LINE_STEPS else "heatmap") if style == "auto" else style
        for artist in self._gt_artists + [a for arts in self.artists.values() for a in arts]:
            artist.remove()
        n_top = 1 if self._keyframes else 0
        self._grid.set_height_ratios([1.3] * n_top + [max(1.0, 0.09 * min(k, 30)), 1.4, 1.4])
        colours = _step_colours(k)
        self._gt_artists = self._draw_ground_truth(colours)
        t = np.arange(self.num_rows) + 0.5
        for key in self.PANELS:
            ax = self.axes[key]
            if self.style == "lines":
                zeros = np.zeros(self.num_rows)
                self.artists[key] = [
                    ax.plot(t, zeros, color=colours[i], lw=1.0)[0] for i in range(k)
                ]
                ax.set_ylim(-0.02, 1.02)
                ax.set_yticks([0.0, 0.5, 1.0])
                self._ylabels[key].set_text("P(step)")
            else:
                img = ax.imshow(
                    np.zeros((k, self.num_rows)),
                    aspect="auto",
                    vmin=0.0,
                    vmax=1.0,
                    cmap="viridis",
                    interpolation="nearest",
                    extent=(0, self.num_rows, k - 0.5, -0.5),
                )
                self.artists[key] = [img]
                ax.set_ylim(k - 0.5, -0.5)
                ax.yaxis.set_major_locator(MaxNLocator(4, integer=True))
                self._ylabels[key].set_text("step")
            if self.blit:
                for artist in self.artists[key]:
                    artist.set_animated(True)
        self.axes["gt"].set_xlim(0, max(self.num_rows, 1))
        self.figure.subplots_adjust(
            left=0.24 if k <= 30 else 0.07, right=0.98, top=0.9, bottom=0.09, hspace=0.35
        )
        self._background = None

    def _draw_ground_truth(self, colours: np.ndarray) -> list:
        ax, video = self.axes["gt"], self.video
        k = video.num_steps
        y = ground_truth(video, self.num_rows)[:, :k]
        artists = []
        for i in range(k):
            runs = _runs(y[:, i])
            if runs:
                artists.append(ax.broken_barh(runs, (i - 0.4, 0.8), facecolors=colours[i]))
        ax.set_ylim(k - 0.5, -0.5)
        if k <= 30:
            ax.set_yticks(range(k), [_short(s) for s in video.steps], fontsize=6)
            for label, colour in zip(ax.get_yticklabels(), colours, strict=True):
                label.set_color(colour)
            self._ylabels["gt"].set_text("")
        else:
            ax.yaxis.set_major_locator(MaxNLocator(6, integer=True))
            ax.yaxis.set_major_formatter(ScalarFormatter())
            for label in ax.get_yticklabels():
                label.set_color("black")
            self._ylabels["gt"].set_text("step")
        return artists

    def _draw_keyframes(self, keyframes) -> None:
        for i, (time_s, image) in enumerate(keyframes):
            ax = self.figure.add_subplot(self._grid[0, i])
            ax.imshow(image)
            ax.set_axis_off()
            ax.set_title(_mmss(time_s), fontsize=7)
            for key in ("gt", *self.PANELS):
                self.axes[key].axvline(time_s, color="black", ls="--", lw=0.8)

    def update(self, baglm: np.ndarray, off_the_shelf: np.ndarray, title: str = "") -> None:
        """Replace the curves with new (T, K+1) beliefs and scores (the none column is unused)."""
        k = self.video.num_steps
        for key, values in (("baglm", baglm), ("off_the_shelf", off_the_shelf)):
            v = np.asarray(values, dtype=np.float64)
            if v.shape != (self.num_rows, k + 1):
                raise ValueError(f"{key} must be ({self.num_rows}, {k + 1}), got {v.shape}")
            if self.style == "lines":
                for i, line in enumerate(self.artists[key]):
                    line.set_ydata(v[:, i])
            else:
                self.artists[key][0].set_data(v[:, :k].T)
        if title != self.title.get_text():
            self.title.set_text(title)
            self._background = None

    def png(self) -> bytes:
        """The figure as PNG bytes (Agg); with ``blit`` only the curves are redrawn."""
        buf = io.BytesIO()
        if not self.blit:
            self.figure.canvas.print_png(buf)
            return buf.getvalue()
        from PIL import Image

        canvas = self.figure.canvas
        if self._background is None:
            canvas.draw()  # everything but the animated curves
            self._background = canvas.copy_from_bbox(self.figure.bbox)
        else:
            canvas.restore_region(self._background)
        for key in self.PANELS:
            for artist in self.artists[key]:
                self.axes[key].draw_artist(artist)
        rgba = np.asarray(canvas.buffer_rgba())
        Image.fromarray(rgba[..., :3]).save(buf, format="png", compress_level=1)
        return buf.getvalue()


def belief_figure(
    video: Video,
    baglm: np.ndarray,
    off_the_shelf: np.ndarray,
    *,
    title: str = "",
    keyframes: Sequence[tuple[float, np.ndarray]] | None = None,
    style: str = "auto",
) -> Figure:
    """A :class:`BeliefFigure` for one video, filled in; returns the matplotlib Figure."""
    k = video.num_steps
    height = 4.6 + 0.08 * min(k, 30) + (1.6 if keyframes else 0.0)
    plot = BeliefFigure(
        video, np.shape(baglm)[0], style=style, figsize=(11, height), dpi=100, keyframes=keyframes
    )
    plot.update(baglm, off_the_shelf, title)
    return plot.figure


def keyframe_times(baglm: np.ndarray, off_the_shelf: np.ndarray, n: int = 4) -> list[float]:
    """``n`` times (s) worth a keyframe: where BaGLM's top step differs from the LMM's.

    Rows where the two argmaxes disagree are split into ``n`` equal chunks and each chunk's
    middle row is taken; with fewer disagreeing rows than ``n`` (or none), evenly spaced
    times fill up. Returns sorted times at row centres (``row + 0.5``).
    """
    t = np.shape(baglm)[0]
    if t == 0 or n < 1:
        return []
    differ = np.flatnonzero(np.argmax(baglm, axis=1) != np.argmax(off_the_shelf, axis=1))
    rows: list[int] = []
    if len(differ):
        rows = [int(c[len(c) // 2]) for c in np.array_split(differ, min(n, len(differ)))]
    even = [int((i + 0.5) * t / n) for i in range(n)]
    for r in even:
        if len(rows) >= n:
            break
        if all(abs(r - q) > t / (2 * n) for q in rows):
            rows.append(r)
    return sorted(r + 0.5 for r in rows[:n])
