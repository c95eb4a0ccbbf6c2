"""Ablation sweeps behind notebooks 04 and 05: prior, LLM, prompt, stepping, segment duration,
sensitivity to the observation quality and to the dependency quality.

Every function returns a result table (:mod:`baglm_nb.analyses.tables`): the workbench's R@1
beside the paper's value, the observation ``source``, the dependency source ``D`` of BaGLM's
rows (default :data:`~baglm_nb.core.sources.SIMULATED_LLM`, the simulated LLaMA-3.3-70B, as the
paper uses LLaMA), and the (video, step) items behind each row. Rows that the inputs cannot
fill (no next-step scores, no dependency source, no binary-prompt scores) are slot rows.

Exports :func:`prior_table`, :func:`llm_table`, :func:`prompt_table`, :func:`stepping_table`,
:func:`segment_duration_table`, :func:`sensitivity_table` and :func:`dependency_quality_table`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from baglm_nb.analyses.result_table import ResultTable
from baglm_nb.analyses.tables import (
    DATASET_NAMES,
    METHOD_NAMES,
    NOT_USED,
    TableBuilder,
    result_row,
    score,
    score_baglm,
    score_raw,
)
from baglm_nb.core import sources
from baglm_nb.core.observations import Observations, from_simulation
from baglm_nb.core.simulate import SimulationParams, default_params
from baglm_nb.inputs.paper import PAPER_PROMPT_QUERIES, paper_value

__all__ = [
    "dependency_quality_table",
    "llm_table",
    "prior_table",
    "prompt_table",
    "segment_duration_table",
    "sensitivity_table",
    "simulated_name",
    "stepping_table",
]

_NO_DEPS = "no dependency source for this dataset"

#: The default D of BaGLM's rows.
_DEFAULT_D = sources.SIMULATED_LLM


def prior_table(
    observations: Iterable[Observations], deps: sources.DependencySource = _DEFAULT_D
) -> ResultTable:
    """Tab. prior: the state prior divided out in the update.

    Rows per dataset: 1) the LMM's next-step scores (only when the source has them, else a
    slot row), 2) the uniform prior propagated through the transition model, 3) uniform
    ``1/(K+1)`` (published). ``deps`` is a deps setting (:mod:`baglm_nb.core.sources`).
    """
    table = TableBuilder()
    for obs in observations:
        table.observe(obs.label)
        d = sources.dependencies(obs.dataset, deps)
        name = "1) next-step scores (pi_next)"
        paper = paper_value("prior_next_step", obs.dataset)
        label = sources.label_of(d) if d is not None else None
        if obs.next_step and d is not None:
            scored = score_baglm(obs, d, prior="next_step")
            table.add(obs.dataset, name, scored, paper, source=obs.label, D=label, note="")
        else:
            why = f"the {obs.label} source has no next-step (pi_next) scores"
            table.slot(obs.dataset, name, paper, why if not obs.next_step else _NO_DEPS, D=label)
        for label, prior, key in (
            ("2) propagated", "propagated", "prior_propagated"),
            ("3) uniform 1/(K+1)", "uniform", "both"),
        ):
            paper = paper_value(key, obs.dataset)
            if d is None:
                table.slot(obs.dataset, label, paper, _NO_DEPS, D=None)
                continue
            scored = score_baglm(obs, d, prior=prior)
            table.add(obs.dataset, label, scored, paper, source=obs.label, D=d.label, note="")
    return table.result()


def _paper_key_for_llm(name: str) -> str | None:
    low = name.lower()
    if "gpt-4.1-mini" in low or "gpt4.1-mini" in low:
        return "gpt-4.1-mini"
    if "llama" in low:
        return "both"
    return None


def simulated_name(name: str, d_label: str) -> str:
    """An LLM's display name, with " (simulated)" when its D is a simulated preset's."""
    if "simulated" in str(d_label).lower() and "simulated" not in name.lower():
        return f"{name} (simulated)"
    return name


def llm_table(
    observations: Iterable[Observations], llms: Mapping[str, sources.DependencySource | None]
) -> ResultTable:
    """Tab. LLM: BaGLM with the dependency matrices of two (or more) LLMs.

    ``llms`` maps an LLM's display name to a deps setting (:mod:`baglm_nb.core.sources`): e.g.
    ``"simulated-llm:gpt"`` (the CPU default, labelled simulated in the ``D`` column),
    ``"imported"`` or ``{dataset: dependency-cache folder}``; an empty setting, or a mapping
    without the dataset, gives a slot row. The paper's column is filled for names that contain
    ``llama`` (LLaMA-3.3-70B) or ``gpt-4.1-mini``. A row whose D is simulated is named so in
    its ``method`` (:func:`simulated_name`): "LLaMA-3.3-70B (simulated)".
    """
    table = TableBuilder()
    for obs in observations:
        table.observe(obs.label)
        for name, setting in llms.items():
            key = _paper_key_for_llm(name)
            paper = paper_value(key, obs.dataset) if key else float("nan")
            d = sources.dependencies(obs.dataset, setting) if setting else None
            if d is None:
                why = f"pass a {name} dependency source (02_dependencies) for {obs.dataset}"
                table.slot(obs.dataset, name, paper, why, D=None)
                continue
            scored = score_baglm(obs, d)
            method = simulated_name(name, d.label)
            table.add(obs.dataset, method, scored, paper, source=obs.label, D=d.label, note="")
    return table.result()


def prompt_table(
    observations: Iterable[Observations],
    binary: Mapping[str, sources.VsgSetting] | None = None,
) -> ResultTable:
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
            bin_label, bin_rows = sources.vsg_rows(obs.dataset, binary[obs.dataset])
            bin_label = obs.label if bin_label is None else bin_label
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
    return table.result()


def stepping_table(
    observations: Iterable[Observations], deps: sources.DependencySource = _DEFAULT_D
) -> ResultTable:
    """Per-second vs per-segment stepping (a new ablation; the paper does not report it).

    The published code steps the filter once per second row, so each 2-s segment's observation
    is applied twice; the paper's equations step once per segment. The paper's numbers come
    from the published code, so only the per-second row has a paper value.
    """
    table = TableBuilder()
    for obs in observations:
        table.observe(obs.label)
        d = sources.dependencies(obs.dataset, deps)
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
                table.slot(obs.dataset, label, paper, "no dependency source", D=None)
                continue
            scored = score_baglm(obs, d, stepping=stepping)
            table.add(obs.dataset, label, scored, paper, source=obs.label, D=d.label, note=note)
    return table.result()


def segment_duration_table(
    datasets: Iterable[str],
    durations: Sequence[int] = (1, 2, 3, 4),
    *,
    deps: sources.DependencySource = _DEFAULT_D,
    params: SimulationParams | None = None,
    limit: int | None = None,
    caches: Iterable[str | os.PathLike] = (),
) -> ResultTable:
    """Fig. segment duration x LMM: BaGLM and the off-the-shelf model per segment duration.

    The simulated source is rebuilt at every duration (``params``, default each dataset's
    calibrated :func:`~baglm_nb.core.simulate.default_params`, with ``segment_duration=d``)
    for every dataset in ``datasets``; each score-cache folder in ``caches`` adds one point
    (its dataset, model and segment duration are read from its key). The paper gives numbers
    only for InternVL2.5-8B at 2 s (the main table); other points of its figure are not stated.

    Returns
    -------
    ResultTable
        ``dataset, source, segment_duration, method, workbench, paper, videos, D``; items carry
        ``segment_duration``.
    """
    observed: list[Observations] = []
    for name in datasets:
        videos = sources.select_videos(name, limit)
        base = default_params(name) if params is None else params
        for d in durations:
            p = replace(base, segment_duration=int(d))
            observed.append(from_simulation(name, p, videos=videos))
    for folder in caches:
        dataset, _ = sources.score_cache_contents(folder)
        observed.append(sources.observations(dataset, folder, limit=limit))
    resolved: dict[str, Any] = {}
    table = TableBuilder()
    for obs in observed:
        if obs.dataset not in resolved:
            resolved[obs.dataset] = sources.dependencies(obs.dataset, deps)
        dep = resolved[obs.dataset]
        group = {"segment_duration": obs.segment_duration}
        for key in ("baglm", "off_the_shelf"):
            paper = paper_value(key, obs.dataset) if obs.segment_duration == 2 else np.nan
            label = NOT_USED if key == "off_the_shelf" else dep.label if dep else None
            if key == "baglm" and dep is None:  # no D: an empty BaGLM point, not a slot
                row = result_row(
                    obs.dataset, METHOD_NAMES[key], None, paper, source=obs.label, **group
                )
                table.row({**row, "videos": len(obs.videos), "D": None})
                continue
            scored = score_baglm(obs, dep) if key == "baglm" else score_raw(obs)
            method = METHOD_NAMES[key]
            table.add(obs.dataset, method, scored, paper, source=obs.label, groups=group, D=label)
    columns = (
        "dataset",
        "source",
        "segment_duration",
        "method",
        "workbench",
        "paper",
        "videos",
        "D",
    )
    return table.result(columns)


def sensitivity_table(
    dataset: str,
    signals: Sequence[float],
    *,
    deps: sources.DependencySource = _DEFAULT_D,
    params: SimulationParams | None = None,
    limit: int | None = None,
    with_calibrated: bool = True,
) -> ResultTable:
    """BaGLM's gain over the off-the-shelf model as the simulated signal strength varies.

    A figure the paper does not have: for each ``signal`` the simulated source is rebuilt
    (other parameters from ``params``, default the dataset's calibrated ones) and both methods
    are evaluated, BaGLM with ``deps``. ``with_calibrated`` adds the dataset's calibrated
    signal to ``signals`` (column ``calibrated`` marks it). The paper's columns repeat its
    InternVL2.5-8B numbers as a reference level (they belong to no signal value).

    Returns
    -------
    ResultTable
        ``dataset, D, signal, calibrated, off_the_shelf, baglm, gain, paper_off_the_shelf,
        paper_baglm, paper_gain, videos, source``; items carry ``method``, ``signal`` and ``D``.
    """
    params = default_params(dataset) if params is None else params
    calibrated = default_params(dataset).signal
    signals = sorted({float(x) for x in signals} | ({calibrated} if with_calibrated else set()))
    videos = sources.select_videos(dataset, limit)
    dep = sources.dependencies(dataset, deps)
    label = dep.label if dep is not None else None
    p_off, p_bag = paper_value("off_the_shelf", dataset), paper_value("baglm", dataset)
    table = TableBuilder()
    for signal in signals:
        obs = from_simulation(dataset, replace(params, signal=signal), videos=videos)
        scored = {"off_the_shelf": score_raw(obs, videos)}
        if dep is not None:
            scored["baglm"] = score_baglm(obs, dep, videos)
        off = scored["off_the_shelf"].value
        bag = scored["baglm"].value if dep is not None else float("nan")
        row = {
            "dataset": DATASET_NAMES.get(dataset, dataset),
            "D": label,
            "signal": signal,
            "calibrated": signal == calibrated,
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
            d_label = label if key == "baglm" else NOT_USED
            table.item(
                s.hits,
                dataset=row["dataset"],
                method=method,
                source=obs.label,
                signal=signal,
                D=d_label,
            )
    return table.result()


def dependency_quality_table(
    dataset: str,
    levels: Sequence[float] = (0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0),
    *,
    presets: Sequence[str] = ("simulated-llm:llama", "simulated-llm:gpt"),
    scores: sources.ObservationSource = sources.SIMULATED,
    limit: int | None = None,
) -> ResultTable:
    """BaGLM's gain as the dependency matrix degrades from the oracle chain to noise.

    A sweep the paper does not have: D = ``noisy-oracle:<level>`` (each video's oracle chain
    with a fraction ``level`` of its entries replaced by uniform noise) for every level, then
    the simulated LLM ``presets`` as reference rows (``level`` empty), all on the same
    observations (``scores``, default the calibrated simulated source).

    Returns
    -------
    ResultTable
        ``dataset, D, level, off_the_shelf, baglm, gain, paper_gain, videos, source``; items
        carry ``method`` and ``D``.
    """
    obs = sources.observations(dataset, scores, limit=limit)
    off = score_raw(obs)
    p_gain = round(paper_value("baglm", dataset) - paper_value("off_the_shelf", dataset), 1)
    name = DATASET_NAMES.get(dataset, dataset)
    table = TableBuilder()
    settings = [(f"{sources.NOISY}:{x:g}", float(x)) for x in levels]
    settings += [(p, float("nan")) for p in presets]
    for setting, level in settings:
        dep = sources.dependencies(dataset, setting)
        bag = score_baglm(obs, dep)
        row = {
            "dataset": name,
            "D": dep.label,
            "level": level,
            "off_the_shelf": round(off.value, 1),
            "baglm": round(bag.value, 1),
            "gain": round(bag.value - off.value, 1),
            "paper_gain": p_gain,
            "videos": bag.videos,
            "source": obs.label,
        }
        table.row(row, bag.hits, method=METHOD_NAMES["baglm"], D=dep.label)
    table.item(
        off.hits, dataset=name, method=METHOD_NAMES["off_the_shelf"], source=obs.label, D=NOT_USED
    )
    return table.result()
