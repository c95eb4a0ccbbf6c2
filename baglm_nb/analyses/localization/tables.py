"""Localization tables (CLI and notebook): the off-the-shelf LMM and BaGLM side by side.

:func:`localization_table` is Tab. htstep_localization / off_the_shelf_vs_baglm_localization for
one observation set: article-grounding mAP (%) of segments detected on the LMM's raw scores and
on BaGLM's beliefs, beside the paper's values (:data:`baglm_nb.inputs.paper.PAPER_LOCALIZATION`)
and NaSVA's reported row. :func:`windowed_recall_table` is the Ego4D Goal-Step windowed R@1
beside the point-wise R@1 of the same beliefs (no paper values exist). Both name BaGLM's
dependency source in a ``D`` column (default: the simulated LLaMA, as the paper uses LLaMA).

Exports :data:`METRIC_NAMES`, :func:`model_label`, :func:`localization_table` and
:func:`windowed_recall_table`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from baglm_nb.analyses.agreement import is_simulated
from baglm_nb.analyses.localization.detection import localize
from baglm_nb.analyses.localization.metrics import article_grounding_map, windowed_recall
from baglm_nb.analyses.result_table import NOT_USED, ResultTable
from baglm_nb.analyses.results import PAPER_ONLY_NOTE
from baglm_nb.core import sources
from baglm_nb.inputs.datasets import load_dataset
from baglm_nb.inputs.paper import (
    PAPER_LMM_NAMES,
    PAPER_LOCALIZATION,
    PAPER_LOCALIZATION_DATASET,
    paper_model,
)

__all__ = ["METRIC_NAMES", "localization_table", "model_label", "windowed_recall_table"]

#: Column names of the paper's localization tables (the mean is over all five thresholds).
METRIC_NAMES: tuple[str, ...] = ("@0.3", "@0.5", "@0.7", "@[0.3-0.7]")


def _map_row(values: dict[str, float]) -> dict[str, float]:
    return {
        "@0.3": values["@0.3"],
        "@0.5": values["@0.5"],
        "@0.7": values["@0.7"],
        "@[0.3-0.7]": values["mean"],
    }


def _resolved(
    deps: sources.DependencySource | None, dataset: str, beliefs: Any
) -> tuple[Any, str | None]:
    """``(deps resolved, its label)``; with given ``beliefs`` the label of ``deps`` if any."""
    if deps is None:
        return None, None
    d = sources.dependencies(dataset, deps)
    if d is None and beliefs is None:
        raise KeyError(f"no dependency source for {dataset}; pass one in deps")
    return d, (d.label if d is not None else None)


def model_label(source: str) -> str:
    """The ``model`` cell of a localization row: the LMM, or what the simulation stands for.

    Simulated observations are compared with InternVL2.5-8B (the LMM they are calibrated to)
    but are not its output, so their cell says both.
    """
    model = paper_model(source)
    if is_simulated(source):
        return f"simulated (compared with {model})"
    return model


def _computed_rows(obs, d_label, beliefs, videos, evaluated, match_labels, kwargs) -> list[dict]:
    """The off-the-shelf LMM's and BaGLM's rows (workbench mAP beside the paper's)."""
    model = paper_model(obs.label)
    paper = PAPER_LOCALIZATION.get(model, {}) if obs.dataset == PAPER_LOCALIZATION_DATASET else {}
    rows = []
    for method, source in (("off_the_shelf", {u: obs.vsg[u] for u in beliefs}), ("baglm", beliefs)):
        preds = localize(source, obs.dataset, videos, **kwargs)
        values = _map_row(
            article_grounding_map(preds, obs.dataset, videos=evaluated, match_labels=match_labels)
        )
        label = "off-the-shelf LMM" if method == "off_the_shelf" else "+ BaGLM"
        row = {"method": label, "model": model_label(obs.label)}
        row.update({k: round(v, 1) for k, v in values.items()})
        ref = paper.get(method, {})
        row.update({f"paper {k}": ref.get(k) for k in METRIC_NAMES})
        row.update({"videos": len(evaluated), "segments": len(preds), "source": obs.label})
        row["D"] = d_label if method == "baglm" else NOT_USED
        rows.append(row)
    return rows


def _paper_row(method: str, model: str, paper: dict[str, float], source: str, note: str) -> dict:
    row = {"method": method, "model": model}
    row.update({k: None for k in METRIC_NAMES})
    row.update({f"paper {k}": paper[k] for k in METRIC_NAMES})
    row.update({"videos": None, "segments": None, "source": source, "D": None, "note": note})
    return row


def localization_table(
    obs,
    deps: sources.DependencySource = sources.SIMULATED_LLM,
    *,
    match_labels: bool = False,
    beliefs=None,
    **kwargs: Any,
) -> ResultTable:
    """Tab. htstep_localization / off_the_shelf_vs_baglm_localization for one observation set.

    Rows: the off-the-shelf LMM (raw scores) and BaGLM (beliefs), both without the none column,
    each with the workbench's mAP (%) at @0.3, @0.5, @0.7, @[0.3-0.7] and the paper's value for
    the same LMM (``paper @...``; simulated observations are compared with InternVL2.5-8B, the
    LMM they are calibrated to, and their ``model`` cell says so: :func:`model_label`). On
    HT-Step, in the paper's order, the paper's other LMMs are slot rows (their paper values,
    ``note`` ``slot: ...``: their scores fill them), the computed rows stand at their LMM's
    place, and NaSVA's reported row (``source`` ``paper``) comes last. ``kwargs`` go to
    :func:`~baglm_nb.analyses.localization.detection.detect_segments`; ``beliefs``
    (uid -> (T, K+1)) skips the filter (``deps`` then only labels the ``D`` column). No items.
    """
    from baglm_nb.core.pipeline import run_baglm

    videos = load_dataset(obs.dataset)
    d, d_label = _resolved(deps, obs.dataset, beliefs)
    if beliefs is None:
        beliefs = run_baglm(obs, d, videos=videos)
    evaluated = [v for v in videos if v.uid in beliefs]
    computed = _computed_rows(obs, d_label, beliefs, videos, evaluated, match_labels, kwargs)
    if obs.dataset != PAPER_LOCALIZATION_DATASET:
        frame = pd.DataFrame(computed).astype({"videos": "Int64", "segments": "Int64"})
        return ResultTable.of(frame, observations=[obs.label])
    rows, placed, model = [], False, paper_model(obs.label)
    for key, name in PAPER_LMM_NAMES.items():
        if key == model:
            rows += [{**r, "note": ""} for r in computed]
            placed = True
            continue
        why = f"slot: needs {name} scores of HT-Step (01_score_segments or imported)"
        for method in ("off_the_shelf", "baglm"):
            label = "off-the-shelf LMM" if method == "off_the_shelf" else "+ BaGLM"
            rows.append(_paper_row(label, key, PAPER_LOCALIZATION[key][method], "none", why))
    if not placed:  # an LMM the paper does not report: its rows first
        rows = [{**r, "note": ""} for r in computed] + rows
    nasva = PAPER_LOCALIZATION["nasva"]["offline"]
    rows.append(_paper_row("NaSVA (offline)", "nasva", nasva, "paper", PAPER_ONLY_NOTE))
    frame = pd.DataFrame(rows).astype({"videos": "Int64", "segments": "Int64"})
    return ResultTable.of(frame, observations=[obs.label])


def windowed_recall_table(
    obs,
    deps: sources.DependencySource = sources.SIMULATED_LLM,
    *,
    unit: str = "query",
    beliefs=None,
    **kwargs: Any,
) -> ResultTable:
    """Ego4D Goal-Step windowed R@1 (IoU > 0.3, 0.5) and mIoU for the LMM and BaGLM, beside the
    point-wise R@1 (the paper's metric) of the same beliefs. No paper values exist; no items."""
    from baglm_nb.core.evaluation import evaluate
    from baglm_nb.core.pipeline import run_baglm

    videos = load_dataset(obs.dataset)
    d, d_label = _resolved(deps, obs.dataset, beliefs)
    if beliefs is None:
        beliefs = run_baglm(obs, d, videos=videos)
    evaluated = [v for v in videos if v.uid in beliefs]
    rows = []
    for label, source in (
        ("off-the-shelf LMM", {u: obs.vsg[u] for u in beliefs}),
        ("BaGLM", beliefs),
    ):
        preds = localize(source, obs.dataset, videos, **kwargs)
        rec = windowed_recall(preds, obs.dataset, videos=evaluated, unit=unit)
        rows.append(
            {
                "method": label,
                **{k: (round(v, 1) if isinstance(v, float) else v) for k, v in rec.items()},
                "point-wise R@1": round(evaluate(obs.dataset, source, evaluated), 1),
                "videos": len(evaluated),
                "source": obs.label,
                "D": d_label if label == "BaGLM" else NOT_USED,
            }
        )
    return ResultTable.of(pd.DataFrame(rows), observations=[obs.label])
