"""Ablation sweeps behind notebooks 04 and 05: prior, LLM, prompt, stepping, segment duration,
sensitivity to the observation quality.

Every function returns a result table (:mod:`baglm_nb.analyses.tables`): the workbench's R@1
beside the paper's value, the observation ``source``, and the (video, step) items behind each
row. Rows that the inputs cannot fill (no next-step scores, no second dependency cache, no
binary-prompt scores) are slot rows.

Exports :func:`prior_table`, :func:`llm_table`, :func:`prompt_table` with
:func:`vsg_from_cache`, :func:`stepping_table`, :func:`segment_duration_table` and
:func:`sensitivity_table`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from baglm_nb.analyses.paper import PAPER_PROMPT_QUERIES, paper_value
from baglm_nb.analyses.tables import (
    DATASET_NAMES,
    METHOD_NAMES,
    TableBuilder,
    result_row,
    score,
    score_baglm,
    score_raw,
)
from baglm_nb.core import sources
from baglm_nb.core.observations import Observations, from_simulation
from baglm_nb.core.simulate import SimulationParams
from baglm_nb.inputs import grid
from baglm_nb.stores.scores import ScoreCache

__all__ = [
    "llm_table",
    "prior_table",
    "prompt_table",
    "segment_duration_table",
    "sensitivity_table",
    "stepping_table",
    "vsg_from_cache",
]

_NO_DEPS = "no dependency source for this dataset"


def prior_table(observations: Iterable[Observations], deps: Any = "oracle") -> pd.DataFrame:
    """Tab. prior: the state prior divided out in the update.

    Rows per dataset: 1) the LMM's next-step scores (only when the source has them, else a
    slot row), 2) the uniform prior propagated through the transition model, 3) uniform
    ``1/(K+1)`` (published). ``deps`` is a deps setting (:mod:`baglm_nb.core.sources`).
    """
    table = TableBuilder()
    for obs in observations:
        d = sources.dependencies(deps, obs.dataset)
        name = "1) next-step scores (pi_next)"
        paper = paper_value("prior_next_step", obs.dataset)
        if obs.next_step and d is not None:
            scored = score_baglm(obs, d, prior="next_step")
            table.add(obs.dataset, name, scored, paper, source=obs.label, note="")
        else:
            why = f"the {obs.label} source has no next-step (pi_next) scores"
            table.slot(obs.dataset, name, paper, why if not obs.next_step else _NO_DEPS)
        for label, prior, key in (
            ("2) propagated", "propagated", "prior_propagated"),
            ("3) uniform 1/(K+1)", "uniform", "both"),
        ):
            paper = paper_value(key, obs.dataset)
            if d is None:
                table.slot(obs.dataset, label, paper, _NO_DEPS)
                continue
            scored = score_baglm(obs, d, prior=prior)
            note = f"D={sources.label_of(d)}"
            table.add(obs.dataset, label, scored, paper, source=obs.label, note=note)
    return table.frame()


def _paper_key_for_llm(name: str) -> str | None:
    low = name.lower()
    if "gpt-4.1-mini" in low or "gpt4.1-mini" in low:
        return "gpt-4.1-mini"
    if "llama" in low:
        return "both"
    return None


def llm_table(
    observations: Iterable[Observations], llms: Mapping[str, Mapping[str, Any]]
) -> pd.DataFrame:
    """Tab. LLM: BaGLM with the dependency matrices of two (or more) LLMs.

    ``llms`` maps an LLM's display name to ``{dataset: dependency-cache folder}``; a dataset
    without a cache for an LLM gets a slot row. The paper's column is filled for names that
    contain ``llama`` (LLaMA-3.3-70B) or ``gpt-4.1-mini``.
    """
    table = TableBuilder()
    for obs in observations:
        for name, caches in llms.items():
            key = _paper_key_for_llm(name)
            paper = paper_value(key, obs.dataset) if key else float("nan")
            d = sources.dependencies(dict(caches or {}), obs.dataset)
            if d is None:
                why = f"pass a {name} dependency cache (02_dependencies) for {obs.dataset}"
                table.slot(obs.dataset, name, paper, why)
                continue
            table.add(obs.dataset, name, score_baglm(obs, d), paper, source=obs.label, note="")
    return table.frame()


def vsg_from_cache(path: str | os.PathLike) -> tuple[str, str, dict[str, np.ndarray]]:
    """Per-second VSG rows of every video of a score cache; progress is not needed.

    Returns ``(dataset, label, {uid: (T, K+1) array})``; used for off-the-shelf comparisons
    such as the binary prompt, whose caches may hold no progress scores.
    """
    cache = ScoreCache.open(Path(path))
    key = cache.key
    rows = {u: grid.per_second(s.vsg, key.segment_duration) for u, s in cache.read_all().items()}
    return key.dataset, key.source_label, rows


def prompt_table(
    observations: Iterable[Observations],
    binary: Mapping[str, str | os.PathLike | Mapping[str, np.ndarray]] | None = None,
) -> pd.DataFrame:
    """Tab. prompt: the off-the-shelf LMM with the multiple-choice vs the binary VSG prompt.

    ``observations`` give the multiple-choice rows; ``binary`` maps a dataset to a score-cache
    folder of binary-prompt scores (or a mapping uid -> per-second VSG rows). Without one the
    binary row is a slot. When both exist, both are evaluated on the videos they share.
    """
    binary = binary or {}
    table = TableBuilder()
    for obs in observations:
        videos, bi, bin_label = obs.videos, None, "none"
        if obs.dataset in binary:
            value = binary[obs.dataset]
            if isinstance(value, Mapping):
                bin_label, bin_rows = obs.label, dict(value)
            else:
                _, bin_label, bin_rows = vsg_from_cache(value)
            videos = [v for v in obs.videos if v.uid in bin_rows]
            if not videos:
                raise ValueError(f"the binary-prompt scores share no video with {obs.dataset}")
            bi = score(obs.dataset, {v.uid: bin_rows[v.uid] for v in videos}, videos)
        mc = score_raw(obs, videos)
        for name, scored, key, label, q in (
            ("multiple choice (pi_VSG)", mc, "off_the_shelf", obs.label, "multiple_choice"),
            ("binary (pi_VSG^bin)", bi, "binary_prompt", bin_label, "binary"),
        ):
            paper, queries = paper_value(key, obs.dataset), PAPER_PROMPT_QUERIES[q]
            if scored is None:
                why = f"pass a binary-prompt score cache for {obs.dataset}"
                table.slot(obs.dataset, name, paper, why, queries_per_segment=queries)
                continue
            extra = {"note": "", "queries_per_segment": queries}
            table.add(obs.dataset, name, scored, paper, source=label, **extra)
    return table.frame()


def stepping_table(observations: Iterable[Observations], deps: Any = "oracle") -> pd.DataFrame:
    """Per-second vs per-segment stepping (a new ablation; the paper does not report it).

    The published code steps the filter once per second row, so each 2-s segment's observation
    is applied twice; the paper's equations step once per segment. The paper's numbers come
    from the published code, so only the per-second row has a paper value.
    """
    table = TableBuilder()
    for obs in observations:
        d = sources.dependencies(deps, obs.dataset)
        for label, stepping, paper, note in (
            (
                "per second (published code)",
                "second",
                paper_value("both", obs.dataset),
                "the published code's undocumented choice",
            ),
            (
                "per segment (paper's equations)",
                "segment",
                float("nan"),
                "new ablation: not reported in the paper",
            ),
        ):
            if d is None:
                table.slot(obs.dataset, label, paper, "no dependency source")
                continue
            scored = score_baglm(obs, d, stepping=stepping)
            table.add(obs.dataset, label, scored, paper, source=obs.label, note=note)
    return table.frame()


def segment_duration_table(
    datasets: Iterable[str],
    durations: Sequence[int] = (1, 2, 3, 4),
    *,
    deps: Any = "oracle",
    params: SimulationParams | None = None,
    limit: int | None = None,
    caches: Iterable[str | os.PathLike] = (),
) -> pd.DataFrame:
    """Fig. segment duration x LMM: BaGLM and the off-the-shelf model per segment duration.

    The simulated source is rebuilt at every duration (``SimulationParams(segment_duration=d)``)
    for every dataset in ``datasets``; each score-cache folder in ``caches`` adds one point
    (its dataset, model and segment duration are read from its key). The paper gives numbers
    only for InternVL2.5-8B at 2 s (the main table); other points of its figure are not stated.

    Returns
    -------
    DataFrame
        ``dataset, source, segment_duration, method, workbench, paper, videos``; items carry
        ``segment_duration``.
    """
    params = SimulationParams() if params is None else params
    observed: list[Observations] = []
    for name in datasets:
        videos = sources.select_videos(name, limit)
        for d in durations:
            p = replace(params, segment_duration=int(d))
            observed.append(from_simulation(name, p, videos=videos))
    for folder in caches:
        dataset = ScoreCache.open(Path(folder)).key.dataset
        observed.append(sources.observations(dataset, folder, limit=limit))
    resolved: dict[str, Any] = {}
    table = TableBuilder()
    for obs in observed:
        if obs.dataset not in resolved:
            resolved[obs.dataset] = sources.dependencies(deps, obs.dataset)
        dep = resolved[obs.dataset]
        group = {"segment_duration": obs.segment_duration}
        for key in ("baglm", "off_the_shelf"):
            paper = paper_value(key, obs.dataset) if obs.segment_duration == 2 else np.nan
            if key == "baglm" and dep is None:  # no D: an empty BaGLM point, not a slot
                row = result_row(
                    obs.dataset, METHOD_NAMES[key], None, paper, source=obs.label, **group
                )
                table.row({**row, "videos": len(obs.videos)})
                continue
            scored = score_baglm(obs, dep) if key == "baglm" else score_raw(obs)
            table.add(obs.dataset, METHOD_NAMES[key], scored, paper, source=obs.label, groups=group)
    columns = ("dataset", "source", "segment_duration", "method", "workbench", "paper", "videos")
    return table.frame(columns)


def sensitivity_table(
    dataset: str,
    signals: Sequence[float],
    *,
    deps: Any = "oracle",
    params: SimulationParams | None = None,
    limit: int | None = None,
) -> pd.DataFrame:
    """BaGLM's gain over the off-the-shelf model as the simulated signal strength varies.

    A figure the paper does not have: for each ``signal`` the simulated source is rebuilt
    (other parameters from ``params``) and both methods are evaluated. The paper's columns
    repeat its InternVL2.5-8B numbers as a reference level (they belong to no signal value).

    Returns
    -------
    DataFrame
        ``dataset, signal, off_the_shelf, baglm, gain, paper_off_the_shelf, paper_baglm,
        paper_gain, videos, source``; items carry ``method`` and ``signal``.
    """
    params = SimulationParams() if params is None else params
    videos = sources.select_videos(dataset, limit)
    dep = sources.dependencies(deps, dataset)
    p_off, p_bag = paper_value("off_the_shelf", dataset), paper_value("baglm", dataset)
    table = TableBuilder()
    for signal in signals:
        obs = from_simulation(dataset, replace(params, signal=float(signal)), videos=videos)
        scored = {"off_the_shelf": score_raw(obs, videos)}
        if dep is not None:
            scored["baglm"] = score_baglm(obs, dep, videos)
        off = scored["off_the_shelf"].value
        bag = scored["baglm"].value if dep is not None else float("nan")
        row = {
            "dataset": DATASET_NAMES.get(dataset, dataset),
            "signal": float(signal),
            "off_the_shelf": round(off, 1),
            "baglm": round(bag, 1),
            "gain": round(bag - off, 1),
            "paper_off_the_shelf": p_off,
            "paper_baglm": p_bag,
            "paper_gain": round(p_bag - p_off, 1),
            "videos": len(videos),
            "source": obs.label,
        }
        table.row(row)
        for key, s in scored.items():
            method = METHOD_NAMES[key]
            table.item(
                s.hits,
                dataset=row["dataset"],
                method=method,
                source=obs.label,
                signal=float(signal),
            )
    return table.frame()
