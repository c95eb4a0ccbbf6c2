"""The step legend under a belief view: each step's number, colour, full text and outcome.

The views' axes carry short numbered labels (:func:`short_label`); this table carries the full
step texts, when each step is annotated (mm:ss) and one outcome column per method (R@1 hit or
miss, or for online runs whether the step was announced inside its annotation), plus a note
on how to read the marks. Drawn as figure texts by :class:`StepLegend`; the outcome cells are
replaced in place (:meth:`StepLegend.set_status`). The time axes of the views tick at whole
seconds, minutes or hours (:class:`MMSSLocator`, labelled by :func:`mmss`), and
:func:`reading_guide` is the caption that says how to read what a view draws.

Exports :data:`STATUS_TEXT`, :class:`StepLegend`, :class:`MMSSLocator`, :func:`mmss`,
:func:`set_mmss_axis`, :func:`reading_guide` and (from :mod:`.short_text`) :func:`short_label`.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np
from matplotlib.ticker import FuncFormatter, Locator
from matplotlib.transforms import Bbox

from baglm_nb.analyses.short_text import short_label
from baglm_nb.inputs.datasets import Video

__all__ = [
    "HIT",
    "MISS",
    "STATUS_TEXT",
    "MMSSLocator",
    "StepLegend",
    "mmss",
    "mmss_step",
    "reading_guide",
    "set_mmss_axis",
    "short_label",
]

HIT, MISS = "#1a9850", "#d73027"
#: The text of each outcome (``belief_data.peak_hits`` / ``announced_status``).
STATUS_TEXT = {
    "hit": "\u2713 hit",
    "miss": "\u2717 miss",
    "missed": "\u2717 not announced",
    "false": "\u2717 announced, not annotated",
    "-": "\u2013",
}
#: Inches per character of the legend's 8 pt text (DejaVu Sans, generous).
CHAR_IN = 0.066
#: Inches per line of the table, and the matching matplotlib line spacing of 8 pt text.
LINE_IN, LINE_SPACING = 0.17, 1.53
#: The colour of each group of outcomes.
GROUP_COLOURS = {"hit": HIT, "miss": MISS, "-": "0.5"}
#: Above this many steps the legend lists the annotated steps only.
MAX_LISTED_STEPS = 40
#: Tick spacings of a time axis in seconds: whole seconds, minutes and hours that read on a clock.
MMSS_STEPS = (1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 900, 1200, 1800, 3600)


def mmss(x: float, _pos=None) -> str:
    """Seconds as ``mm:ss`` (a matplotlib tick formatter too)."""
    x = max(float(x), 0.0)
    return f"{int(x // 60):02d}:{int(x % 60):02d}"


def mmss_step(span: float, most: int = 12) -> int:
    """The smallest spacing of :data:`MMSS_STEPS` that puts at most ``most`` + 1 ticks on a time
    axis ``span`` seconds long (whole hours beyond the list)."""
    for step in MMSS_STEPS:
        if span / step <= most:
            return step
    return 3600 * int(np.ceil(span / (3600 * most)))


class MMSSLocator(Locator):
    """Ticks of a time axis in seconds at multiples of :func:`mmss_step`: whole seconds, so that
    no two :func:`mmss` labels are the same (a 4-s clip ticks at 00:00, 00:01, ... 00:04, never
    00:00, 00:00, 00:01)."""

    def __init__(self, most: int = 12) -> None:
        self.most = most

    def __call__(self) -> list[float]:
        return self.tick_values(*self.axis.get_view_interval())

    def tick_values(self, vmin: float, vmax: float) -> list[float]:
        lo, hi = sorted((max(float(vmin), 0.0), max(float(vmax), 0.0)))
        step = mmss_step(hi - lo, self.most)
        first = step * np.ceil(lo / step - 1e-9)
        return [float(x) for x in np.arange(first, hi + 1e-9, step)]


def set_mmss_axis(axis, most: int = 12) -> None:
    """Tick a matplotlib time axis (seconds) with :class:`MMSSLocator` and :func:`mmss`."""
    axis.set_major_locator(MMSSLocator(most))
    axis.set_major_formatter(FuncFormatter(mmss))


def reading_guide(
    style: str,
    *,
    truth: bool,
    announced: bool,
    annotated: bool | None = None,
    method: str = "BaGLM",
) -> str:
    """How to read a one-panel belief view, describing only what it draws.

    Parameters
    ----------
    style : {"heatmap", "lines"}
        The panel's drawn style (:attr:`BeliefFigure.style`, after ``"auto"`` was resolved).
    truth : bool
        Whether the view has a ground truth (outlines or shaded spans, peak marks, the ground-
        truth strip and right / wrong strips).
    announced : bool
        Whether it has the announced-step strip (online runs).
    annotated : bool, optional
        Whether an annotated interval falls inside the drawn time span (outlines or shaded
        spans and peak marks are drawn); default: ``truth``.
    method : str
        The panel's method, as the text names it.
    """
    if style == "heatmap":
        top = f"Top: {method}'s belief in each step and in none over time (darker: more probable)"
        spans = "orange outlines: the annotated intervals"
    elif style == "lines":
        top = (
            f"Top: {method}'s belief in each step over time, one line per step in the colour "
            "of the steps table, and in none (dashed grey)"
        )
        spans = "shaded spans (in the step's colour): the annotated intervals"
    else:
        raise ValueError(f"style must be 'heatmap' or 'lines', got {style!r}")
    strips = ["the top state at every second"] + (
        ["the step announced after hysteresis"] if announced else []
    )
    if not truth:
        return (
            f"{top}. Strips: {' and '.join(strips)}, in the colours of the steps table (grey: "
            "none, or nothing announced yet). No ground truth: nothing is outlined or marked "
            "right or wrong."
        )
    marks = (
        f"; {spans}; white dot / red cross: each annotated step's highest belief inside / "
        "outside its annotation (R@1 hit / miss)"
        if annotated in (None, True)
        else "; no step is annotated inside the drawn span, so nothing is outlined"
    )
    return (
        f"{top}{marks}. Strips: the ground truth, {', '.join(strips)}, each with right (green) "
        "/ wrong (red) under it; numbers are the step numbers of the table."
    )


def when_annotated(video: Video, step: int, most: int = 2) -> str:
    """The step's first ``most`` annotated intervals, ``mm:ss–mm:ss, ... (+N more)``, or
    ``not annotated``."""
    spans = [s for s in video.segments if s.step_index == step]
    text = ", ".join(f"{mmss(s.start)}\u2013{mmss(s.end)}" for s in spans[:most])
    more = f" (+{len(spans) - most} more)" if len(spans) > most else ""
    return text + more or "not annotated"


class StepLegend:
    """The legend table of a belief view (module docstring).

    Parameters
    ----------
    steps : sequence of str
        The task's step texts.
    video : Video, optional
        The annotated video (adds the annotated column and the outcome columns).
    columns : dict
        Outcome column key -> header (e.g. ``{"baglm": "BaGLM"}``); needs ``video``.
    colours : array
        (K+1, 4) step colours (the swatches).
    width : float
        Figure width in inches.
    notes : sequence of str
        Extra sentences for the note under the table.
    """

    def __init__(
        self,
        steps: Sequence[str],
        video: Video | None,
        columns: dict[str, str],
        colours: np.ndarray,
        width: float,
        notes: Sequence[str] = (),
    ) -> None:
        self.steps, self.video, self.colours, self.width = tuple(steps), video, colours, width
        self.columns = dict(columns) if video else {}
        k = len(self.steps)
        if k <= MAX_LISTED_STEPS or not video:
            self.listed = list(range(k))
        else:
            self.listed = sorted({s.step_index for s in video.segments})
        self.when_in = 1.7 if video else 0.0
        self.col_in = {c: 1.9 if c == "announced" else 1.0 for c in self.columns}
        free = width - 1.05 - self.when_in - sum(self.col_in.values())
        self.chars, self.when_chars = max(30, int(free / CHAR_IN)), int(self.when_in / CHAR_IN)
        self.note = self._note(notes)
        self.cells: dict[str, dict[int, object]] = {}  # column -> listed step -> its text
        self.cell_boxes: dict[str, dict[int, tuple[float, float, float, float]]] = {}
        self.status: dict[str, dict[int, str]] = {}
        self.row_lines: list[int] = []
        self._pixels = None  # the legend's rows as last drawn (a canvas region)
        self._shown: dict[int, tuple[str, object]] = {}  # id(cell) -> (text, colour) drawn

    def _note(self, notes: Sequence[str]) -> str:
        k, shown = len(self.steps), len(self.listed)
        parts = [f"Showing the {shown} annotated of {k} steps." if shown < k else ""]
        if not self.video:
            parts.append("No ground truth: the steps come from a task, not an annotated video.")
        parts += list(notes)
        chars = int((self.width - 0.7) / (CHAR_IN * 0.9))
        return "\n".join(textwrap.wrap(" ".join(p for p in parts if p), chars))

    def _lines(self, step: int) -> tuple[list[str], list[str]]:
        text = textwrap.wrap(self.steps[step], self.chars) or [""]
        if not self.video:
            return text, []
        return text, textwrap.wrap(when_annotated(self.video, step), self.when_chars)

    def height(self) -> float:
        """Inches the table needs (header, one row per listed step, the note)."""
        lines = 1 + self.note.count("\n") + 1
        lines += sum(max(len(a), len(b)) for a, b in map(self._lines, self.listed))
        return LINE_IN * lines + 0.1

    def draw(self, figure, top: float) -> list:
        """Draw the table with its top at figure fraction ``top``; returns the outcome texts.

        Each outcome cell is its own text (:attr:`cells`), with its box in figure fractions
        (:attr:`cell_boxes`), so that a redraw can draw only the cells whose outcome changed.
        """
        height = figure.get_figheight()
        x = {"swatch": 0.25, "num": 0.42, "text": 0.75}
        x["when"] = x["text"] + self.chars * CHAR_IN + 0.15
        x_col = x["when"] + self.when_in
        for col in self.columns:
            x[col], x_col = x_col, x_col + self.col_in[col]

        def put(col: str, y: float, text: str, **kw):
            kw = {"fontsize": 8, "va": "top", "ha": "left", "linespacing": LINE_SPACING, **kw}
            return figure.text(x[col] / self.width, y, text, **kw)

        header = {"num": "#", "text": "step (full text)"}
        if self.video:
            header["when"] = "annotated (mm:ss)"
        for col, text in {**header, **self.columns}.items():
            put(col, top, text, weight="bold")
        y = top - LINE_IN / height
        self.row_lines = []
        tops = {}
        for step in self.listed:
            tops[step] = y
            text, when = self._lines(step)
            put("swatch", y, "\u25a0", color=self.colours[step], fontsize=10)
            put("num", y, f"{step + 1}.")
            put("text", y, "\n".join(text))
            if self.video:
                put("when", y, "\n".join(when))
            self.row_lines.append(max(len(text), len(when)))
            y -= self.row_lines[-1] * LINE_IN / height
        self.cell_boxes = {}
        for col in self.columns:
            self.cells[col] = {step: put(col, tops[step], "") for step in self.listed}
            x0, x1 = x[col] / self.width, (x[col] + self.col_in[col]) / self.width
            self.cell_boxes[col] = {
                step: (x0, tops[step] - n * LINE_IN / height, x1, tops[step])
                for step, n in zip(self.listed, self.row_lines, strict=True)
            }
        put("num", y - 0.04 / height, self.note, color="0.3", fontsize=7.5, linespacing=1.2)
        return [t for texts in self.cells.values() for t in texts.values()]

    def set_status(self, column: str, status: dict[int, str]) -> None:
        """Fill a column from ``{step: "hit" | "miss" | "missed" | "false" | "-"}``."""
        self.status[column] = {step: status.get(step, "-") for step in self.listed}
        for step, state in self.status[column].items():
            group = "hit" if state == "hit" else "-" if state == "-" else "miss"
            self.cells[column][step].set_text(STATUS_TEXT[state])
            self.cells[column][step].set_color(GROUP_COLOURS[group])

    def forget_pixels(self) -> None:
        """The canvas was drawn afresh: the next :meth:`redraw_changed` draws every cell."""
        self._pixels = None

    def redraw_changed(self, figure, background, top_row: int) -> None:
        """Blitting: put back the legend's rows (from pixel row ``top_row`` down) as last drawn,
        then redraw only the outcome cells whose text or colour changed, each over its own
        box of ``background`` (the canvas region without the cells)."""
        canvas = figure.canvas
        width, height = canvas.get_width_height(physical=True)
        cells = [
            (text, self.cell_boxes[column][step])
            for column, texts in self.cells.items()
            for step, text in texts.items()
        ]
        if self._pixels is None:
            changed = cells
        else:
            canvas.restore_region(self._pixels)
            changed = [
                (text, box)
                for text, box in cells
                if self._shown.get(id(text)) != (text.get_text(), text.get_color())
            ]
            for _text, (x0, y0, x1, y1) in changed:  # the cell's box, pixel rows top-down
                top, bottom = int((1 - y1) * height), int(np.ceil((1 - y0) * height))
                left, right = int(x0 * width), int(np.ceil(x1 * width))
                canvas.restore_region(background, (left, top, right, bottom), (left, top))
        for text, _box in changed:
            figure.draw_artist(text)
            self._shown[id(text)] = (text.get_text(), text.get_color())
        if changed or self._pixels is None:
            box = Bbox.from_extents(0, 0, width, height - top_row)
            self._pixels = canvas.copy_from_bbox(box)

    def cell(self, column: str, step: int) -> str:
        """The outcome text shown for ``step`` in ``column``."""
        return STATUS_TEXT[self.status.get(column, {}).get(step, "-")]
