"""The paper's tables in the paper's form, for display: result tables pivoted as the paper prints.

A result table (:mod:`baglm_nb.analyses.tables`) is long: one row per (dataset, method). The
paper prints methods as rows and datasets as columns, with check-mark columns where its rows
are combinations of switches (Tab. transition model: Readiness / Validity; Tab. oracle:
Progress oracle / Dep. matrix oracle) and an offline / online grouping in Tab. comparison.
:func:`paper_layout` pivots a result table that way: per dataset a workbench column and a
``paper`` column beside it; :data:`PAPER_ONLY` in the workbench column of a row the paper
reports and the workbench does not run (another paper's method), :data:`SLOT_CELL` in a slot
row's; :data:`~baglm_nb.inputs.paper.RERUN_MARK` after a paper value the paper's authors
obtained from the method's released code. The CSV files keep the long tables.

Exports :data:`CHECK`, :data:`PAPER_ONLY`, :data:`COMPARISON_NOTE`, :data:`SLOT_CELL`,
:data:`TRANSITION_MARKS`, :data:`ORACLE_MARKS`, :data:`COMPARISON_PARTS`, :func:`paper_layout`,
:func:`comparison_layouts`, :func:`transition_layout`, :func:`oracle_layout`,
:func:`llm_layout`, :func:`localization_layout`, the narrow views of notebook 05's wide tables
(:func:`gain_layouts`, :func:`pattern_layouts`, :func:`sensitivity_layout`), :func:`slot_note`
and :func:`notes`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from baglm_nb.analyses.agreement import column_note
from baglm_nb.inputs.paper import PAPER_COMPARISON_ORDER, RERUN_MARK
from baglm_nb.inputs.variants import TRANSITIONS, WITH_READINESS, WITH_VALIDITY

__all__ = [
    "CHECK",
    "COMPARISON_NOTE",
    "COMPARISON_PARTS",
    "ORACLE_MARKS",
    "PAPER_ONLY",
    "SLOT_CELL",
    "TRANSITION_MARKS",
    "comparison_layouts",
    "gain_layouts",
    "llm_layout",
    "localization_layout",
    "notes",
    "oracle_layout",
    "paper_layout",
    "pattern_layouts",
    "sensitivity_layout",
    "slot_note",
    "transition_layout",
]

#: A check mark, as the paper's tables print one.
CHECK = "\u2713"

#: The workbench cell of a row that only the paper reports.
PAPER_ONLY = "paper only"

#: The workbench cell of a slot row (its inputs are missing).
SLOT_CELL = "slot"

#: Tab. transition model's rows and their (Readiness, Validity) check marks, from the
#: vocabulary's flags (:data:`~baglm_nb.inputs.variants.WITH_READINESS`, ``WITH_VALIDITY``).
TRANSITION_MARKS: dict[str, tuple[bool, bool]] = {
    t: (t in WITH_READINESS, t in WITH_VALIDITY) for t in TRANSITIONS
}

#: Tab. oracle's rows (:data:`~baglm_nb.analyses.results.ORACLE_ROWS`) and their (Progress
#: oracle, Dep. matrix oracle) check marks.
ORACLE_MARKS: dict[str, tuple[bool, bool]] = {
    "LLM D, LMM progress": (False, False),
    "LLM D, oracle progress": (True, False),
    "oracle D, LMM progress": (False, True),
    "oracle D, oracle progress": (True, True),
}

#: The line under Tab. comparison's layouts.
COMPARISON_NOTE = (
    f"{PAPER_ONLY}: another method's number as the paper reports it, not run here; "
    f"{RERUN_MARK} the paper's authors ran that method's released code."
)

#: The sub-tables of Tab. comparison (and Tab. COIN), by dataset display name.
COMPARISON_PARTS: tuple[tuple[str, ...], ...] = (("HT-Step", "Ego4D"), ("CrossTask",), ("COIN",))


def _number(value: object) -> str | None:
    v = pd.to_numeric(pd.Series([value]), errors="coerce").iloc[0]
    return None if pd.isna(v) else f"{float(v):.1f}"


def _workbench_cell(row: Mapping) -> str | None:
    if str(row.get("source", "")) == "paper":
        return PAPER_ONLY
    if str(row.get("note", "") or "").startswith("slot"):
        return SLOT_CELL
    return _number(row.get("workbench"))


def _paper_cell(row: Mapping) -> str | None:
    text = _number(row.get("paper"))
    if text is not None and RERUN_MARK in str(row.get("note", "") or ""):
        text += RERUN_MARK
    return text


def paper_layout(
    table: pd.DataFrame,
    *,
    keys: Sequence[str] = ("method",),
    marks: Mapping[str, tuple[bool, ...]] | None = None,
    mark_names: Sequence[str] = (),
    datasets: Sequence[str] | None = None,
) -> pd.DataFrame:
    """``table`` with one row per ``keys`` and, per dataset, ``<dataset>`` and ``... paper``.

    Rows keep the table's order (first appearance); ``marks`` maps a ``method`` to its check
    marks, shown in the ``mark_names`` columns first (:data:`CHECK` or empty). ``datasets``
    (display names) picks and orders the dataset columns (default: the table's). Cells are
    text: one decimal, :data:`PAPER_ONLY` / :data:`SLOT_CELL` in the workbench column where
    they apply, None where a dataset has no such row.
    """
    names = list(dict.fromkeys(table["dataset"])) if datasets is None else list(datasets)
    rows: dict[tuple, dict] = {}
    for record in table.to_dict("records"):
        if record["dataset"] not in names:
            continue
        key = tuple(record[k] for k in keys)
        out = rows.setdefault(key, {k: record[k] for k in keys})
        out[record["dataset"]] = _workbench_cell(record)
        out[f"{record['dataset']} paper"] = _paper_cell(record)
    columns = [*keys, *(c for n in names for c in (n, f"{n} paper"))]
    frame = pd.DataFrame(list(rows.values())).reindex(columns=columns)
    frame = frame.dropna(axis=1, how="all").astype(object)
    frame = frame.where(frame.notna(), None)
    if marks:
        for i, name in enumerate(mark_names):
            flags = [marks.get(m, (False,) * len(mark_names))[i] for m in frame["method"]]
            frame.insert(i, name, [CHECK if f else "" for f in flags])
    return frame


def _comparison_key(column: pd.Series) -> pd.Series:
    """Offline rows first; within a setting, the paper's row order where it has one."""
    if column.name == "setting":
        return column != "offline"
    known = list(PAPER_COMPARISON_ORDER)
    return column.map(lambda m: known.index(m) if m in known else len(known))


def comparison_layouts(table: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Tab. comparison's sub-tables (and Tab. COIN) from a comparison table, in paper form.

    ``table``: :func:`~baglm_nb.analyses.results.comparison_table` rows. Returns ``(datasets
    joined by " and ", layout)`` for each part of :data:`COMPARISON_PARTS` the table has; the
    layout's first columns are ``setting`` (offline, online) and ``method``.
    """
    out = []
    present = set(table["dataset"])
    for part in COMPARISON_PARTS:
        names = [n for n in part if n in present]
        if names:
            sub = table[table["dataset"].isin(names)]
            by = ["setting", "method"] if len(names) > 1 else ["setting"]  # one table's order
            order = sub.sort_values(by, key=_comparison_key, kind="stable")
            layout = paper_layout(order, keys=("setting", "method"), datasets=names)
            out.append((" and ".join(names), layout))
    return out


def transition_layout(table: pd.DataFrame) -> pd.DataFrame:
    """Tab. transition model in the paper's form: Readiness / Validity check marks."""
    return paper_layout(table, marks=TRANSITION_MARKS, mark_names=("Readiness", "Validity"))


def oracle_layout(table: pd.DataFrame) -> pd.DataFrame:
    """Tab. oracle in the paper's form: Progress oracle / Dep. matrix oracle check marks."""
    names = ("Progress oracle", "Dep. matrix oracle")
    return paper_layout(table, marks=ORACLE_MARKS, mark_names=names)


def llm_layout(table: pd.DataFrame) -> pd.DataFrame:
    """Tab. LLM in the paper's form: a row per dataset, the LLMs as columns (and the paper's).

    ``table``: :func:`~baglm_nb.analyses.ablations.llm_table` rows.
    """
    swapped = table.rename(columns={"dataset": "method", "method": "dataset"})
    frame = paper_layout(swapped, keys=("method",)).rename(columns={"method": "dataset"})
    # the paper's column of a simulated LLM is the paper's real LLM's
    return frame.rename(columns=lambda c: c.replace(" (simulated) paper", " paper"))


def localization_layout(table: pd.DataFrame) -> pd.DataFrame:
    """Tab. off_the_shelf_vs_baglm_localization in the paper's form.

    ``table``: :func:`~baglm_nb.analyses.localization.localization_table` rows. Columns:
    ``LMM``, ``method``, the workbench's mAP at each tIoU (:data:`SLOT_CELL` in slot rows,
    :data:`PAPER_ONLY` in NaSVA's), then the paper's.
    """
    metrics = [c for c in table.columns if c.startswith("@")]
    rows = []
    for record in table.to_dict("records"):
        row = {"LMM": record["model"], "method": record["method"]}
        for m in metrics:
            row[m] = _workbench_cell({**record, "workbench": record[m]})
        for m in metrics:
            row[f"paper {m}"] = _number(record[f"paper {m}"])
        rows.append(row)
    return pd.DataFrame(rows, dtype=object)


def slot_note(table: pd.DataFrame) -> str | None:
    """The reasons of a table's slot rows (each once), as the line under its layout."""
    notes = table["note"] if "note" in table.columns else pd.Series(dtype=object)
    reasons = [n for n in dict.fromkeys(notes.dropna().astype(str)) if n.startswith("slot")]
    if not reasons:
        return None
    return f"Slot rows ({SLOT_CELL}): " + "; ".join(r.removeprefix("slot: ") for r in reasons) + "."


def notes(*lines: str | None) -> str | None:
    """The lines that are not None, joined as one note (None when there are none)."""
    kept = [line for line in lines if line]
    return " ".join(kept) if kept else None


#: The columns of the gain table's two views (:func:`gain_layouts`).
_GAIN_COLUMNS = (
    "dataset",
    "D",
    "off_the_shelf",
    "paper_off_the_shelf",
    "baglm",
    "paper_baglm",
    "gain",
    "paper_gain",
    "gain_difference",
)
_DIAGNOSTIC_COLUMNS = (
    "dataset",
    "D_diagnostic",
    "baglm_diagnostic",
    "gain_diagnostic",
    "paper_gain",
    "videos",
    "source",
)


def _views(table: pd.DataFrame, parts: list[tuple[str, Sequence[str]]]) -> list[tuple]:
    """``(part, the table's columns of the part, its note)`` for each part of ``parts``."""
    out = []
    for part, columns in parts:
        view = table[[c for c in columns if c in table.columns]]
        out.append((part, view, column_note(table) if "off_the_shelf" in view else None))
    return out


def gain_layouts(gains: pd.DataFrame) -> list[tuple[str, pd.DataFrame, str | None]]:
    """:func:`~baglm_nb.analyses.simulation_check.gain_table` as two narrow tables.

    ``("R@1 and gain", view, note)`` with the workbench's and the paper's numbers side by
    side, and, when the table has its diagnostic columns, ``("diagnostic", view, note)``; the
    note says the off-the-shelf column agrees by construction
    (:func:`~baglm_nb.analyses.agreement.column_note`), None where it has none.
    """
    parts = [("R@1 and gain", _GAIN_COLUMNS)]
    if "D_diagnostic" in gains.columns:
        parts.append(("diagnostic", _DIAGNOSTIC_COLUMNS))
    return _views(gains, parts)


def pattern_layouts(patterns: pd.DataFrame) -> list[tuple[str, pd.DataFrame, str | None]]:
    """:func:`~baglm_nb.analyses.simulation_check.transition_pattern_table` as two tables.

    ``("R@1", view, note)``: the four variants, the workbench's then the paper's; ``("order
    and pattern", view, None)``: the orders and whether the paper's pattern holds, both sides.
    """
    values = [
        "dataset",
        "D",
        "off_the_shelf",
        "static",
        "readiness",
        "validity",
        "both",
        "paper_static",
        "paper_readiness",
        "paper_validity",
        "paper_both",
    ]
    order = ["dataset", "D", "order", "paper_order", "pattern", "paper_pattern", "videos"]
    return _views(patterns, [("R@1", values), ("order and pattern", order)])


def sensitivity_layout(table: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """:func:`~baglm_nb.analyses.ablations.sensitivity_table` without its repeated columns.

    The paper's levels repeat on every row of a dataset and the source is in the title: they
    go to the returned note (``None`` when the paper has no level).
    """
    keep = ["dataset", "D", "signal", "calibrated", "off_the_shelf", "baglm", "gain", "videos"]
    levels = []
    for name, part in table.groupby("dataset", sort=False):
        first = part.iloc[0]
        if pd.notna(first["paper_baglm"]):
            off, bag, gain = (first[f"paper_{k}"] for k in ("off_the_shelf", "baglm", "gain"))
            levels.append(f"{name}: off-the-shelf {off:.1f}, BaGLM {bag:.1f}, gain {gain:.1f}")
    head = "The paper's levels (InternVL2.5-8B, LLaMA's D; no signal value): "
    note = head + "; ".join(levels) + "." if levels else None
    return table[[c for c in keep if c in table.columns]], note
