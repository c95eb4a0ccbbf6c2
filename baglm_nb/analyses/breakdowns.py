"""R@1 breakdowns behind notebook 05: by the step's temporal position and by the number of
candidate steps K.

Both are flat means over the evaluable (video, step) pairs of each group, as the paper's
appendix computes them on HT-Step, from the pair rows of several methods
(:func:`breakdown_hits`). Each table carries its pairs as items
(:mod:`baglm_nb.analyses.tables`).

Exports :func:`breakdown_hits`, :func:`position_table`, :func:`candidate_steps_table` and
:func:`breakdown_tables`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from baglm_nb.analyses.result_table import ResultTable
from baglm_nb.analyses.tables import (
    DATASET_NAMES,
    METHOD_NAMES,
    NOT_USED,
    pair_items,
    require_dependencies,
)
from baglm_nb.core import sources
from baglm_nb.core.evaluation import pair_hits
from baglm_nb.core.observations import Observations
from baglm_nb.core.pipeline import run_baglm
from baglm_nb.inputs.datasets import Video, load_dataset
from baglm_nb.inputs.paper import PAPER_POSITION

__all__ = ["breakdown_hits", "breakdown_tables", "candidate_steps_table", "position_table"]


def breakdown_hits(
    dataset: str,
    beliefs: Mapping[str, Mapping[str, np.ndarray]],
    videos: Sequence[Video] | None = None,
) -> pd.DataFrame:
    """:func:`~baglm_nb.core.evaluation.pair_hits` of several methods, stacked.

    ``beliefs`` maps a method key (``baglm``, ``off_the_shelf`` or any name) to its
    ``{uid: (T, K+1) array}``. Adds a ``method`` column with the display name.
    """
    videos = load_dataset(dataset) if videos is None else videos
    frames = []
    for key, rows in beliefs.items():
        hits = pair_hits(dataset, rows, videos)
        hits.insert(0, "method", METHOD_NAMES.get(key, key))
        frames.append(hits)
    return pd.concat(frames, ignore_index=True)


def _method_key(name: str) -> str:
    return {v: k for k, v in METHOD_NAMES.items()}.get(name, name)


def _d_column(methods: pd.Series, deps: str | None) -> list[str | None]:
    """The ``D`` of each row: ``deps`` for BaGLM, :data:`NOT_USED` for the other methods."""
    return [deps if m == METHOD_NAMES["baglm"] else NOT_USED for m in methods]


def position_table(
    dataset: str,
    hits: pd.DataFrame,
    *,
    bins: int = 5,
    source: str = "simulated",
    deps: str | None = None,
) -> ResultTable:
    """R@1 by the temporal position of the step (Tab. htstep_step_position).

    A step's position is its first annotated start over the video's duration (``position`` of
    :func:`~baglm_nb.core.evaluation.pair_hits`); positions go into ``bins`` equal bins over
    [0, 1] (1.0 falls in the last). ``hits`` comes from :func:`breakdown_hits`; ``deps`` is
    the label of BaGLM's dependency source (the ``D`` column).

    Returns
    -------
    ResultTable
        ``dataset, method, bin, range, workbench, paper, pairs, source, D``; items carry ``bin``.
    """
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    b = np.minimum((hits["position"].to_numpy() * bins).astype(int), bins - 1)
    name = DATASET_NAMES.get(dataset, dataset)
    frame = pair_items(hits, dataset=name, source=source, bin=[f"bin {i}" for i in b])
    rows = []
    for method, sub in frame.groupby("method", sort=False):
        paper = PAPER_POSITION.get(dataset, {}).get(_method_key(str(method)))
        for i in range(bins):
            in_bin = sub[sub["bin"] == f"bin {i}"]
            rows.append(
                {
                    "dataset": name,
                    "method": method,
                    "bin": f"bin {i}",
                    "range": f"{i / bins:.1f}-{(i + 1) / bins:.1f}",
                    "workbench": round(in_bin["hit"].mean() * 100, 1) if len(in_bin) else np.nan,
                    "paper": paper[i] if paper is not None and bins == len(paper) else np.nan,
                    "pairs": len(in_bin),
                    "source": source,
                }
            )
    table = pd.DataFrame(rows)
    table["D"] = _d_column(table["method"], deps)
    return ResultTable.of(table, [frame], observations=[source])


def candidate_steps_table(
    dataset: str, hits: pd.DataFrame, *, source: str = "simulated", deps: str | None = None
) -> ResultTable:
    """R@1 by the number of candidate steps K of the video's task (Fig. recall by step count).

    The paper shows this as a figure without numbers, so ``paper`` is NaN. ``deps`` is the
    label of BaGLM's dependency source (the ``D`` column).

    Returns
    -------
    ResultTable
        ``dataset, method, num_steps, videos, pairs, workbench, paper, source, D``; items carry
        ``num_steps``.
    """
    grouped = hits.groupby(["method", "num_steps"], sort=False).agg(
        videos=("video_uid", "nunique"), pairs=("hit", "size"), recall=("hit", "mean")
    )
    out = grouped.reset_index().sort_values(["method", "num_steps"], kind="stable")
    out["workbench"] = (out.pop("recall") * 100).round(1)
    name = DATASET_NAMES.get(dataset, dataset)
    out.insert(0, "dataset", name)
    out["paper"] = np.nan
    out["source"] = source
    order = list(dict.fromkeys(hits["method"]))
    out["_o"] = out["method"].map(order.index)
    table = out.sort_values(["_o", "num_steps"]).drop(columns="_o").reset_index(drop=True)
    table["D"] = _d_column(table["method"], deps)
    items = [pair_items(hits, dataset=name, source=source)]
    return ResultTable.of(table, items, observations=[source])


def breakdown_tables(
    obs: Observations, deps: sources.DependencySource = sources.SIMULATED_LLM, *, bins: int = 5
) -> tuple[ResultTable, ResultTable]:
    """Position and candidate-step breakdowns of BaGLM and the off-the-shelf model on ``obs``.

    Runs the filter once over ``obs`` (``deps`` is a deps setting of
    :mod:`baglm_nb.core.sources`; a mapping without the dataset raises ``KeyError``) and
    returns ``(position_table, candidate_steps_table)``.
    """
    d = require_dependencies(deps, obs.dataset)
    videos = obs.videos
    beliefs = run_baglm(obs, d, videos=videos)
    hits = breakdown_hits(
        obs.dataset,
        {"off_the_shelf": {v.uid: obs.vsg[v.uid] for v in videos}, "baglm": beliefs},
        videos,
    )
    return (
        position_table(obs.dataset, hits, bins=bins, source=obs.label, deps=d.label),
        candidate_steps_table(obs.dataset, hits, source=obs.label, deps=d.label),
    )
