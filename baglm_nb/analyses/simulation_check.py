"""The out-of-sample check of the simulated CPU default against the paper (notebook 05).

The simulated observations are calibrated on the paper's off-the-shelf rows only
(:mod:`baglm_nb.core.simulate`) and the simulated LLM's matrices on the paper's
dependency-violation table only (:mod:`baglm_nb.core.simulate_deps`). BaGLM's rows were never a
target, so comparing them with the paper tests the simulation:

- :func:`gain_table`: BaGLM's gain over the off-the-shelf model per dataset, the workbench's
  beside the paper's (HT-Step, CrossTask, Ego4D, COIN with LLaMA's D);
- :func:`transition_pattern_table`: the transition ablation (static, readiness, validity,
  both) per dataset, its order, and whether the paper's pattern
  ``static < readiness, validity < both`` holds.

- :func:`twin_check` / :func:`twin_errors`: both simulated twins (independent noise,
  ``simulated:iid``, and persistence pinned to the paper's off-the-shelf mAP,
  ``simulated:pinned``; :mod:`baglm_nb.core.simulate`) side by side on every BaGLM number
  neither was fitted on: BaGLM's R@1 gain per dataset, its HT-Step mAP gain per tIoU, the
  transition-ablation rows and the oracle rows (each as a gain over the same twin's
  off-the-shelf R@1, beside the paper's gain over its off-the-shelf row), and each twin's mean
  absolute error per group; the default twin (``simulated``) is the one with the smaller mean
  absolute error on BaGLM's R@1 gains (:data:`RULE_GROUP`, :func:`default_twin_of`).

The first two are built from :func:`~baglm_nb.analyses.results.main_results_table` and
:func:`~baglm_nb.analyses.results.transition_table` (one place per number) and keep their
items. ``python -m baglm_nb sim-check`` prints them (:func:`simulation_check`).

With the simulated LLM's D, a diagnostic column repeats the gain with its *held-out* variant
(:mod:`baglm_nb.core.simulate_deps`: evidence from the group's other videos only), which shows
how much of a departure comes from the simulated LLM having "seen" the evaluated video.

Exports :func:`gain_table` with :func:`gain_bars`, :func:`transition_pattern_table`,
:func:`order_of`, :func:`held_out_of`, :func:`simulation_check`, :data:`CHECK_GROUPS`,
:data:`RULE_GROUP`, :func:`twin_check`, :func:`twin_errors`, :func:`default_twin_of` and
:func:`twin_error_bars`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from baglm_nb.analyses.result_table import ResultTable
from baglm_nb.analyses.results import (
    ORACLE_ROWS,
    main_results_table,
    oracle_table,
    transition_table,
)
from baglm_nb.analyses.tables import DATASET_NAMES, METHOD_NAMES, dataset_key
from baglm_nb.core import simulate_deps, sources
from baglm_nb.core.observations import Observations
from baglm_nb.inputs.datasets import DATASETS
from baglm_nb.inputs.paper import (
    PAPER,
    PAPER_LOCALIZATION,
    PAPER_LOCALIZATION_DATASET,
    paper_model,
    paper_value,
)
from baglm_nb.inputs.variants import TRANSITION_SPECS, TRANSITIONS

__all__ = [
    "CHECK_GROUPS",
    "RULE_GROUP",
    "default_twin_of",
    "gain_bars",
    "gain_table",
    "held_out_of",
    "order_of",
    "simulation_check",
    "transition_pattern_table",
    "twin_check",
    "twin_error_bars",
    "twin_errors",
]

#: The transition variants, in the order of the paper's table.
VARIANTS = TRANSITIONS


def gain_table(
    observations: Iterable[Observations],
    deps: sources.DependencySource = sources.SIMULATED_LLM,
    *,
    diagnostic: Any = None,
) -> ResultTable:
    """BaGLM's gain per dataset beside the paper's (with the paper's LLaMA D).

    ``diagnostic`` (a second deps setting, e.g. ``simulated-llm:llama:held-out``) adds its
    BaGLM R@1 and gain on the same observations, to show what moves the gain.

    Returns
    -------
    ResultTable
        ``dataset, D, off_the_shelf, paper_off_the_shelf, baglm, paper_baglm, gain,
        paper_gain, gain_difference``, then with ``diagnostic`` ``D_diagnostic,
        baglm_diagnostic, gain_diagnostic``, then ``videos, source`` (R@1 in percent, gains in
        points, ``gain_difference`` = workbench gain - paper gain); items and sources of the
        main table(s).
    """
    observations = list(observations)
    main = main_results_table(observations, deps)
    second = main_results_table(observations, diagnostic) if diagnostic is not None else None
    rows = []
    for name, part in main.frame.groupby("dataset", sort=False):
        by = part.set_index("method")
        bag, off = by.loc[METHOD_NAMES["baglm"]], by.loc[METHOD_NAMES["off_the_shelf"]]
        key = dataset_key(name)
        p_bag, p_off = paper_value("baglm", key), paper_value("off_the_shelf", key)
        gain, p_gain = round(bag["workbench"] - off["workbench"], 1), round(p_bag - p_off, 1)
        row = {
            "dataset": name,
            "D": bag["D"],
            "off_the_shelf": off["workbench"],
            "paper_off_the_shelf": p_off,
            "baglm": bag["workbench"],
            "paper_baglm": p_bag,
            "gain": gain,
            "paper_gain": p_gain,
            "gain_difference": round(gain - p_gain, 1),
        }
        if second is not None:
            other = second.frame[second.frame["dataset"] == name].set_index("method")
            alt = other.loc[METHOD_NAMES["baglm"]]
            row["D_diagnostic"] = alt["D"]
            row["baglm_diagnostic"] = alt["workbench"]
            row["gain_diagnostic"] = round(alt["workbench"] - off["workbench"], 1)
        row.update({"videos": int(bag["videos"]), "source": bag["source"]})
        rows.append(row)
    both = [main] if second is None else [main, second]
    return ResultTable.concat(both).with_frame(pd.DataFrame(rows))


def gain_bars(gains: pd.DataFrame) -> pd.DataFrame:
    """:func:`gain_table` in the row shape of :func:`~baglm_nb.analyses.plots.results_bars`.

    One row per dataset and D (``method`` = ``gain, D = <label>``): ``workbench`` is the gain,
    ``paper`` the paper's gain.
    """
    rows = []
    for row in gains.to_dict("records"):
        pairs = [(row["D"], row["gain"])]
        if "D_diagnostic" in row:
            pairs.append((row["D_diagnostic"], row["gain_diagnostic"]))
        for label, gain in pairs:
            rows.append(
                {
                    "dataset": row["dataset"],
                    "method": f"gain, D = {label}",
                    "workbench": gain,
                    "paper": row["paper_gain"],
                    "videos": row["videos"],
                    "source": row["source"],
                    "D": label,
                }
            )
    return pd.DataFrame(rows)


def order_of(values: Mapping[str, float]) -> str:
    """The variants from lowest to highest R@1, ``<`` between them (``=`` on equal values)."""
    ranked = sorted(values.items(), key=lambda kv: (kv[1], VARIANTS.index(kv[0])))
    text = ranked[0][0]
    for (_, before), (name, value) in zip(ranked, ranked[1:], strict=False):
        text += f" {'=' if value == before else '<'} {name}"
    return text


def _pattern(values: Mapping[str, float]) -> bool:
    """The paper's pattern: static below readiness and validity, both above them."""
    middle = (values["readiness"], values["validity"])
    return bool(values["static"] < min(middle) and max(middle) < values["both"])


def transition_pattern_table(
    observations: Iterable[Observations], deps: sources.DependencySource = sources.SIMULATED_LLM
) -> ResultTable:
    """The transition ablation per dataset, its order and the paper's pattern, both sides.

    Returns
    -------
    ResultTable
        One row per dataset: ``dataset, D, off_the_shelf``, the four variants' R@1
        (workbench), the paper's (``paper_<variant>``), ``order`` and ``paper_order``
        (:func:`order_of`), ``pattern`` and ``paper_pattern`` (whether ``static < readiness,
        validity < both``; None where the paper has no row), ``videos, source``; items and
        sources of the transition table.
    """
    table = transition_table(observations, deps)
    rows = []
    for name, part in table.frame.groupby("dataset", sort=False):
        by = part.set_index("method")
        ours = {v: float(by.loc[v, "workbench"]) for v in VARIANTS}
        paper = {v: float(by.loc[v, "paper"]) for v in VARIANTS}
        has_paper = not any(np.isnan(x) for x in paper.values())
        row: dict[str, Any] = {
            "dataset": name,
            "D": by["D"].iloc[0],
            "off_the_shelf": by["off_the_shelf"].iloc[0],
        }
        row.update(ours)
        row.update({f"paper_{v}": paper[v] for v in VARIANTS})
        row.update(
            {
                "order": order_of(ours),
                "paper_order": order_of(paper) if has_paper else None,
                "pattern": _pattern(ours),
                "paper_pattern": _pattern(paper) if has_paper else None,
                "videos": int(by["videos"].iloc[0]),
                "source": by["source"].iloc[0],
            }
        )
        rows.append(row)
    return table.with_frame(pd.DataFrame(rows))


def held_out_of(deps: sources.DependencySource) -> str | None:
    """The held-out variant of a ``simulated-llm`` setting (None for any other setting)."""
    if not isinstance(deps, str) or not deps.startswith(simulate_deps.PREFIX):
        return None
    if deps.endswith(f":{simulate_deps.HELD_OUT}"):
        return None
    preset = deps.partition(":")[2] or "llama"
    return simulate_deps.label(preset, held_out=True)


def simulation_check(
    datasets: Iterable[str] = tuple(DATASETS),
    *,
    scores: sources.ObservationSource = sources.SIMULATED,
    deps: sources.DependencySource = sources.SIMULATED_LLM,
    limit: int | None = None,
    transition_datasets: Iterable[str] | None = None,
) -> tuple[ResultTable, ResultTable]:
    """``(gain_table, transition_pattern_table)`` on ``scores`` (default: simulated).

    With a ``simulated-llm`` D, its held-out variant (:func:`held_out_of`) is the diagnostic
    of the gain table and adds its rows to the pattern table. The transition check runs on
    the datasets of the paper's ablation (those of ``transition_datasets`` in ``datasets``;
    default: the datasets with a paper value for every transition variant).
    """
    if transition_datasets is None:
        transition_datasets = [d for d in DATASETS if all(d in PAPER.get(v, {}) for v in VARIANTS)]
    datasets = list(datasets)
    observed = sources.observations_for(datasets, scores, limit=limit)
    ablated = [o for o in observed if o.dataset in set(transition_datasets)]
    diagnostic = held_out_of(deps)
    gains = gain_table(observed, deps, diagnostic=diagnostic)
    patterns = [transition_pattern_table(ablated, d) for d in (deps, diagnostic) if d and ablated]
    return gains, ResultTable.concat(patterns)


#: The groups of out-of-sample numbers of :func:`twin_check`, in display order.
CHECK_GROUPS: tuple[str, ...] = ("R@1 gain", "mAP gain", "transition", "oracle")

#: The group whose mean absolute error picks the default twin (:func:`default_twin_of`):
#: BaGLM's R@1 gain on the four datasets, the paper's headline result.
RULE_GROUP = "R@1 gain"

#: The oracle rows checked (the first, LLM D with the LMM's progress, is BaGLM's own row).
_ORACLE_CHECKED = tuple((method, key) for method, key, _, _ in ORACLE_ROWS[1:])
#: The transition rows checked (the full transition is BaGLM's own row, in the R@1-gain group).
_TRANSITIONS_CHECKED = tuple(v for v in VARIANTS if not TRANSITION_SPECS[v].is_full)
_MAP_TIOUS = ("@0.3", "@0.5", "@0.7")


def _check_row(twin: str, group: str, dataset: str, number: str, ours: float, paper: float):
    return {
        "twin": twin,
        "group": group,
        "dataset": dataset,
        "number": number,
        "simulated": round(float(ours), 1),
        "paper": round(float(paper), 1),
        "error": round(abs(float(ours) - float(paper)), 1),
    }


def _gain_rows(
    twin: str, observed: list[Observations], deps: sources.DependencySource
) -> list[dict]:
    rows = []
    for row in gain_table(observed, deps).frame.itertuples():
        rows.append(_check_row(twin, "R@1 gain", row.dataset, "BaGLM", row.gain, row.paper_gain))
    return rows


def _variant_rows(
    twin: str, observed: list[Observations], deps: sources.DependencySource
) -> list[dict]:
    """Transition and oracle rows with a paper value: gain over the off-the-shelf R@1."""
    with_paper = [o for o in observed if not np.isnan(paper_value("static", o.dataset))]
    if not with_paper:
        return []
    rows = []
    parts = (
        ("transition", transition_table(with_paper, deps), _TRANSITIONS_CHECKED),
        ("oracle", oracle_table(with_paper, deps), [m for m, _ in _ORACLE_CHECKED]),
    )
    keys = dict(_ORACLE_CHECKED)
    for group, table, methods in parts:
        for row in table.frame.itertuples():
            if row.method not in methods or pd.isna(row.workbench):
                continue
            key = dataset_key(row.dataset)
            p_off = paper_value("off_the_shelf", key)
            gain = row.workbench - row.off_the_shelf
            paper_gain = paper_value(keys.get(row.method, row.method), key) - p_off
            rows.append(_check_row(twin, group, row.dataset, row.method, gain, paper_gain))
    return rows


def _map_rows(
    twin: str, observed: list[Observations], deps: sources.DependencySource
) -> list[dict]:
    """HT-Step mAP gain (BaGLM - off-the-shelf) per tIoU beside the paper's (InternVL2.5-8B)."""
    from baglm_nb.analyses.localization import localization_table

    rows = []
    for obs in observed:
        if obs.dataset != PAPER_LOCALIZATION_DATASET:
            continue
        frame = localization_table(obs, deps).frame
        computed = frame[frame["videos"].notna()].set_index("method")
        off, bag = computed.loc["off-the-shelf LMM"], computed.loc["+ BaGLM"]
        paper = PAPER_LOCALIZATION[paper_model(obs.label)]
        name = DATASET_NAMES.get(obs.dataset, obs.dataset)
        for k in _MAP_TIOUS:
            p_gain = paper["baglm"][k] - paper["off_the_shelf"][k]
            rows.append(_check_row(twin, "mAP gain", name, f"mAP {k}", bag[k] - off[k], p_gain))
    return rows


def twin_check(
    datasets: Iterable[str] = tuple(DATASETS),
    twins: Iterable[str] | None = None,
    *,
    deps: sources.DependencySource = sources.SIMULATED_LLM,
    limit: int | None = None,
    groups: Iterable[str] = CHECK_GROUPS,
) -> ResultTable:
    """Both simulated twins against every BaGLM number of the paper neither was fitted on.

    For each twin (default both, :data:`~baglm_nb.core.simulate.TWINS`), on its simulated
    observations (``simulated:<twin>``) of ``datasets`` (the first ``limit`` videos), with
    ``deps``: BaGLM's R@1 gain per dataset (group ``R@1 gain``), its HT-Step mAP gain at tIoU
    0.3 / 0.5 / 0.7 (``mAP gain``; the paper's InternVL2.5-8B row), the transition ablation's
    static, readiness and validity rows (``transition``) and the three oracle rows
    (``oracle``), each as a gain in points over the twin's off-the-shelf R@1 beside the
    paper's gain over its off-the-shelf row. The off-the-shelf numbers are the fitted ones, so
    a gain's error is the BaGLM row's error. ``groups`` keeps some of the groups only (e.g.
    ``[RULE_GROUP]``, what :func:`default_twin_of` reads).

    Returns
    -------
    ResultTable
        ``twin, group, dataset, number, simulated, paper, error`` (points; ``error`` =
        ``|simulated - paper|``), no items; summarise with :func:`twin_errors`.
    """
    from baglm_nb.core.simulate import TWINS

    datasets, groups = list(datasets), set(groups)
    unknown = groups - set(CHECK_GROUPS)
    if unknown:
        raise ValueError(f"unknown check groups {sorted(unknown)}; groups: {CHECK_GROUPS}")
    rows: list[dict] = []
    for twin in TWINS if twins is None else twins:
        setting = f"{sources.SIMULATED}:{twin}"
        observed = sources.observations_for(datasets, setting, limit=limit)
        if RULE_GROUP in groups:
            rows += _gain_rows(twin, observed, deps)
        if "mAP gain" in groups:
            rows += _map_rows(twin, observed, deps)
        if groups & {"transition", "oracle"}:
            rows += [r for r in _variant_rows(twin, observed, deps) if r["group"] in groups]
    frame = pd.DataFrame(rows)
    order = {g: i for i, g in enumerate(CHECK_GROUPS)}
    frame = frame.sort_values(
        ["twin", "group"], key=lambda c: c.map(order) if c.name == "group" else c, kind="stable"
    ).reset_index(drop=True)
    deps_label = sources.label_of(deps)
    return ResultTable.of(frame, observations=["simulated"], dependencies=[deps_label])


def twin_errors(check: pd.DataFrame) -> pd.DataFrame:
    """Each twin's mean absolute error (points) per group of :func:`twin_check`, and overall.

    One row per twin: ``twin``, one column per group present (``<group> MAE``, with the
    number of values in ``<group> n``), ``mean of groups`` (each group counts once, so the
    nine oracle and transition rows do not outweigh the four R@1 gains), ``all values`` (the
    plain mean over every value) and ``smaller error`` (the twin with the smaller
    ``<RULE_GROUP> MAE``, the rule that picks the default twin: :func:`default_twin_of`).
    """
    rows = []
    for twin, part in check.groupby("twin", sort=False):
        row: dict[str, Any] = {"twin": twin}
        means = []
        for group in CHECK_GROUPS:
            errors = part.loc[part["group"] == group, "error"]
            if len(errors):
                row[f"{group} MAE"] = round(float(errors.mean()), 2)
                row[f"{group} n"] = len(errors)
                means.append(float(errors.mean()))
        row["mean of groups"] = round(float(np.mean(means)), 2)
        row["all values"] = round(float(part["error"].mean()), 2)
        rows.append(row)
    frame = pd.DataFrame(rows)
    rule = f"{RULE_GROUP} MAE"
    frame["smaller error"] = frame[rule] == frame[rule].min()
    return frame


def default_twin_of(errors: pd.DataFrame) -> str:
    """The twin that ``"simulated"`` should be, from :func:`twin_errors`: the one with the
    smaller mean absolute error on :data:`RULE_GROUP` (a tie goes to the first row)."""
    rule = f"{RULE_GROUP} MAE"
    if rule not in errors.columns:
        raise ValueError(f"twin errors without {rule!r}: the check needs BaGLM's R@1 gains")
    return str(errors.loc[errors[rule].idxmin(), "twin"])


def twin_error_bars(errors: pd.DataFrame) -> pd.DataFrame:
    """:func:`twin_errors` in the row shape of :func:`~baglm_nb.analyses.plots.results_bars`.

    One row per (group, twin): ``dataset`` is the group, ``method`` the twin, ``workbench`` its
    mean absolute error (points); ``paper`` is 0 (the paper has no error).
    """
    rows = []
    for row in errors.to_dict("records"):
        for group in (*CHECK_GROUPS, "mean of groups"):
            key = group if group == "mean of groups" else f"{group} MAE"
            if key in row and not pd.isna(row[key]):
                rows.append(
                    {
                        "dataset": group,
                        "method": f"twin {row['twin']}",
                        "workbench": row[key],
                        "paper": np.nan,
                        "videos": None,
                        "source": "simulated",
                        "D": None,
                    }
                )
    return pd.DataFrame(rows)
