"""A result table: its rows, the (video, step) items behind them, the sources they used, its files.

:class:`ResultTable` is what every result builder of :mod:`baglm_nb.analyses` returns:

- ``frame``: the rows (a pandas DataFrame; the row shape is :mod:`baglm_nb.analyses.tables`'s);
- ``items`` (lighteval style): one row per evaluated (video, step) pair and table row:
  ``dataset``, ``method``, ``source``, any grouping column (``signal``, ``segment_duration``,
  ``bin``, ...), then the :func:`~baglm_nb.core.evaluation.pair_hits` columns (``video_uid``,
  ``task``, ``step_index``, ``hit``, ``num_steps``, ``position``); None for a table that is not
  built from pairs (statistics, timings). A row's R@1 is what its items give
  (:func:`~baglm_nb.core.evaluation.recall_from_hits`); slot rows have none;
- ``sources`` (:class:`Sources`): the observation sources the table was computed on and the
  dependency sources its rows used (by default those its ``D`` column names, :data:`NOT_USED`
  left out).

:meth:`ResultTable.concat` stacks tables with their items and sources (``pd.concat`` of the
frames alone would lose both). :meth:`ResultTable.title` names the sources in a title
(:func:`title_for`, which says ``simulated`` for the simulated CPU default), and
:meth:`ResultTable.sources_label` is the observation sources as one label
(:func:`sources_label`). :meth:`ResultTable.write` saves ``<stem>.csv``, ``<stem>.md``,
``<stem>.summary.json`` (:meth:`ResultTable.summary`: title, counts, values, the commit of the
code that made it, :func:`current_commit`, and the parameters that produced it) and, for a table
with items, ``<stem>.items.parquet``, each atomically.

Exports :data:`NOT_USED`, :data:`ITEM_LABELS`, :class:`Sources`, :class:`ResultTable`,
:func:`sources_label`, :func:`title_for`, :func:`to_markdown`, :func:`current_commit`,
:func:`table_summary` and :func:`write_table`.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from baglm_nb.stores.atomic import atomic_write, atomic_write_json, atomic_write_text

__all__ = [
    "ITEM_LABELS",
    "NOT_USED",
    "ResultTable",
    "Sources",
    "current_commit",
    "sources_label",
    "table_summary",
    "title_for",
    "to_markdown",
    "write_table",
]

#: The ``D`` (or ``progress``) cell of a row whose method does not use that input.
NOT_USED = "not used"

#: The label columns every item starts with (grouping columns follow them).
ITEM_LABELS = ("dataset", "method", "source")

#: The folder holding the package (the checkout): parameters' paths inside it are kept relative.
_ROOT = Path(__file__).resolve().parents[2]

#: The pair columns of an item (:func:`~baglm_nb.core.evaluation.pair_hits`).
_PAIR_COLUMNS = ("video_uid", "task", "step_index", "hit", "num_steps", "position")


def _distinct(labels: Iterable[Any]) -> tuple[str, ...]:
    """``labels`` as text, each once, in their first order; missing values left out."""
    return tuple(dict.fromkeys(str(x) for x in labels if x is not None and not pd.isna(x)))


def used_dependencies(frame: pd.DataFrame) -> tuple[str, ...]:
    """The dependency sources a frame's ``D`` column names (not :data:`NOT_USED`), in order."""
    if "D" not in frame.columns:
        return ()
    return tuple(d for d in _distinct(frame["D"]) if d != NOT_USED)


@dataclass(frozen=True)
class Sources:
    """The observation and dependency sources (labels) a table was computed with, in order."""

    observations: tuple[str, ...] = ()
    dependencies: tuple[str, ...] = ()

    def __add__(self, other: Sources) -> Sources:
        """Both tables' sources, each once, in order."""
        return Sources(
            _distinct(self.observations + other.observations),
            _distinct(self.dependencies + other.dependencies),
        )


def sources_label(labels: Iterable[str]) -> str:
    """Observation source labels as one: sorted, each once, joined by ``" + "``.

    ``"none"`` when there is none.
    """
    return " + ".join(sorted(set(labels))) or "none"


def _empty_items() -> pd.DataFrame:
    return pd.DataFrame({c: [] for c in (*ITEM_LABELS, *_PAIR_COLUMNS)})


def _stacked(items: Iterable[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in items if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else _empty_items()


@dataclass(frozen=True, eq=False)
class ResultTable:
    """A result table's rows (``frame``), its items (or None) and its :class:`Sources`.

    Build one with :meth:`of`; see the module docstring.
    """

    frame: pd.DataFrame
    items: pd.DataFrame | None = None
    sources: Sources = field(default_factory=Sources)

    @classmethod
    def of(
        cls,
        frame: pd.DataFrame,
        items: Iterable[pd.DataFrame] | None = None,
        *,
        observations: Iterable[str] = (),
        dependencies: Iterable[str] | None = None,
    ) -> ResultTable:
        """A table of ``frame`` with ``items`` (stacked; None: a table without items).

        ``observations`` are the labels of the observation sources it was computed on;
        ``dependencies`` (default: those the ``D`` column names, :func:`used_dependencies`)
        the dependency sources its rows used.
        """
        deps = used_dependencies(frame) if dependencies is None else _distinct(dependencies)
        stacked = None if items is None else _stacked(items)
        return cls(frame, stacked, Sources(_distinct(observations), deps))

    def __len__(self) -> int:
        """The number of rows."""
        return len(self.frame)

    @staticmethod
    def concat(tables: Iterable[ResultTable]) -> ResultTable:
        """Stack tables (e.g. one per dataset) with their items and sources; rows from 0.

        The result has the stacked items of the tables that have them (None when none has).
        """
        tables = list(tables)
        if not tables:
            return ResultTable(pd.DataFrame())
        frame = pd.concat([t.frame for t in tables], ignore_index=True)
        items = [t.items for t in tables if t.items is not None]
        sources = Sources()
        for t in tables:
            sources = sources + t.sources
        return ResultTable(frame, _stacked(items) if items else None, sources)

    def with_frame(self, frame: pd.DataFrame) -> ResultTable:
        """Another view of the same results (``frame``), with this table's items and sources."""
        return ResultTable(frame, self.items, self.sources)

    def sources_label(self) -> str:
        """The observation sources as one label (:func:`sources_label`)."""
        return sources_label(self.sources.observations)

    def title(self, what: str, *, dependencies: bool = True) -> str:
        """``what`` with the sources named (:func:`title_for`).

        With ``dependencies`` the dependency sources are named too (``D: ...``), e.g. not for
        a table whose rows sweep D.
        """
        used = self.sources.dependencies if dependencies else ()
        return _titled(what, self.sources_label(), used)

    def summary(
        self, title: str | None = None, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The small JSON beside the table (:func:`table_summary`)."""
        return table_summary(self, title, params)

    def write(
        self,
        stem: str | os.PathLike,
        title: str | None = None,
        *,
        params: Mapping[str, Any] | None = None,
    ) -> None:
        """Save the table beside ``stem``, each file atomically.

        ``<stem>.csv``, ``<stem>.md`` (with ``title``), ``<stem>.summary.json``
        (:meth:`summary`, with ``params``: the notebook parameters or call arguments that
        produced the table) and, with items, ``<stem>.items.parquet`` (written with pyarrow).
        """
        stem = Path(stem)
        atomic_write_text(stem.with_suffix(".csv"), self.frame.to_csv(index=False))
        atomic_write_text(stem.with_suffix(".md"), to_markdown(self.frame, title))
        if self.items is not None:
            arrow = pa.Table.from_pandas(self.items, preserve_index=False)
            atomic_write(stem.with_suffix(".items.parquet"), lambda f: pq.write_table(arrow, f))
        atomic_write_json(stem.with_suffix(".summary.json"), self.summary(title, params))


def _as_table(table: ResultTable | pd.DataFrame) -> ResultTable:
    return table if isinstance(table, ResultTable) else ResultTable.of(table)


def _titled(what: str, source: str, dependencies: Iterable[str]) -> str:
    used = list(dependencies)
    if used:
        what = f"{what}; D: {', '.join(used)}"
    base, _, precision = source.partition(", ")
    if base == "simulated":
        extra = f", {precision}" if precision else ""
        return f"{what} (simulated observations, not a real model{extra})"
    return f"{what} (observations: {source})"


def title_for(what: str, source: str, table: ResultTable | pd.DataFrame | None = None) -> str:
    """A table or figure title that names the observation source (and says ``simulated``).

    ``source`` is an observations label, possibly ending in its precision (``", float64"``).
    With ``table``, its dependency sources (those used) are named too, e.g.
    ``D: simulated-llm:llama, oracle``.
    """
    used = () if table is None else _as_table(table).sources.dependencies
    return _titled(what, source, used)


def to_markdown(df: ResultTable | pd.DataFrame, title: str | None = None) -> str:
    """A GitHub-style Markdown table (no extra dependency)."""
    df = df.frame if isinstance(df, ResultTable) else df
    cells = [[("" if pd.isna(v) else str(v)) for v in row] for row in df.itertuples(index=False)]
    header = [str(c) for c in df.columns]
    lines = [f"**{title}**", ""] if title else []
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join("---" for _ in header) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in cells]
    return "\n".join(lines) + "\n"


def current_commit(folder: str | os.PathLike | None = None) -> str | None:
    """``git rev-parse HEAD`` of the checkout holding ``folder`` (default: this package).

    None outside a git checkout, or where git is missing or does not answer in 10 s.
    """
    where = Path(__file__).parent if folder is None else Path(folder)
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and commit else None


def _json_values(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` as JSON values: paths and other objects as text, tuples as lists; a path
    inside the checkout relative to it (the summary names no local folder)."""
    inside = json.dumps(str(_ROOT) + os.sep)[1:-1]  # the prefix as JSON writes it
    return json.loads(json.dumps(dict(params), default=str).replace(inside, ""))


def table_summary(
    table: ResultTable | pd.DataFrame,
    title: str | None = None,
    params: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The small JSON beside a table: title, sources, counts, values, commit and parameters.

    ``sources`` are the ``source`` column's labels; ``observation_sources`` and
    ``dependency_sources`` the table's :class:`Sources`. ``videos`` and ``pairs`` count the
    distinct (dataset, video) and (dataset, video, step) of the items and ``items`` their
    rows; all three are None for a table without items. ``commit`` is
    :func:`current_commit`; ``parameters`` are ``params`` (None when not given), paths inside
    the checkout relative to it.
    """
    table = _as_table(table)
    df, items = table.frame, table.items
    labels = list(dict.fromkeys(df["source"])) if "source" in df.columns else []

    def distinct(columns: list[str]) -> int | None:
        return None if items is None else int(len(items[columns].drop_duplicates()))

    return {
        "title": title,
        "sources": [str(s) for s in labels],
        "observation_sources": list(table.sources.observations),
        "dependency_sources": list(table.sources.dependencies),
        "rows": len(df),
        "videos": distinct(["dataset", "video_uid"]),
        "pairs": distinct(["dataset", "video_uid", "step_index"]),
        "items": None if items is None else len(items),
        "values": json.loads(df.to_json(orient="records")),
        "commit": current_commit(),
        "parameters": None if params is None else _json_values(params),
    }


def write_table(
    table: ResultTable | pd.DataFrame,
    stem: str | os.PathLike,
    title: str | None = None,
    *,
    params: Mapping[str, Any] | None = None,
) -> None:
    """:meth:`ResultTable.write` of ``table`` (a plain frame: a table without items)."""
    _as_table(table).write(stem, title, params=params)
