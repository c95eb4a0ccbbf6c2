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

Both are built from :func:`~baglm_nb.analyses.results.main_results_table` and
:func:`~baglm_nb.analyses.results.transition_table` (one place per number) and keep their
items. ``python -m baglm_nb sim-check`` prints them (:func:`simulation_check`).

With the simulated LLM's D, a diagnostic column repeats the gain with its *held-out* variant
(:mod:`baglm_nb.core.simulate_deps`: evidence from the group's other videos only), which shows
how much of a departure comes from the simulated LLM having "seen" the evaluated video.

Exports :func:`gain_table` with :func:`gain_bars`, :func:`transition_pattern_table`,
:func:`order_of`, :func:`held_out_of` and :func:`simulation_check`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from baglm_nb.analyses.result_table import ResultTable
from baglm_nb.analyses.results import main_results_table, transition_table
from baglm_nb.analyses.tables import DATASET_NAMES, METHOD_NAMES
from baglm_nb.core import simulate_deps, sources
from baglm_nb.core.observations import Observations
from baglm_nb.inputs.datasets import DATASETS
from baglm_nb.inputs.paper import PAPER, paper_value
from baglm_nb.inputs.variants import TRANSITIONS

__all__ = [
    "gain_bars",
    "gain_table",
    "held_out_of",
    "order_of",
    "simulation_check",
    "transition_pattern_table",
]

#: The transition variants, in the order of the paper's table.
VARIANTS = TRANSITIONS

_KEYS = {v: k for k, v in DATASET_NAMES.items()}


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
        key = _KEYS.get(str(name), str(name))
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
    patterns = [transition_pattern_table(ablated, d) for d in (deps, diagnostic) if d]
    return gains, ResultTable.concat(patterns if ablated else [])
