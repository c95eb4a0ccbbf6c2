"""What a notebook shows: a table in full, a figure saved and shown inline.

The notebooks end their cells with these instead of a bare DataFrame or a figure that is only
saved, so the executed notebook and its HTML copy (``scripts/run_notebooks.sh``) carry every
table and figure, readable as they are:

- :func:`show_table` renders a table in full (:func:`format_cells`): every row up to
  :data:`MAX_ROWS` and every cell without truncation, integers as integers, floats with the
  decimals they need (1 to 3), one missing-value marker :data:`MISSING` for NaN, None, NA and
  empty text, no row index (a meaningful index becomes a column), text left-aligned, the title as
  the caption, no ``-0.0`` (a value that rounds to zero prints unsigned), the workbench's column
  names in words (:data:`HEADERS`; a metric's from its spec, :func:`header`), and an optional
  ``note`` under the table (what agrees with the paper by construction, where the simulation
  departs from it).
- :func:`show_figure` saves a figure (:func:`~baglm_nb.analyses.plots.save_figure`: PNG + PDF),
  shows the saved PNG (embedded in the notebook) and closes the figure, so that the inline
  backend does not show it a second time; an optional ``note`` is shown under it.
- :func:`quality_text` writes one video's online metrics as one line (notebook 09's timeline
  titles and ``follow``'s quality line).

Exports :data:`MISSING`, :data:`MAX_ROWS`, :data:`HEADERS`, :class:`TableView`,
:func:`header`, :func:`in_percent`, :func:`axis_label`, :func:`format_cells`,
:func:`show_table`, :func:`show_figure` and :func:`quality_text`.
"""

from __future__ import annotations

import html
import math
import numbers
import os
from collections.abc import Mapping
from typing import Any

import pandas as pd

from baglm_nb.analyses.result_table import ResultTable
from baglm_nb.inputs.metric_specs import FRACTION, METRICS, R_AT_1, metric_spec

__all__ = [
    "HEADERS",
    "MAX_ROWS",
    "MISSING",
    "TableView",
    "axis_label",
    "format_cells",
    "header",
    "in_percent",
    "quality_text",
    "show_figure",
    "show_table",
]

#: The one marker of a missing value (NaN, None, pd.NA, empty text) in every shown table.
MISSING = "\u2013"

#: Tables up to this many rows are shown in full; longer ones show their first MAX_ROWS rows.
MAX_ROWS = 200

#: Most decimals a float is printed with (a column uses the fewest that show all its values).
MAX_DECIMALS = 3

#: Cells of a column whose longest text is at most this long never wrap in the HTML.
WRAP_CHARS = 40


#: Column names of the workbench's tables, in words (a name not listed is shown as it is).
HEADERS: dict[str, str] = {
    "off_the_shelf": "off-the-shelf",
    "paper_off_the_shelf": "paper: off-the-shelf",
    "baglm": "BaGLM",
    "paper_baglm": "paper: BaGLM",
    "gain": "gain",
    "paper_gain": "paper: gain",
    "gain_difference": "gain \u2212 paper gain",
    "D_diagnostic": "D (diagnostic)",
    "baglm_diagnostic": "BaGLM (diagnostic)",
    "gain_diagnostic": "gain (diagnostic)",
    "paper_static": "paper: static",
    "paper_readiness": "paper: readiness",
    "paper_validity": "paper: validity",
    "paper_both": "paper: both",
    "paper_order": "paper: order",
    "paper_pattern": "paper: pattern",
    "segment_duration": "segment (s)",
    "num_steps": "steps K",
    "queries_per_segment": "queries / segment",
    "violated_pct": "violated (%)",
    "tasks_violated_pct": "tasks with a violation (%)",
    "tasks_with_violation": "tasks with a violation",
    "exact_0_pct": "exactly 0 (%)",
    "exact_1_pct": "exactly 1 (%)",
    "graded_pct": "graded (%)",
    "workbench": "workbench",
    "lag_s": "lag (s)",
    "detection_pct": "detected (%)",
    "unedited_videos": "unedited videos",
    "false_alerts_per_video": "false alerts / unedited video",
}


def header(name: object) -> str:
    """A column name in words: :data:`HEADERS`, a metric's
    :attr:`~baglm_nb.inputs.metric_specs.MetricSpec.header` (its label and unit, from
    :data:`~baglm_nb.inputs.metric_specs.METRICS`), else the name as text."""
    key = str(name)
    if key in HEADERS:
        return HEADERS[key]
    return METRICS[key].header if key in METRICS else key


def in_percent(key: str) -> bool:
    """Whether a metric column is drawn times 100 in percent: a metric whose unit is a
    fraction (:data:`~baglm_nb.inputs.metric_specs.METRICS`)."""
    return key in METRICS and METRICS[key].unit == FRACTION


def axis_label(key: str) -> str:
    """A metric column's axis label in the unit it is drawn in: a fraction's label with
    "(%)" (:func:`in_percent`), ``workbench`` (R@1, stored in percent) as R@1's header, any
    other metric's :func:`header`."""
    if in_percent(key):
        return f"{METRICS[key].label} (%)"
    return metric_spec(R_AT_1).header if key == "workbench" else header(key)


def _missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    if isinstance(value, str):
        return not value.strip()
    return isinstance(value, float) and math.isnan(value)


def _decimals(values: list[float]) -> int:
    """The fewest decimals (1 to :data:`MAX_DECIMALS`) that print every value exactly."""
    for d in range(1, MAX_DECIMALS):
        if all(abs(v - round(v, d)) <= 1e-9 * max(1.0, abs(v)) for v in values):
            return d
    return MAX_DECIMALS


def _cell(value: Any, decimals: int | None = None) -> str:
    """One value as text: the marker, an integer, a float with ``decimals`` (or its own)."""
    if _missing(value):
        return MISSING
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        v = float(value)
        if math.isinf(v):
            return str(v)
        text = f"{v:.{_decimals([v]) if decimals is None else decimals}f}"
        return text[1:] if text.startswith("-") and not text.strip("-0.") else text
    return str(value)


def _column(series: pd.Series) -> list[str]:
    """A column's cells as text; a float column shares one number of decimals."""
    values = series.tolist()
    if pd.api.types.is_float_dtype(series.dtype):
        finite = [float(v) for v in values if not _missing(v) and math.isfinite(v)]
        decimals = _decimals(finite) if finite else 1
        return [_cell(v, decimals) for v in values]
    return [_cell(v) for v in values]


def _without_index(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with a plain row index dropped, or a meaningful one turned into columns."""
    index = df.index
    plain = index.nlevels == 1 and index.name is None and pd.api.types.is_integer_dtype(index)
    if plain:
        return df.reset_index(drop=True)
    names = [
        n if n is not None else ("index" if index.nlevels == 1 else f"level_{i}")
        for i, n in enumerate(index.names)
    ]
    return df.rename_axis(names).reset_index()


def format_cells(df: pd.DataFrame | pd.Series) -> pd.DataFrame:
    """``df`` as text, cell by cell, the way :func:`show_table` shows it.

    Integer columns (also nullable ``Int64``) and Python integers print as integers; a float
    column prints every value with the fewest decimals (1 to :data:`MAX_DECIMALS`) that show all
    of them, never as ``-0.0``; NaN, None, ``pd.NA`` and empty or blank text print as
    :data:`MISSING`. A plain integer row index is dropped; any other index becomes the first
    column(s). Column names become text, in words where :data:`HEADERS` has them.
    """
    frame = df.to_frame() if isinstance(df, pd.Series) else df
    frame = _without_index(frame)
    cells = {header(name): _column(frame.iloc[:, i]) for i, name in enumerate(frame.columns)}
    if len(cells) != frame.shape[1]:
        raise ValueError(f"duplicate column names: {list(frame.columns)}")
    return pd.DataFrame(cells, index=pd.RangeIndex(len(frame)), dtype=object)


class TableView:
    """A table as shown in a notebook: full HTML (with the title as caption) and full text.

    Built by :func:`show_table`; ``cells`` are the :func:`format_cells` text of the shown rows,
    ``rows`` the number of rows of the table, ``note`` the line shown under it (or None).
    """

    def __init__(
        self, cells: pd.DataFrame, title: str | None, rows: int, note: str | None = None
    ) -> None:
        self.cells, self.title, self.rows, self.note = cells, title, rows, note

    @property
    def caption(self) -> str | None:
        """The title, and, for a table longer than :data:`MAX_ROWS`, which rows are shown."""
        if self.rows <= len(self.cells):
            return self.title
        note = f"the first {len(self.cells)} of {self.rows} rows (all of them in the CSV file)"
        return f"{self.title}: {note}" if self.title else note

    def _repr_html_(self) -> str:
        styler = self.cells.style.hide(axis="index").format(escape="html")
        numeric = [c for c in self.cells.columns if self.cells[c].map(_is_number_text).all()]
        long = [c for c in self.cells.columns if self.cells[c].str.len().max() > WRAP_CHARS]
        short = [c for c in self.cells.columns if c not in long]
        text = [c for c in self.cells.columns if c not in numeric]
        if text:
            styler = styler.set_properties(subset=text, **{"text-align": "left"})
        if short:  # labels and numbers stay on one line; long text wraps, not too narrow
            styler = styler.set_properties(subset=short, **{"white-space": "nowrap"})
        if long:
            styler = styler.set_properties(subset=long, **{"min-width": "18em"})
        styler = styler.set_table_styles(
            [
                {"selector": "th", "props": "text-align: left; vertical-align: bottom;"},
                {
                    "selector": "caption",
                    "props": "caption-side: top; text-align: left;"
                    " font-weight: bold; padding-bottom: 4px;",
                },
            ]
        )
        if self.caption:
            styler = styler.set_caption(self.caption)
        page = styler.to_html(max_rows=len(self.cells) + 1, max_columns=self.cells.shape[1] + 1)
        return page + _note_html(self.note)

    def __repr__(self) -> str:
        body = self.cells.to_string(index=False, max_colwidth=None)
        text = f"{self.caption}\n\n{body}" if self.caption else body
        return f"{text}\n\n{self.note}" if self.note else text


#: The CSS class of the line under a table or figure.
NOTE_CLASS = "baglm-note"


def _note_html(note: str | None) -> str:
    if not note:
        return ""
    style = "font-size: 0.9em; font-style: italic; max-width: 60em; margin-top: 4px;"
    return f'<p class="{NOTE_CLASS}" style="{style}">{html.escape(note)}</p>'


class _Note:
    """A line shown under a figure (HTML and text)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_html_(self) -> str:
        return _note_html(self.text)

    def __repr__(self) -> str:
        return self.text


def _is_number_text(text: str) -> bool:
    if text == MISSING:
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


def show_table(
    df: ResultTable | pd.DataFrame | pd.Series, title: str | None = None, note: str | None = None
) -> TableView:
    """The table to show in a notebook (end a cell with it): in full, see :func:`format_cells`.

    Parameters
    ----------
    df : ResultTable, pandas.DataFrame or pandas.Series
        The table (a result table: its rows, or any frame).
    title : str, optional
        Shown as the table's caption (e.g. the title given to
        :meth:`~baglm_nb.analyses.result_table.ResultTable.write`).
    note : str, optional
        One line shown under the table (e.g. from :mod:`baglm_nb.analyses.agreement`).

    Returns
    -------
    TableView
        Rendered as HTML in a notebook and as full text elsewhere; tables longer than
        :data:`MAX_ROWS` show their first :data:`MAX_ROWS` rows and say so in the caption.
    """
    frame = df.frame if isinstance(df, ResultTable) else df
    frame = frame.to_frame() if isinstance(frame, pd.Series) else frame
    return TableView(format_cells(frame.iloc[:MAX_ROWS]), title, len(frame), note)


def quality_text(metrics: Mapping[str, float]) -> str:
    """A video's online metrics as one line: per-second and step-row accuracy, announcement F1,
    median delay and flicker, a missing value as "–" (:data:`MISSING`).

    Notebook 09's timeline titles and ``follow``'s quality line both use it, so the two read
    the same on the same video and settings.
    """

    def fixed(key: str, spec: str) -> str:
        value = float(metrics.get(key, math.nan))
        return MISSING if value != value else format(value, spec)

    return (
        f"per-second accuracy {fixed('frame_accuracy', '.3f')} (step rows "
        f"{fixed('frame_accuracy_on_steps', '.3f')}), announcement F1 "
        f"{fixed('announce_f1', '.3f')}, median delay {fixed('delay_median_s', '.1f')} s, "
        f"flicker {fixed('flicker_per_min', '.1f')}/min"
    )


def show_figure(fig, stem: str | os.PathLike, note: str | None = None) -> None:
    """Save ``fig`` as ``<stem>.png`` and ``.pdf``, show the PNG inline and close ``fig``.

    The PNG shown is the saved file's bytes, embedded in the notebook (so also in its HTML
    copy), at the figure's size at 100 dpi. Closing the figure keeps Jupyter's inline backend
    from showing it a second time. ``note`` (optional) is shown under the image. Returns nothing.
    """
    import matplotlib.pyplot as plt
    from IPython.display import Image, display

    from baglm_nb.analyses.plots import save_figure  # here: a table alone needs no pyplot

    png = save_figure(fig, stem)[0]
    display(Image(data=png.read_bytes(), format="png", width=round(fig.get_figwidth() * 100)))
    plt.close(fig)
    if note:
        display(_Note(note))
