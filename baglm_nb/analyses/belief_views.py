"""Belief views of one video that read at a glance: heatmaps, top-state strips, a step legend.

:class:`BeliefFigure` draws, top to bottom:

* optional keyframes (dashed markers at their times);
* one panel per method (BaGLM's beliefs, the off-the-shelf model's scores): a heatmap of the
  K steps and ``none`` (its own row) over time, the annotated step intervals outlined on it, and
  each annotated step's peak (the row R@1 looks at) marked as a hit (white dot) or a miss (red
  cross). With few steps (K <= :data:`MAX_LINE_STEPS`) or on demand (``style="lines"``) the
  panel is one line per state instead, the annotated intervals shaded;
* strips on one time axis: the ground truth, each method's top state at every second (the step it
  would announce) with a right/wrong strip under it, and (online reports) the announced step;
* a legend table: each step's number and full text, when it is annotated and whether each method
  hits it, so the axis labels can stay short.

The title names the source (callers pass :func:`~baglm_nb.analyses.tables.title_for`, which
says "simulated"; ``title_lines=0``: none, the caller shows it). :meth:`BeliefFigure.update`
replaces the data of the same artists and :meth:`BeliefFigure.render` draws into the Agg canvas;
with ``blit`` (the explorer, :mod:`baglm_nb.apps.widgets`) only the data are drawn again over a
cached background: images (:mod:`baglm_nb.analyses.raster`), lines, marks, strips, changed legend
cells. Pages save the same figure (``savefig``; ``_repr_png_`` in notebooks). Without a
:class:`~baglm_nb.inputs.datasets.Video` (a task's step texts only) it draws no ground truth.
Keyframes come from the video file (:func:`baglm_nb.inputs.video.frames_at`).

The numbers behind every mark come from :mod:`baglm_nb.analyses.belief_data`. Exports
:class:`BeliefFigure`, :func:`belief_figure`, :func:`step_colours` and (re-exported)
:func:`~baglm_nb.analyses.belief_data.keyframe_times`.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Sequence

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PatchCollection
from matplotlib.colors import ListedColormap, PowerNorm
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter, MaxNLocator
from matplotlib.transforms import ScaledTranslation

from baglm_nb.analyses.belief_data import (
    annotated_intervals,
    announced_status,
    keyframe_times,
    peak_hits,
    right_wrong,
    runs,
    top_states,
    truth_index,
)
from baglm_nb.analyses.belief_legend import (
    HIT,
    MAX_LISTED_STEPS,
    MISS,
    StepLegend,
    mmss,
    set_mmss_axis,
    short_label,
)
from baglm_nb.analyses.palette import NONE_STATE, STEP_COLOURS
from baglm_nb.analyses.raster import nearest_imshow, png_bytes
from baglm_nb.inputs.datasets import Video

__all__ = ["BeliefFigure", "belief_figure", "keyframe_times", "step_colours"]

#: ``style="auto"`` draws lines up to this many steps, heatmaps above.
MAX_LINE_STEPS = 5
#: Above this many steps the axis shows numbers only (the legend lists the annotated steps).
MAX_LABELLED_STEPS = MAX_LISTED_STEPS

#: Inches between stacked panels: room for a panel's title, 3 points above its top edge.
PANEL_GAP = 0.36
NONE_GREY = matplotlib.colors.to_rgba(NONE_STATE)
OUTLINE = "#ff7f00"
FONT = 8


def _row_name(y: float, k: int) -> str:
    """The tick label of heatmap row ``y``: the step number, ``none`` for row K."""
    row = round(y)
    return "none" if row == k else f"{row + 1}" if 0 <= row < k else ""


def step_colours(k: int) -> np.ndarray:
    """(K+1, 4) RGBA colours: one per step (:data:`~baglm_nb.analyses.palette.STEP_COLOURS`,
    repeating after the last), light grey for none."""
    hues = [STEP_COLOURS[i % len(STEP_COLOURS)] for i in range(k)]
    return np.array([matplotlib.colors.to_rgba(c) for c in hues] + [NONE_GREY])


class _Stack:
    """Top-down placement of axes in inches on a figure of fixed width (heights add up)."""

    def __init__(self, width: float, left: float, right: float) -> None:
        self.width, self.left, self.right = width, left, right
        self.items: list[tuple[str, float, float]] = []  # (name, gap above, height)

    def add(self, name: str, height: float, gap: float = 0.0) -> None:
        self.items.append((name, gap, height))

    def total(self) -> float:
        return sum(g + h for _, g, h in self.items)

    def rects(self) -> dict[str, tuple[float, float, float, float]]:
        total, top, out = self.total(), 0.0, {}
        w = (self.width - self.left - self.right) / self.width
        for name, gap, height in self.items:
            top += gap
            out[name] = (self.left / self.width, 1 - (top + height) / total, w, height / total)
            top += height
        return out


class BeliefFigure:
    """One video's belief views (module docstring); data replaced in place by :meth:`update`.

    Parameters
    ----------
    video : Video or sequence of str
        The annotated video (steps and ground truth), or only a task's step texts (no ground
        truth: no outlines, no right/wrong strips, no hits).
    num_rows : int
        T, the number of per-second rows of the beliefs :meth:`update` will receive.
    panels : sequence of {"baglm", "off_the_shelf"}
        The methods drawn, one panel and one top-state strip each.
    style : {"auto", "heatmap", "lines"}
        A state x time heatmap, or one line per state; ``"auto"`` draws lines up to
        :data:`MAX_LINE_STEPS` steps.
    width, dpi
        Figure width in inches (the height follows from K) and resolution of :meth:`png`.
    keyframes : sequence of (float, array), optional
        ``(time_s, (H, W, 3) uint8 image)`` pairs shown in a row above the panels.
    blit : bool
        Render the static parts once per video and title and redraw only the data in
        :meth:`png` (for the widget). Saving (:meth:`savefig`) draws everything either way.
    announced : bool
        Add a strip (and a legend column) for the step announced online (:meth:`update`'s
        ``announced``).
    legend : bool
        Draw the step legend table (leave it out where the page shows the steps itself).
    title_lines : int
        Lines kept free for the title (a title's own ``\n`` starts a line; long lines wrap).

    Attributes
    ----------
    figure : matplotlib.figure.Figure
    axes : dict
        ``"baglm"``/``"off_the_shelf"`` (the panels) and ``"strips"``.
    strips : dict
        The strip images by name (``"truth"``, each panel's name, ``"<panel>:right"``,
        ``"announced"``); ``get_array()`` holds each row's state (K = none) or right (1) /
        wrong (0): every ``row_step``-th row, where ``row_step`` is 1 unless the video has
        more than two rows per pixel of the axes (heatmaps then draw each block's maximum).
    tops : dict
        Each drawn method's top state per row after the latest :meth:`update`.
    """

    PANELS = ("baglm", "off_the_shelf")
    NAMES = {"baglm": "BaGLM", "off_the_shelf": "off-the-shelf LMM", "announced": "announced"}
    LEGEND_NAMES = {"baglm": "BaGLM R@1", "off_the_shelf": "LMM R@1", "announced": "announced"}
    TITLES = {
        "baglm": "BaGLM: belief in each state over time",
        "off_the_shelf": "off-the-shelf LMM: its step scores over time (no filter)",
    }

    def __init__(
        self,
        video: Video | Sequence[str],
        num_rows: int,
        *,
        panels: Sequence[str] = PANELS,
        style: str = "auto",
        width: float = 11.0,
        dpi: float = 80,
        keyframes: Sequence[tuple[float, np.ndarray]] | None = None,
        blit: bool = False,
        announced: bool = False,
        legend: bool = True,
        title_lines: int = 1,
    ) -> None:
        if style not in ("auto", "lines", "heatmap"):
            raise ValueError(f"style must be 'auto', 'lines' or 'heatmap', got {style!r}")
        unknown = [p for p in panels if p not in self.PANELS]
        if unknown or not panels:
            raise ValueError(f"panels must be among {self.PANELS}, got {tuple(panels)}")
        self.panels, self.requested_style = tuple(panels), style
        self.width, self.dpi, self.blit, self.with_announced = width, dpi, blit, announced
        self.with_legend, self.title_lines = legend, max(0, int(title_lines))
        self.figure = Figure(figsize=(width, 4.0), dpi=dpi)
        FigureCanvasAgg(self.figure)
        self._keyframes = list(keyframes or [])
        self.title_text = ""
        self.set_video(video, num_rows)

    # -- building ----------------------------------------------------------------------------

    def set_video(self, video: Video | Sequence[str], num_rows: int) -> None:
        """Show another video (or the same one with another row count); data start at 0."""
        self.video = video if isinstance(video, Video) else None
        self.steps = tuple(video.steps if isinstance(video, Video) else video)
        self.num_rows = int(num_rows)
        k = len(self.steps)
        auto = "lines" if k <= MAX_LINE_STEPS else "heatmap"
        self.style = auto if self.requested_style == "auto" else self.requested_style
        self.colours = step_colours(k)
        self._build()

    def _strip_rows(self) -> list[tuple[str, str, float]]:
        """``(name, label, height in rows)`` of the strips, top to bottom."""
        rows = [("truth", "ground truth", 1.0)] if self.video else []
        names = [*self.panels] + (["announced"] if self.with_announced else [])
        for name in names:
            label = (
                "announced (online)" if name == "announced" else f"{self.NAMES[name]}: top state"
            )
            rows.append((name, label, 1.0))
            if self.video:
                rows.append((f"{name}:right", "right / wrong", 0.55))
        return rows

    def _build(self) -> None:
        fig, k = self.figure, len(self.steps)
        fig.clear()
        # long videos: at most two drawn columns per pixel (heatmaps keep each block's maximum)
        pixels = (self.width - 2.35 - 0.8) * self.dpi
        self.row_step = max(1, math.ceil(self.num_rows / (2 * pixels)))
        self.axes, self.artists, self.markers, self.strips = {}, {}, {}, {}
        self.tops: dict[str, np.ndarray] = {}
        self._dynamic: list = []
        self._strip_texts: list = []
        self.legend = self._make_legend() if self.with_legend else None
        stack = _Stack(self.width, left=2.35, right=0.8)
        # room for the title's lines; without a title, for the first panel's own heading
        stack.add("title", 0.42 + 0.17 * (self.title_lines - 1) if self.title_lines else 0.05)
        if self._keyframes:
            stack.add("keyframes", 1.25, gap=0.1)
        panel_h = 1.6 if self.style == "lines" else float(np.clip(0.15 * (k + 1), 1.2, 6.0))
        for name in self.panels:
            stack.add(name, panel_h, gap=PANEL_GAP)
        strip_rows = self._strip_rows()
        stack.add("strips", 0.2 * sum(h + 0.25 for *_, h in strip_rows), gap=0.3)
        if self.legend:
            stack.add("legend", self.legend.height(), gap=0.6)
        else:
            stack.add("legend", 0.0, gap=0.35)
        stack.add("bottom", 0.1)
        fig.set_size_inches(self.width, stack.total())
        rects = stack.rects()
        first = None
        for name in self.panels:
            ax = fig.add_axes(rects[name], sharex=first)
            first = first or ax
            self.axes[name] = ax
            if self.style == "heatmap":
                self._heatmap_panel(name, ax, rects[name])
            else:
                self._lines_panel(name, ax)
        self.axes["strips"] = fig.add_axes(rects["strips"], sharex=first)
        self._strips(strip_rows)
        if self._keyframes:
            self._draw_keyframes(rects["keyframes"])
        self._legend_texts: list = []
        self.legend_row = None
        if self.legend:
            top = rects["legend"][1] + rects["legend"][3]
            self._legend_texts = self.legend.draw(fig, top)
            # the legend's band: from halfway up the gap above it to the bottom
            band_top = top + 0.3 / stack.total()
            self.legend_row = int(round((1 - band_top) * stack.total() * self.dpi))
        self._title = None
        if self.title_lines:
            self._title = fig.text(
                0.5,
                rects["title"][1] + rects["title"][3] - 0.1 / fig.get_figheight(),
                "",
                ha="center",
                va="top",
                fontsize=9.5,
                weight="bold",
            )
        self._set_title(self.title_text)
        for ax in (self.axes[p] for p in self.panels):
            ax.tick_params(labelbottom=False, labelsize=FONT)
        first.set_xlim(0, max(self.num_rows, 1))
        for name in self.panels:  # the data, and on heatmaps everything drawn over them
            ax = self.axes[name]
            if self.style == "heatmap":
                over = [*ax.collections, *ax.lines, *ax.spines.values()]
                self._dynamic += [self.artists[name][0], *over]
            else:
                self._dynamic += list(ax.lines)
        if self.blit:
            for artist in [*self._dynamic, *self._legend_texts]:
                artist.set_animated(True)
        self._background = None

    def _make_legend(self) -> StepLegend:
        marks = "Orange outlines" if self.style == "heatmap" else "Shaded spans"
        columns = [*self.panels] + (["announced"] if self.with_announced else [])
        notes = [
            "BaGLM / LMM columns: R@1 hit when the step's highest-probability second lies inside "
            f"its annotation (white dot on the panel; red cross: a miss). {marks}: the "
            "annotated intervals. right / wrong strips: the top state is a step annotated at "
            "that second (or none where nothing is annotated)."
        ]
        if self.with_announced:
            notes.append(
                "announced: the step was announced (after hysteresis) inside its annotation."
            )
        return StepLegend(
            self.steps,
            self.video,
            {c: self.LEGEND_NAMES[c] for c in columns},
            self.colours,
            self.width,
            notes if self.video else (),
        )

    def _step_labels(self, ax) -> None:
        """Numbered, abbreviated step labels (full text in the legend); none its own row."""
        k = len(self.steps)
        annotated = {s.step_index for s in self.video.segments} if self.video else set(range(k))
        if k <= MAX_LABELLED_STEPS:
            labels = [f"{i + 1}. {short_label(s, 34)}" for i, s in enumerate(self.steps)]
            ax.set_yticks(range(k + 1), [*labels, "none"], fontsize=FONT)
            for i, label in enumerate(ax.get_yticklabels()[:k]):
                label.set_color("black" if i in annotated else "0.5")
        else:
            ax.yaxis.set_major_locator(MaxNLocator(12, integer=True))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _p: _row_name(y, k)))
            ax.tick_params(axis="y", labelsize=FONT)
        ax.text(
            0.0,
            1.0,
            self.TITLES[ax.get_label()],
            transform=ax.transAxes + ScaledTranslation(0, 3 / 72, self.figure.dpi_scale_trans),
            ha="left",
            va="bottom",
            fontsize=8.5,
            weight="bold",
        )

    def _heatmap_panel(self, name: str, ax, rect) -> None:
        k, t = len(self.steps), max(self.num_rows, 1)
        ax.set_label(name)
        img = nearest_imshow(
            ax,
            np.zeros((k + 1, len(range(0, t, self.row_step)))),
            cmap="Blues",
            norm=PowerNorm(0.6, vmin=0.0, vmax=1.0),
            extent=(0, t, k + 0.5, -0.5),
        )
        ax.set_ylim(k + 0.5, -0.5)
        ax.axhline(k - 0.5, color="0.35", lw=0.8)
        self._step_labels(ax)
        outlines = [
            Rectangle((start, i - 0.5), end - start, 1.0)
            for i, start, end in (annotated_intervals(self.video, t) if self.video else [])
        ]
        if outlines:  # one collection: redrawn over the heatmap in one call
            ax.add_collection(
                PatchCollection(outlines, facecolor="none", edgecolor=OUTLINE, lw=1.5, gid="truth"),
                autolim=False,
            )
        hit = ax.plot([], [], "o", ms=4.5, mfc="white", mec="black", mew=0.8, ls="none")[0]
        miss = ax.plot([], [], "X", ms=6, mfc=MISS, mec="white", mew=0.5, ls="none")[0]
        self.artists[name], self.markers[name] = [img], (hit, miss)
        cax = self.figure.add_axes(
            (rect[0] + rect[2] + 0.1 / self.width, rect[1], 0.12 / self.width, rect[3])
        )
        bar = self.figure.colorbar(img, cax=cax, ticks=[0, 0.1, 0.25, 0.5, 1.0])
        bar.ax.tick_params(labelsize=6.5)

    def _lines_panel(self, name: str, ax) -> None:
        k, t = len(self.steps), max(self.num_rows, 1)
        ax.set_label(name)
        x, zeros = np.arange(t) + 0.5, np.zeros(t)
        lines = [ax.plot(x, zeros, color=self.colours[i], lw=1.2)[0] for i in range(k)]
        lines.append(ax.plot(x, zeros, color="0.45", lw=1.0, ls="--")[0])
        for i, start, end in annotated_intervals(self.video, t) if self.video else []:
            ax.axvspan(start, end, color=self.colours[i], alpha=0.14, lw=0, gid="truth")
        ax.set_ylim(-0.02, 1.05)
        ax.set_yticks([0.0, 0.5, 1.0])
        ax.tick_params(labelsize=FONT)
        ax.text(
            0.0,
            1.03,
            self.TITLES[name] + " (colours: legend; dashed: none)",
            transform=ax.transAxes,
            ha="left",
            va="bottom",
            fontsize=8.5,
            weight="bold",
        )
        hit = ax.plot([], [], "o", ms=5, mfc="white", mec="black", mew=0.9, ls="none")[0]
        miss = ax.plot([], [], "X", ms=6.5, mfc=MISS, mec="white", mew=0.5, ls="none")[0]
        self.artists[name], self.markers[name] = lines, (hit, miss)

    def _strips(self, rows: list[tuple[str, str, float]]) -> None:
        ax, k, t = self.axes["strips"], len(self.steps), max(self.num_rows, 1)
        states = ListedColormap(self.colours)
        right = ListedColormap([MISS, HIT])
        y, centres, labels = 0.0, [], []
        for name, label, height in rows:
            cmap, top = (right, 1) if name.endswith(":right") else (states, k)
            img = nearest_imshow(
                ax,
                np.zeros((1, len(range(0, t, self.row_step))), dtype=np.int64),
                cmap=cmap,
                vmin=-0.5,
                vmax=top + 0.5,
                extent=(0, t, y + height, y),
            )
            self.strips[name] = img
            centres.append(y + height / 2)
            labels.append(label)
            y += height + 0.25
        ax.set_ylim(y - 0.25, 0)
        ax.set_yticks(centres, labels, fontsize=FONT)
        ax.tick_params(axis="x", labelsize=FONT)
        set_mmss_axis(ax.xaxis)
        ax.annotate(
            "time (mm:ss)",
            (0.5, 0.0),
            xycoords="axes fraction",
            xytext=(0, -20),
            textcoords="offset points",
            ha="center",
            va="top",
            fontsize=FONT,
        )
        if self.video:
            truth = truth_index(self.video, t)
            self.strips["truth"].set_data(truth[None, :: self.row_step])
            self._run_numbers(ax, truth, self.strips["truth"], static=True)
        self._dynamic += [img for name, img in self.strips.items() if name != "truth"]

    def _run_numbers(self, ax, values: np.ndarray, img, *, static: bool = False) -> None:
        """Write each long enough run's step number on a strip."""
        k = len(self.steps)
        x0, x1, y1, y0 = img.get_extent()
        shortest = max(3, int(0.022 * len(values)))
        for start, length, state in runs(values):
            if state >= k or length < shortest:
                continue
            r, g, b, _ = self.colours[state]
            ink = "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.55 else "white"
            text = ax.text(
                start + length / 2,
                (y0 + y1) / 2,
                str(state + 1),
                ha="center",
                va="center",
                fontsize=6.5,
                color=ink,
                clip_on=True,
            )
            if not static:
                text.set_animated(self.blit)
                self._strip_texts.append(text)

    def _draw_keyframes(self, rect) -> None:
        n = len(self._keyframes)
        x, y, w, h = rect
        for i, (time_s, image) in enumerate(self._keyframes):
            ax = self.figure.add_axes((x + i * w / n, y, w / n * 0.96, h))
            ax.imshow(image)
            ax.set_axis_off()
            ax.set_title(mmss(time_s), fontsize=FONT)
            for key in (*self.panels, "strips"):
                self.axes[key].axvline(time_s, color="black", ls="--", lw=0.8)

    # -- data ----------------------------------------------------------------------------------

    def _set_title(self, title: str) -> None:
        self.title_text = title
        if self._title is None:  # drawn by the caller (the explorer's title widget)
            return
        lines = [textwrap.fill(line, int(self.width * 11.5)) for line in title.split("\n")]
        self._title.set_text("\n".join(lines) if title else "")

    def update(
        self,
        baglm: np.ndarray,
        off_the_shelf: np.ndarray | None = None,
        title: str = "",
        *,
        announced: np.ndarray | None = None,
    ) -> None:
        """Show new (T, K+1) beliefs and scores (none last); ``announced`` (T,) states.

        ``off_the_shelf`` is needed when that panel is drawn; ``announced`` (the announced
        state per row, K for none) when the figure was built with ``announced=True``.
        """
        k, t = len(self.steps), self.num_rows
        given = {"baglm": baglm, "off_the_shelf": off_the_shelf}
        for name in self.panels:
            if given[name] is None:
                raise ValueError(f"{name} values are needed: the figure draws that panel")
            v = np.asarray(given[name], dtype=np.float64)
            if v.shape != (t, k + 1):
                raise ValueError(f"{name} must be ({t}, {k + 1}), got {v.shape}")
            if self.style == "heatmap":
                starts = np.arange(0, t, self.row_step)
                self.artists[name][0].set_data(np.maximum.reduceat(v, starts, axis=0).T)
            else:
                for i, line in enumerate(self.artists[name]):
                    line.set_ydata(v[:, i])
            self._peaks(name, v)
            self._show_top(name, top_states(v))
        if self.with_announced:
            if announced is None or np.shape(announced) != (t,):
                raise ValueError(f"announced must be ({t},) states, got {np.shape(announced)}")
            self._show_top("announced", np.asarray(announced, dtype=np.int64))
        for text in self._strip_texts:
            text.remove()
        self._strip_texts = []
        for name in self.tops:
            self._run_numbers(self.axes["strips"], self.tops[name], self.strips[name])
        if title != self.title_text:
            self._set_title(title)
            if self._title is not None:
                self._background = None

    def _peaks(self, name: str, v: np.ndarray) -> None:
        """Mark each annotated step's highest row as a hit or a miss (R@1's rule)."""
        if not self.video:
            return
        peaks = peak_hits(self.video, v)
        for marker, want in zip(self.markers[name], (True, False), strict=True):
            steps = [s for s, (_, hit) in peaks.items() if hit == want]
            rows = np.array([peaks[s][0] for s in steps], dtype=int)
            y = steps if self.style == "heatmap" else v[rows, steps]
            marker.set_data(rows + 0.5, y)
        status = {s: "hit" if hit else "miss" for s, (_, hit) in peaks.items()}
        if self.legend:
            self.legend.set_status(name, status)

    def _show_top(self, name: str, top: np.ndarray) -> None:
        self.tops[name] = top
        self.strips[name].set_data(top[None, :: self.row_step])
        if not self.video:
            return
        right = right_wrong(self.video, top)[None, :: self.row_step]
        self.strips[f"{name}:right"].set_data(right)
        if name == "announced" and self.legend:
            self.legend.set_status(name, announced_status(self.video, top))

    # -- output --------------------------------------------------------------------------------

    def render(self) -> np.ndarray:
        """Draw the figure into its Agg canvas and return the ``(H, W, 4)`` RGBA pixels (a view).

        With ``blit``, the static parts are drawn once per video (the background) and each
        call redraws only the data: the panels' images, lines and marks, the strips and their
        numbers, and the legend's outcome cells whose text or colour changed (the rows from
        :attr:`legend_row` down are otherwise the previous call's pixels).
        """
        canvas = self.figure.canvas
        if not self.blit:
            canvas.draw()
            return np.asarray(canvas.buffer_rgba())
        if self._background is None:
            canvas.draw()  # everything but the animated data
            self._background = canvas.copy_from_bbox(self.figure.bbox)
            if self.legend:
                self.legend.forget_pixels()
        else:
            canvas.restore_region(self._background)
        for artist in [*self._dynamic, *self._strip_texts]:
            (artist.axes or self.figure).draw_artist(artist)
        if self.legend:
            self.legend.redraw_changed(self.figure, self._background, self.legend_row)
        return np.asarray(canvas.buffer_rgba())

    def png(self) -> bytes:
        """The figure as PNG bytes (:meth:`render`; with ``blit`` only the data are redrawn)."""
        return png_bytes(self.render()[..., :3])

    def savefig(self, fname, **kwargs) -> None:
        """``Figure.savefig`` with every artist drawn (also the animated ones of ``blit``)."""
        everything = [*self._dynamic, *self._strip_texts, *self._legend_texts]
        animated = [a for a in everything if a.get_animated()]
        for artist in animated:
            artist.set_animated(False)
        try:
            self.figure.savefig(fname, **kwargs)
        finally:
            for artist in animated:
                artist.set_animated(True)

    def _repr_png_(self) -> bytes:
        """Notebooks display the figure as a PNG image."""
        buf = io.BytesIO()
        self.savefig(buf, format="png", dpi=self.dpi)
        return buf.getvalue()


def belief_figure(
    video: Video,
    baglm: np.ndarray,
    off_the_shelf: np.ndarray,
    *,
    title: str = "",
    keyframes: Sequence[tuple[float, np.ndarray]] | None = None,
    style: str = "auto",
    dpi: float = 100,
) -> BeliefFigure:
    """A :class:`BeliefFigure` of one video, filled in (save it with ``save_figure``)."""
    plot = BeliefFigure(
        video, np.shape(baglm)[0], style=style, dpi=dpi, keyframes=keyframes, blit=False
    )
    plot.update(baglm, off_the_shelf, title)
    return plot
