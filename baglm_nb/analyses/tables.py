"""What every result table shares: names, titles, the row shape, its items, and its files.

A result table is a pandas DataFrame, one row per number, with the workbench's value beside the
paper's (``paper``, NaN where the paper reports none), the observation ``source`` and, for a
table of BaGLM rows, the dependency source ``D`` (:data:`NOT_USED` for a row that uses none).
Rows that the inputs cannot fill are *slot rows* (:func:`slot_row`): the paper's value, an empty
``workbench`` and a ``note`` starting with ``slot:`` that says which input fills it.

**Items** (lighteval style): a table built from evaluated (video, step) pairs carries them in
``table.attrs["items"]`` (:func:`items_of`), one row per pair and table row: ``dataset``,
``method``, ``source``, any grouping column (``signal``, ``segment_duration``, ``bin``, ...),
then the :func:`~baglm_nb.core.evaluation.pair_hits` columns (``video_uid``, ``task``,
``step_index``, ``hit``, ``num_steps``, ``position``). A row's R@1 is what its items give
(:func:`~baglm_nb.core.evaluation.recall_from_hits`). Slot rows have no items. ``pd.concat``
cannot join tables that carry items: use :func:`concat_tables`.

:func:`write_table` saves ``<stem>.csv``, ``<stem>.md``, ``<stem>.summary.json``
(:func:`table_summary`) and, for a table with items, ``<stem>.items.parquet``, each atomically.

Exports :data:`DATASET_NAMES`, :data:`METHOD_NAMES`, :data:`SLOT`, :data:`NOT_USED`,
:class:`Scored` with
:func:`score`, :func:`score_baglm` and :func:`score_raw`, :func:`require_dependencies`,
:func:`result_row` (the one row builder), :func:`slot_row`, :class:`TableBuilder`,
:func:`pair_items`, :func:`with_items`, :func:`items_of`, :func:`concat_tables`,
:func:`title_for`, :func:`to_markdown`, :func:`table_summary` and :func:`write_table`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from baglm_nb.core import sources
from baglm_nb.core.evaluation import pair_hits, recall_from_hits
from baglm_nb.core.observations import Observations
from baglm_nb.core.pipeline import run_baglm
from baglm_nb.inputs.datasets import DATASETS, Video
from baglm_nb.stores.atomic import atomic_write, atomic_write_json, atomic_write_text

__all__ = [
    "DATASET_NAMES",
    "ITEMS",
    "METHOD_NAMES",
    "NOT_USED",
    "SLOT",
    "Scored",
    "TableBuilder",
    "concat_tables",
    "items_of",
    "pair_items",
    "require_dependencies",
    "result_row",
    "score",
    "score_baglm",
    "score_raw",
    "slot_row",
    "table_summary",
    "title_for",
    "to_markdown",
    "with_items",
    "write_table",
]

#: Display names of the datasets (:attr:`~baglm_nb.inputs.datasets.DatasetSpec.display_name`).
DATASET_NAMES: dict[str, str] = {name: spec.display_name for name, spec in DATASETS.items()}

#: Display names of the two methods every table compares.
METHOD_NAMES: dict[str, str] = {"baglm": "BaGLM", "off_the_shelf": "off-the-shelf LMM"}

#: Prefix of the ``note`` of a slot row: a row the workbench cannot fill from its inputs yet.
SLOT = "slot"

#: The ``D`` (or ``progress``) cell of a row whose method does not use that input.
NOT_USED = "not used"

#: The key of a table's items in ``DataFrame.attrs``.
ITEMS = "items"

#: The label columns every item starts with (grouping columns follow them).
_LABELS = ("dataset", "method", "source")


# ------------------------------------------------------------------------------------------
# scoring with the pairs kept


@dataclass(frozen=True)
class Scored:
    """R@1 in percent of one method on some videos, and the (video, step) pairs behind it.

    ``hits`` are :func:`~baglm_nb.core.evaluation.pair_hits` rows; ``videos`` is the number of
    videos evaluated.
    """

    value: float
    hits: pd.DataFrame
    videos: int


def score(dataset: str, beliefs: Mapping[str, np.ndarray], videos: Sequence[Video]) -> Scored:
    """:func:`~baglm_nb.core.evaluation.evaluate` that keeps its pairs.

    The videos of ``videos`` present in ``beliefs`` are evaluated, in that (annotation) order.
    """
    covered = [v for v in videos if v.uid in beliefs]
    hits = pair_hits(dataset, beliefs, covered)
    return Scored(recall_from_hits(dataset, hits, [v.uid for v in covered]), hits, len(covered))


def score_baglm(
    obs: Observations, deps: Any, videos: Sequence[Video] | None = None, **kwargs
) -> Scored:
    """BaGLM on ``videos`` (default: all of ``obs``), scored.

    ``deps`` and ``kwargs`` go to :func:`~baglm_nb.core.pipeline.run_baglm`.
    """
    videos = obs.videos if videos is None else list(videos)
    return score(obs.dataset, run_baglm(obs, deps, videos=videos, **kwargs), videos)


def score_raw(obs: Observations, videos: Sequence[Video] | None = None) -> Scored:
    """The off-the-shelf baseline (the raw VSG scores) on ``videos`` (default: all of ``obs``)."""
    videos = obs.videos if videos is None else list(videos)
    return score(obs.dataset, {v.uid: obs.vsg[v.uid] for v in videos}, videos)


def require_dependencies(deps: Any, dataset: str) -> sources.Dependencies:
    """The deps setting resolved once for ``dataset``; ``KeyError`` when it has no source."""
    resolved = sources.dependencies(dataset, deps)
    if resolved is None:
        raise KeyError(f"no dependency source for {dataset}; pass one in deps")
    return resolved


# ------------------------------------------------------------------------------------------
# rows and items


def result_row(
    dataset: str, method: str, scored: Scored | None, paper: float, *, source: str, **extra
) -> dict:
    """One table row: the workbench's R@1 (rounded to 0.1) beside the paper's value.

    ``dataset`` is a dataset name (converted to its display name when known); ``scored`` None
    leaves ``workbench`` empty (NaN) with 0 videos. Extra keyword arguments become extra
    columns, in their order.
    """
    return {
        "dataset": DATASET_NAMES.get(dataset, dataset),
        "method": method,
        "workbench": float("nan") if scored is None else round(float(scored.value), 1),
        "paper": paper,
        "videos": 0 if scored is None else scored.videos,
        "source": source,
        **extra,
    }


def slot_row(dataset: str, method: str, paper: float, reason: str, **extra) -> dict:
    """A clearly labelled empty row: the paper's value, no workbench number, and why.

    ``reason`` says what input would fill the row. Extra keyword arguments become extra
    columns.
    """
    return result_row(
        dataset, method, None, paper, source="none", note=f"{SLOT}: {reason}", **extra
    )


def pair_items(hits: pd.DataFrame, **labels: Any) -> pd.DataFrame:
    """``hits`` (:func:`~baglm_nb.core.evaluation.pair_hits` rows) labelled as items.

    Each keyword becomes a column (a value for every pair, or one per pair): ``dataset``,
    ``method`` and ``source`` go first, then the other labels (grouping columns), then the
    pair columns.
    """
    out = hits.assign(**labels)
    first = [c for c in _LABELS if c in out.columns]
    first += [c for c in labels if c not in _LABELS]
    return out[first + [c for c in out.columns if c not in first]].reset_index(drop=True)


def _no_items() -> pd.DataFrame:
    columns = [*_LABELS, "video_uid", "task", "step_index", "hit", "num_steps", "position"]
    return pd.DataFrame({c: [] for c in columns})


def with_items(table: pd.DataFrame, items: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """``table`` carrying ``items`` (concatenated) in ``table.attrs["items"]``; returns it."""
    frames = [f for f in items if len(f)]
    table.attrs[ITEMS] = pd.concat(frames, ignore_index=True) if frames else _no_items()
    return table


def items_of(table: pd.DataFrame) -> pd.DataFrame | None:
    """The items a table carries (see the module docstring), or None."""
    return table.attrs.get(ITEMS)


def concat_tables(tables: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """Stack tables (e.g. one per dataset) with their items; rows renumbered from 0.

    The result carries the concatenated items of the tables that have them (none when no
    table has any).
    """
    tables = list(tables)
    frame = pd.concat([pd.DataFrame(t) for t in tables], ignore_index=True)  # without attrs
    items = [items_of(t) for t in tables]
    if any(i is not None for i in items):
        with_items(frame, [i for i in items if i is not None])
    return frame


class TableBuilder:
    """The rows of one result table and the items behind them, in order.

    :meth:`add` appends a :func:`result_row` and its items, :meth:`slot` a :func:`slot_row`,
    :meth:`row` any row with optional items, :meth:`item` more items of the last row;
    :meth:`frame` returns the table with its items.
    """

    def __init__(self) -> None:
        self.rows: list[dict] = []
        self.items: list[pd.DataFrame] = []

    def add(
        self,
        dataset: str,
        method: str,
        scored: Scored,
        paper: float,
        *,
        source: str,
        groups: Mapping[str, Any] | None = None,
        **extra,
    ) -> dict:
        """Append a result row; ``groups`` are columns of both the row and its items."""
        groups = dict(groups or {})
        row = result_row(dataset, method, scored, paper, source=source, **groups, **extra)
        self.row(row, scored.hits, **groups)
        return row

    def slot(self, dataset: str, method: str, paper: float, reason: str, **extra) -> None:
        """Append a slot row (no items)."""
        self.rows.append(slot_row(dataset, method, paper, reason, **extra))

    def row(self, row: dict, hits: pd.DataFrame | None = None, **labels: Any) -> None:
        """Append ``row``; ``hits`` (optional) become its items.

        They are labelled with the row's ``dataset``, ``method`` and ``source`` (those it has)
        and ``labels``.
        """
        self.rows.append(row)
        if hits is not None:
            self.item(hits, **{k: row[k] for k in _LABELS if k in row}, **labels)

    @property
    def has_slots(self) -> bool:
        """Whether any row so far is a slot row."""
        return any(str(r.get("note", "")).startswith(SLOT) for r in self.rows)

    def item(self, hits: pd.DataFrame, **labels: Any) -> None:
        """Append items (:func:`pair_items` of ``hits`` and ``labels``) to the last row."""
        self.items.append(pair_items(hits, **labels))

    def frame(self, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """The table (``columns`` in this order when given) with its items."""
        table = pd.DataFrame(self.rows)
        return with_items(table if columns is None else table[list(columns)], self.items)


# ------------------------------------------------------------------------------------------
# titles and files


def title_for(what: str, source: str, table: pd.DataFrame | None = None) -> str:
    """A table or figure title that names the observation source (and says ``simulated``).

    ``source`` is an observations label, possibly ending in its precision (``", float64"``).
    With ``table``, the dependency sources of its ``D`` column (those used) are named too,
    e.g. ``D: simulated-llm:llama, oracle``.
    """
    if table is not None and "D" in table.columns:
        used = [str(d) for d in dict.fromkeys(table["D"]) if pd.notna(d) and d != NOT_USED]
        if used:
            what = f"{what}; D: {', '.join(used)}"
    base, _, precision = source.partition(", ")
    if base == "simulated":
        extra = f", {precision}" if precision else ""
        return f"{what} (simulated observations, not a real model{extra})"
    return f"{what} (observations: {source})"


def to_markdown(df: pd.DataFrame, title: str | None = None) -> str:
    """A GitHub-style Markdown table (no extra dependency)."""
    cells = [[("" if pd.isna(v) else str(v)) for v in row] for row in df.itertuples(index=False)]
    header = [str(c) for c in df.columns]
    lines = [f"**{title}**", ""] if title else []
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join("---" for _ in header) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in cells]
    return "\n".join(lines) + "\n"


def table_summary(df: pd.DataFrame, title: str | None = None) -> dict[str, Any]:
    """The small JSON beside a table: title, source labels, counts and the values as records.

    ``videos`` and ``pairs`` count the distinct (dataset, video) and (dataset, video, step)
    of the items and ``items`` their rows; all three are None for a table without items.
    """
    items = items_of(df)
    labels = list(dict.fromkeys(df["source"])) if "source" in df.columns else []

    def distinct(columns: list[str]) -> int | None:
        return None if items is None else int(len(items[columns].drop_duplicates()))

    return {
        "title": title,
        "sources": [str(s) for s in labels],
        "rows": len(df),
        "videos": distinct(["dataset", "video_uid"]),
        "pairs": distinct(["dataset", "video_uid", "step_index"]),
        "items": None if items is None else len(items),
        "values": json.loads(df.to_json(orient="records")),
    }


def write_table(df: pd.DataFrame, stem: str | os.PathLike, title: str | None = None) -> None:
    """Save ``df`` beside ``stem``, each file atomically.

    ``<stem>.csv``, ``<stem>.md`` (with ``title``), ``<stem>.summary.json``
    (:func:`table_summary`) and, when ``df`` carries items, ``<stem>.items.parquet``
    (written with pyarrow).
    """
    stem = Path(stem)
    atomic_write_text(stem.with_suffix(".csv"), df.to_csv(index=False))
    atomic_write_text(stem.with_suffix(".md"), to_markdown(df, title))
    items = items_of(df)
    if items is not None:
        arrow = pa.Table.from_pandas(items, preserve_index=False)
        atomic_write(stem.with_suffix(".items.parquet"), lambda f: pq.write_table(arrow, f))
    atomic_write_json(stem.with_suffix(".summary.json"), table_summary(df, title))
