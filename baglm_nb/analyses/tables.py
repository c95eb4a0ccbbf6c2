"""What every result table shares: names, the row shape, scoring with the pairs kept, a builder.

A result table (:class:`~baglm_nb.analyses.result_table.ResultTable`: its rows, items and
sources) has one row per number, with the workbench's value beside the paper's (``paper``, NaN
where the paper reports none), the observation ``source`` and, for a table of BaGLM rows, the
dependency source ``D`` (:data:`NOT_USED` for a row that uses none). Rows that the inputs cannot
fill are *slot rows* (:func:`slot_row`): the paper's value, an empty ``workbench`` and a
``note`` starting with ``slot:`` that says which input fills it.

**Items** (lighteval style): a table built from evaluated (video, step) pairs carries them
(:func:`pair_items`), one row per pair and table row: ``dataset``, ``method``, ``source``, any
grouping column (``signal``, ``segment_duration``, ``bin``, ...), then the
:func:`~baglm_nb.core.evaluation.pair_hits` columns (``video_uid``, ``task``, ``step_index``,
``hit``, ``num_steps``, ``position``). A row's R@1 is what its items give
(:func:`~baglm_nb.core.evaluation.recall_from_hits`). Slot rows have no items.

Titles, Markdown and the table's files are :mod:`baglm_nb.analyses.result_table`'s
(:func:`title_for`, :func:`to_markdown`, :func:`table_summary` and :func:`write_table` are
importable from here too).

Exports :data:`DATASET_NAMES` with :func:`dataset_key`, :data:`METHOD_NAMES`, :data:`SLOT`,
:data:`NOT_USED`, :class:`Scored` with
:func:`score`, :func:`score_baglm` and :func:`score_raw`, :func:`require_dependencies`,
:func:`result_row` (the one row builder), :func:`slot_row`, :class:`TableBuilder` and
:func:`pair_items`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from baglm_nb.analyses.result_table import (
    ITEM_LABELS,
    NOT_USED,
    ResultTable,
    sources_label,
    table_summary,
    title_for,
    to_markdown,
    write_table,
)
from baglm_nb.core import sources
from baglm_nb.core.evaluation import pair_hits, recall_from_hits
from baglm_nb.core.observations import Observations
from baglm_nb.core.pipeline import run_baglm
from baglm_nb.inputs.datasets import DATASETS, Video

__all__ = [
    "DATASET_NAMES",
    "dataset_key",
    "METHOD_NAMES",
    "NOT_USED",
    "SLOT",
    "Scored",
    "TableBuilder",
    "pair_items",
    "require_dependencies",
    "result_row",
    "score",
    "score_baglm",
    "score_raw",
    "slot_row",
    "sources_label",
    "table_summary",
    "title_for",
    "to_markdown",
    "write_table",
]


class _DisplayNames(Mapping[str, str]):
    """Dataset name -> its spec's ``display_name``, read from ``DATASETS`` at each lookup."""

    def __getitem__(self, name: str) -> str:
        return DATASETS[name].display_name

    def __iter__(self) -> Iterator[str]:
        return iter(DATASETS)

    def __len__(self) -> int:
        return len(DATASETS)


#: Display names of the datasets (:attr:`~baglm_nb.inputs.datasets.DatasetSpec.display_name`),
#: a live view of ``DATASETS``: a dataset added there is named here too.
DATASET_NAMES: Mapping[str, str] = _DisplayNames()


def dataset_key(display_name: str) -> str:
    """The dataset whose :data:`DATASET_NAMES` entry is ``display_name`` (itself when none)."""
    keys = {shown: name for name, shown in DATASET_NAMES.items()}
    return keys.get(str(display_name), str(display_name))


#: Display names of the two methods every table compares.
METHOD_NAMES: dict[str, str] = {"baglm": "BaGLM", "off_the_shelf": "off-the-shelf LMM"}

#: Prefix of the ``note`` of a slot row: a row the workbench cannot fill from its inputs yet.
SLOT = "slot"

#: The label columns every item starts with (grouping columns follow them).
_LABELS = ITEM_LABELS


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
    obs: Observations,
    deps: sources.DependencySource | None,
    videos: Sequence[Video] | None = None,
    **kwargs,
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


def require_dependencies(
    deps: sources.DependencySource | None, dataset: str
) -> sources.Dependencies:
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


class TableBuilder:
    """The rows of one result table, the items behind them and its sources, in order.

    :meth:`add` appends a :func:`result_row` and its items, :meth:`slot` a :func:`slot_row`,
    :meth:`row` any row with optional items, :meth:`item` more items of the last row;
    :meth:`observe` names an observation source the table is computed on (the ``source`` of
    every row but a slot is named too); :meth:`result` returns the
    :class:`~baglm_nb.analyses.result_table.ResultTable`.
    """

    def __init__(self) -> None:
        self.rows: list[dict] = []
        self.items: list[pd.DataFrame] = []
        self.observations: list[str] = []

    def observe(self, label: str) -> None:
        """Name ``label`` among the table's observation sources."""
        if label not in self.observations:
            self.observations.append(label)

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
        if "source" in row:
            self.observe(str(row["source"]))
        if hits is not None:
            self.item(hits, **{k: row[k] for k in _LABELS if k in row}, **labels)

    @property
    def has_slots(self) -> bool:
        """Whether any row so far is a slot row."""
        return any(str(r.get("note", "")).startswith(SLOT) for r in self.rows)

    def item(self, hits: pd.DataFrame, **labels: Any) -> None:
        """Append items (:func:`pair_items` of ``hits`` and ``labels``) to the last row."""
        self.items.append(pair_items(hits, **labels))

    def result(self, columns: Sequence[str] | None = None) -> ResultTable:
        """The table (``columns`` in this order when given) with its items and sources.

        Its dependency sources are those its ``D`` column names.
        """
        table = pd.DataFrame(self.rows)
        frame = table if columns is None else table[list(columns)]
        return ResultTable.of(frame, self.items, observations=self.observations)
