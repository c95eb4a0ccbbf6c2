"""``stay`` judged, and ``follow``'s announcement defaults re-chosen: beyond the paper.

The filter's ``stay`` S (:func:`baglm_nb.core.filtering.run_filter`) mixes every transition row
with staying, ``T' = (1 - S) T + S I``; 0 is the paper. Whether it helps depends on how long
the observations' mistakes last, which no real model has measured here, so the sweep runs on
each given observation setting (a "twin": ``"simulated"``, or a score cache) side by side:

- :func:`stay_table`: per (twin, dataset, S), BaGLM's R@1 and the online metrics
  (:mod:`baglm_nb.core.online_metrics`: per-second and step-row accuracy, announcement F1,
  flicker beside the ground truth's, delay), with one off-the-shelf row per (twin, dataset)
  (``stay`` NaN: the raw scores have no filter);
- :func:`stay_lines`: those metrics against S, one column per dataset, one line per twin;
- :func:`announcement_grid`: ``follow``'s announcement settings (threshold, patience,
  smoothing lag) swept on one dataset's observations;
- :func:`choose_announcement`: the grid's setting with the best announcement F1 among those
  with a median delay of at most ``max_delay_s`` (chosen on one dataset, then reported unchanged
  on the others with :func:`announcement_table`). The choice on HT-Step is ``follow``'s default
  (:data:`FOLLOW_ANNOUNCEMENT`, :mod:`baglm_nb.inputs.follow_defaults`), reported beside the
  defaults before it (:data:`PREVIOUS_ANNOUNCEMENT`).

Exports :data:`STAYS`, :data:`SWEEP_METRICS`, :data:`FOLLOW_ANNOUNCEMENT`,
:data:`PREVIOUS_ANNOUNCEMENT`, :data:`MAX_DELAY_S`,
:func:`stay_table`, :func:`stay_view`, :func:`stay_lines`, :func:`announcement_grid`,
:func:`choose_announcement` and :func:`announcement_table`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from baglm_nb.analyses.display import axis_label, in_percent
from baglm_nb.analyses.palette import REFERENCE, WORKBENCH, colour, colours
from baglm_nb.analyses.result_table import ResultTable
from baglm_nb.analyses.tables import (
    METHOD_NAMES,
    NOT_USED,
    Scored,
    pair_items,
    require_dependencies,
    result_row,
    score,
    score_raw,
)
from baglm_nb.core import sources
from baglm_nb.core.observations import Observations
from baglm_nb.core.online_metrics import measure, online_keys
from baglm_nb.core.pipeline import run_baglm
from baglm_nb.inputs.follow_defaults import (
    FOLLOW_ANNOUNCEMENT,
    MAX_DELAY_S,
    PREVIOUS_ANNOUNCEMENT,
)

__all__ = [
    "FOLLOW_ANNOUNCEMENT",
    "MAX_DELAY_S",
    "PREVIOUS_ANNOUNCEMENT",
    "STAYS",
    "SWEEP_METRICS",
    "announcement_grid",
    "announcement_table",
    "choose_announcement",
    "stay_lines",
    "stay_table",
    "stay_view",
]

#: The stays of the sweep (0: the paper's filter).
STAYS: tuple[float, ...] = (0.0, 0.5, 0.8, 0.9, 0.93, 0.96)

#: The columns :func:`stay_lines` draws, with their axis labels
#: (:func:`~baglm_nb.analyses.display.axis_label`).
SWEEP_METRICS = {
    k: axis_label(k)
    for k in (
        "workbench",
        "frame_accuracy",
        "frame_accuracy_on_steps",
        "announce_f1",
        "flicker_per_min",
        "delay_median_s",
    )
}

#: The :data:`SWEEP_METRICS` stored as fractions, drawn in percent (one unit with R@1).
PERCENT_OF_FRACTION = tuple(k for k in SWEEP_METRICS if in_percent(k))


def _rounded(metrics: Mapping[str, float]) -> dict[str, float]:
    return {k: round(float(metrics[k]), 3) for k in online_keys()}


def stay_table(
    twins: Sequence[sources.ObservationSource],
    datasets: Sequence[str],
    deps: sources.DependencySource,
    stays: Sequence[float] = STAYS,
    *,
    limit: int | None = None,
    threshold: float = 0.5,
    patience: int = 2,
) -> ResultTable:
    """R@1 and the online metrics of BaGLM at each stay, per twin and dataset.

    ``twins`` are observation settings (:func:`baglm_nb.core.sources.observations`: a named
    one such as ``"simulated"``, a score-cache folder or ``{dataset: ...}``); each is read for
    every dataset of ``datasets`` (the first ``limit`` videos). Columns: ``dataset``,
    ``method``, ``workbench`` (R@1 %), ``paper`` (NaN), ``videos``, ``source`` (the
    observations' label), ``twin`` (what the sweep compares: :func:`twin_name`), ``stay``, the
    :func:`~baglm_nb.core.online_metrics.online_keys`, ``threshold``, ``patience`` and ``D``.
    The off-the-shelf model gets one row per (twin, dataset) with ``stay`` NaN.
    """
    rows, items, labels = [], [], []
    opts = {"threshold": threshold, "patience": patience}
    for twin in twins:
        for name in datasets:
            obs = sources.observations(name, twin, limit=limit)
            labels.append(obs.label)
            resolved = require_dependencies(deps, obs.dataset)
            common = {"source": obs.label, "twin": twin_name(twin, obs.label)}
            for row, item in _sweep(obs, resolved, stays, common, opts):
                rows.append(row)
                items.append(item)
    return ResultTable.of(pd.DataFrame(rows), items, observations=labels)


def _sweep(
    obs: Observations,
    resolved: sources.Dependencies,
    stays: Sequence[float],
    common: Mapping[str, Any],
    opts: Mapping[str, Any],
) -> Iterator[tuple[dict, pd.DataFrame]]:
    """One twin on one dataset: ``(row, items)`` of the off-the-shelf model (``stay`` NaN),
    then of BaGLM at each stay; ``common`` (source, twin) and ``opts`` (threshold, patience)
    go into every row."""
    d = obs.segment_duration
    off = score_raw(obs)
    metrics = measure(obs.dataset, obs.videos, obs.vsg, scores=True, segment_duration=d, **opts)
    yield _sweep_row(obs, "off_the_shelf", off, metrics, common, opts, math.nan, NOT_USED)
    for stay in stays:
        beliefs = run_baglm(obs, resolved, stay=float(stay))
        scored = score(obs.dataset, beliefs, obs.videos)
        metrics = measure(obs.dataset, obs.videos, beliefs, segment_duration=d, **opts)
        yield _sweep_row(obs, "baglm", scored, metrics, common, opts, float(stay), resolved.label)


def _sweep_row(
    obs: Observations,
    key: str,
    scored: Scored,
    metrics: Mapping[str, float],
    common: Mapping[str, Any],
    opts: Mapping[str, Any],
    stay: float,
    d_label: str,
) -> tuple[dict, pd.DataFrame]:
    """One :func:`stay_table` row of method ``key`` (``baglm`` / ``off_the_shelf``) and its
    (video, step) items (with ``stay`` where it is a number)."""
    method = METHOD_NAMES[key]
    row = result_row(
        obs.dataset,
        method,
        scored,
        math.nan,
        **common,
        stay=stay,
        **_rounded(metrics),
        **opts,
        D=d_label,
    )
    at = {} if math.isnan(stay) else {"stay": stay}
    return row, pair_items(scored.hits, dataset=obs.dataset, method=method, **common, **at)


def twin_name(setting: sources.ObservationSource, label: str) -> str:
    """What the sweep calls an observation setting: a named one as written (``simulated:iid``
    and ``simulated:pinned`` share the label ``simulated``), else the observations' label."""
    if isinstance(setting, str) and not Path(setting).exists():
        return setting
    return label


#: The columns of :func:`stay_view`: what notebook 09 shows of :func:`stay_table`.
VIEW_COLUMNS = ("dataset", "twin", "method", "stay", *SWEEP_METRICS, "truth_flicker_per_min")


def stay_view(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`stay_table`'s rows with the columns a reader compares (:data:`VIEW_COLUMNS`:
    step-row accuracy beside per-second accuracy, flicker beside the ground truth's)."""
    return table.loc[:, [c for c in VIEW_COLUMNS if c in table.columns]]


def stay_lines(table: pd.DataFrame, title: str):
    """The :data:`SWEEP_METRICS` against the stay, one column per dataset (fractions drawn in
    percent, :data:`PERCENT_OF_FRACTION`, so that one figure has one unit per quantity).

    ``table`` comes from :func:`stay_table`: BaGLM solid with dots, one hue per twin
    (:func:`~baglm_nb.analyses.palette.colours`); the off-the-shelf model a dotted reference
    level in its hue (one per twin; no filter, so no stay); in the flicker row the ground
    truth's flicker as a dotted black level.
    """
    datasets = list(dict.fromkeys(table["dataset"]))
    twins = list(dict.fromkeys(table["twin"]))
    hue = colours(twins)
    off = METHOD_NAMES["off_the_shelf"]
    stays = sorted(set(table.loc[table["method"] != off, "stay"].astype(float)))
    x = np.arange(len(stays))  # evenly spaced: the stays crowd towards 1
    size = (0.8 + 3.3 * len(datasets), 2.0 * len(SWEEP_METRICS))
    fig, axes = plt.subplots(len(SWEEP_METRICS), len(datasets), squeeze=False, figsize=size)
    for col, name in enumerate(datasets):
        sub = table[table["dataset"] == name]
        for row, (metric, label) in enumerate(SWEEP_METRICS.items()):
            ax = axes[row, col]
            scale = 100.0 if metric in PERCENT_OF_FRACTION else 1.0
            for twin in twins:
                mine = sub[sub["twin"] == twin]
                baglm = mine[mine["method"] != off].set_index("stay").reindex(stays)
                ax.plot(
                    x,
                    scale * baglm[metric].to_numpy(float),
                    marker="o",
                    markersize=4,
                    linestyle=WORKBENCH,
                    color=hue[twin],
                    label=f"BaGLM, {twin}",
                )
                raw = mine[mine["method"] == off][metric].to_numpy(float)
                if len(raw) and np.isfinite(raw[0]):
                    ax.axhline(
                        scale * raw[0],
                        linestyle=REFERENCE,
                        color=colour(off),
                        label=f"{off}, {twin}" if len(twins) > 1 else off,
                    )
            if metric == "flicker_per_min" and len(sub):
                truth = float(sub["truth_flicker_per_min"].iloc[0])
                ax.axhline(truth, linestyle=REFERENCE, color="black", label="ground truth")
            ax.set_xticks(x, [f"{v:g}" for v in stays])
            if row == 0:
                ax.set_title(name, fontsize=9)
            if row == len(SWEEP_METRICS) - 1:
                ax.set_xlabel("stay S (beyond the paper; 0 = paper)", fontsize=8)
            if col == 0:
                ax.set_ylabel(label, fontsize=8)
            ax.tick_params(labelsize=7)
    seen: dict[str, Any] = {}
    for ax in axes.ravel():
        for handle, text in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(text, handle)
    fig.legend(list(seen.values()), list(seen), fontsize=8, loc="lower center", ncol=4)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout(rect=(0, 0.05, 1, 0.96))
    return fig


def announcement_grid(
    obs: Observations,
    deps: sources.DependencySource,
    *,
    thresholds: Sequence[float] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7),
    patiences: Sequence[int] = (1, 2, 3),
    lags: Sequence[int] = (0, 1, 2),
    stay: float = 0.0,
) -> pd.DataFrame:
    """The online metrics of every (threshold, patience, smoothing lag in segments) on ``obs``.

    One filter (or smoother) run per lag, then the announcements of every threshold and
    patience on its beliefs. Columns: ``threshold``, ``patience``, ``lag`` (segments),
    ``lag_s`` and the :func:`~baglm_nb.core.online_metrics.online_keys`.
    """
    resolved = require_dependencies(deps, obs.dataset)
    d = obs.segment_duration
    rows = []
    for lag in lags:
        lag_s = int(lag) * d
        beliefs = run_baglm(obs, resolved, smoothing_lag_s=lag_s, stay=stay)
        for threshold in thresholds:
            for patience in patiences:
                metrics = measure(
                    obs.dataset,
                    obs.videos,
                    beliefs,
                    segment_duration=d,
                    threshold=float(threshold),
                    patience=int(patience),
                    lag_s=lag_s,
                )
                rows.append(
                    {
                        "threshold": float(threshold),
                        "patience": int(patience),
                        "lag": int(lag),
                        "lag_s": lag_s,
                        **_rounded(metrics),
                    }
                )
    return pd.DataFrame(rows)


def choose_announcement(
    grid: pd.DataFrame, max_delay_s: float = MAX_DELAY_S
) -> tuple[float, int, int]:
    """The ``(threshold, patience, lag)`` of :func:`announcement_grid`'s row with the best
    announcement F1 among those whose median delay is at most ``max_delay_s``; ties go to the
    smaller lag, then the smaller patience, then the higher threshold (the more cautious).
    ``ValueError`` when no row meets the delay."""
    ok = grid[(grid["delay_median_s"] <= max_delay_s) & grid["announce_f1"].notna()]
    if ok.empty:
        raise ValueError(f"no announcement setting has a median delay <= {max_delay_s:g} s")
    best = ok.sort_values(
        ["announce_f1", "lag", "patience", "threshold"], ascending=[False, True, True, False]
    ).iloc[0]
    return float(best["threshold"]), int(best["patience"]), int(best["lag"])


def announcement_table(
    observations: Sequence[Observations],
    deps: sources.DependencySource,
    settings: Mapping[str, tuple[float, int, int]],
    *,
    stay: float = 0.0,
) -> ResultTable:
    """R@1 and the online metrics of BaGLM under each named announcement setting
    (``{name: (threshold, patience, lag in segments)}``, e.g. the chosen one beside
    :data:`PREVIOUS_ANNOUNCEMENT`) on every dataset of ``observations``.

    Columns: ``dataset``, ``method``, ``workbench`` (R@1 % of the smoothed beliefs), ``paper``
    (NaN), ``videos``, ``source``, ``setting``, ``threshold``, ``patience``, ``lag``, the
    :func:`~baglm_nb.core.online_metrics.online_keys` and ``D``.
    """
    rows, items = [], []
    method = METHOD_NAMES["baglm"]
    for obs in observations:
        resolved = require_dependencies(deps, obs.dataset)
        d = obs.segment_duration
        for setting, (threshold, patience, lag) in settings.items():
            lag_s = int(lag) * d
            beliefs = run_baglm(obs, resolved, smoothing_lag_s=lag_s, stay=stay)
            scored = score(obs.dataset, beliefs, obs.videos)
            metrics = measure(
                obs.dataset,
                obs.videos,
                beliefs,
                segment_duration=d,
                threshold=float(threshold),
                patience=int(patience),
                lag_s=lag_s,
            )
            extra = {"threshold": float(threshold), "patience": int(patience), "lag": int(lag)}
            rows.append(
                result_row(
                    obs.dataset,
                    method,
                    scored,
                    math.nan,
                    source=obs.label,
                    setting=setting,
                    **extra,
                    **_rounded(metrics),
                    D=resolved.label,
                )
            )
            items.append(
                pair_items(
                    scored.hits,
                    dataset=obs.dataset,
                    method=method,
                    source=obs.label,
                    setting=setting,
                )
            )
    labels = [obs.label for obs in observations]
    return ResultTable.of(pd.DataFrame(rows), items, observations=labels)
