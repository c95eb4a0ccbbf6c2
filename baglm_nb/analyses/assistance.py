"""Assistance: accuracy against latency (fixed-lag smoothing), and one video's timeline.

What notebook ``09_assistance`` shows, as tables and figures:

- :func:`lag_table`: per dataset and smoothing lag (0, 1, 2, 4, 8, 16 segments, inf), BaGLM's
  R@1 and online metrics (:mod:`baglm_nb.core.online_metrics`: per-second accuracy,
  announcement precision / recall / F1, delay, flicker) beside the off-the-shelf model's (raw
  scores: no smoothing, the same at every lag); rows built by
  :func:`~baglm_nb.analyses.tables.result_row` (``workbench`` = R@1 in percent), with their
  (video, step) items;
- :func:`lag_lines`: per-second and step-row accuracy, announcement F1 and R@1 against the
  lag, one column per dataset;
- :func:`timeline`: one video's filter and smoothed beliefs over time, with the ground truth,
  each one's announcements and the alerts ``follow`` raises on it (:mod:`baglm_nb.core.alerts`);
- :func:`correlated_observations`: the simulated observations with temporally correlated noise
  (``noise_corr``), to draw the curves again where smoothing is not flattered by independent
  noise.

Exports :data:`LAGS`, :data:`CURVE_METRICS`, :func:`lag_label`, :func:`lag_table`,
:func:`lag_lines`, :func:`timeline_data`, :func:`timeline` and
:func:`correlated_observations`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from baglm_nb.analyses.alerts import video_alerts
from baglm_nb.analyses.belief_data import runs
from baglm_nb.analyses.belief_views import step_colours
from baglm_nb.analyses.palette import WORKBENCH, colour
from baglm_nb.analyses.result_table import ResultTable
from baglm_nb.analyses.tables import (
    METHOD_NAMES,
    NOT_USED,
    pair_items,
    require_dependencies,
    result_row,
    score,
    score_raw,
)
from baglm_nb.core import sources
from baglm_nb.core.observations import Observations
from baglm_nb.core.online_metrics import METRIC_KEYS, announcements, measure, truth_states
from baglm_nb.core.pipeline import run_baglm
from baglm_nb.core.simulate import default_params

__all__ = [
    "CURVE_METRICS",
    "LAGS",
    "correlated_observations",
    "lag_view",
    "lag_label",
    "lag_lines",
    "lag_table",
    "timeline",
    "timeline_data",
]

#: The smoothing lags of the curve, in segments (None: the offline smoother, L = inf).
LAGS: tuple[int | None, ...] = (0, 1, 2, 4, 8, 16, None)

#: The columns :func:`lag_lines` draws, with their axis labels.
CURVE_METRICS = {
    "frame_accuracy": "per-second accuracy",
    "frame_accuracy_on_steps": "step-row accuracy",
    "announce_f1": "announcement F1",
    "workbench": "R@1 (%)",
}


def lag_label(lag: int | None) -> str:
    """A lag in segments as text: the number, or ``inf``."""
    return "inf" if lag is None else str(int(lag))


def _rounded(metrics: dict) -> dict:
    return {k: round(float(metrics[k]), 3) for k in METRIC_KEYS}


def lag_table(
    observations: Sequence[Observations],
    deps: sources.DependencySource,
    lags: Sequence[int | None] = LAGS,
    *,
    threshold: float = 0.5,
    patience: int = 2,
) -> ResultTable:
    """R@1 and the online metrics of BaGLM at each smoothing lag, and of the off-the-shelf model.

    Columns: ``dataset``, ``method``, ``workbench`` (R@1 %), ``paper`` (NaN: no paper number),
    ``videos``, ``source``, ``lag`` (segments, ``inf``), ``lag_s`` (seconds; NaN for inf),
    the :data:`~baglm_nb.core.online_metrics.METRIC_KEYS`, ``threshold``, ``patience`` and
    ``D``. The off-the-shelf rows repeat one measurement at every lag (no smoothing).
    """
    rows, items = [], []
    opts = {"threshold": threshold, "patience": patience}
    for obs in observations:
        d = obs.segment_duration
        resolved = require_dependencies(deps, obs.dataset)
        raw = score_raw(obs)
        raw_metrics = _rounded(
            measure(obs.dataset, obs.videos, obs.vsg, scores=True, segment_duration=d, **opts)
        )
        for lag in lags:
            lag_s = None if lag is None else int(lag) * d
            beliefs = run_baglm(obs, resolved, smoothing_lag=lag_s)
            scored = score(obs.dataset, beliefs, obs.videos)
            metrics = _rounded(
                measure(obs.dataset, obs.videos, beliefs, segment_duration=d, lag_s=lag_s, **opts)
            )
            extra = {"lag": lag_label(lag), "lag_s": math.nan if lag_s is None else lag_s}
            for method, s, m, dep in (
                ("baglm", scored, metrics, resolved.label),
                ("off_the_shelf", raw, raw_metrics, NOT_USED),
            ):
                name = METHOD_NAMES[method]
                rows.append(
                    result_row(
                        obs.dataset,
                        name,
                        s,
                        math.nan,
                        source=obs.label,
                        **extra,
                        **m,
                        **opts,
                        D=dep,
                    )
                )
                items.append(
                    pair_items(
                        s.hits, dataset=obs.dataset, method=name, source=obs.label, lag=extra["lag"]
                    )
                )
    labels = [obs.label for obs in observations]
    return ResultTable.of(pd.DataFrame(rows), items, observations=labels)


#: The columns of :func:`lag_view`: what notebook 09 shows of :func:`lag_table`.
VIEW_COLUMNS = (
    "dataset",
    "method",
    "lag",
    "workbench",
    *(k for k in METRIC_KEYS if k != "delay_p90_s"),
)


def lag_view(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`lag_table`'s rows with the columns a reader compares (:data:`VIEW_COLUMNS`;
    R@1 in ``workbench``), narrow enough for a page; the file keeps every column."""
    return table.loc[:, [c for c in VIEW_COLUMNS if c in table.columns]]


def lag_lines(table: pd.DataFrame, title: str):
    """Per-second and step-row accuracy, announcement F1 and R@1 against the lag, per dataset.

    ``table`` comes from :func:`lag_table`: BaGLM with dots, the off-the-shelf model with squares
    (flat: no smoothing), both solid (workbench numbers) in their palette hues
    (:mod:`baglm_nb.analyses.palette`); the x axis is the lag in segments, ``inf`` last.
    """
    datasets = list(dict.fromkeys(table["dataset"]))
    lags = list(dict.fromkeys(table["lag"]))
    size = (0.8 + 3.3 * len(datasets), 2.3 * len(CURVE_METRICS))
    fig, axes = plt.subplots(len(CURVE_METRICS), len(datasets), squeeze=False, figsize=size)
    x = np.arange(len(lags))
    for col, name in enumerate(datasets):
        sub = table[table["dataset"] == name]
        for row, (metric, label) in enumerate(CURVE_METRICS.items()):
            ax = axes[row, col]
            for key, marker in (("baglm", "o"), ("off_the_shelf", "s")):
                method = METHOD_NAMES[key]
                m = sub[sub["method"] == method].set_index("lag").reindex(lags)
                ax.plot(
                    x,
                    m[metric].to_numpy(float),
                    marker=marker,
                    linestyle=WORKBENCH,
                    color=colour(method),
                    label=method,
                    markersize=4,
                )
            ax.set_xticks(x, lags)
            if row == 0:
                ax.set_title(name, fontsize=9)
            if row == len(CURVE_METRICS) - 1:
                ax.set_xlabel("smoothing lag (segments)")
            if col == 0:
                ax.set_ylabel(label, fontsize=8)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=2)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout(rect=(0, 0.05, 1, 0.95))
    return fig


def timeline_data(
    obs: Observations,
    deps: sources.DependencySource,
    uid: str,
    lag: int,
    *,
    threshold: float = 0.5,
    patience: int = 2,
) -> dict[str, Any]:
    """One video's filter and fixed-lag (``lag`` segments) beliefs, truth and announcements.

    Returns ``{"video", "lag", "filter", "smoothed", "alerts"}``: the first two a dict with
    ``beliefs`` (T, K+1), ``said`` (the announced state per row, K before the first) and
    ``metrics`` (the video's online metrics); ``alerts`` the alerts ``follow`` raises on the
    filter's announcements (:func:`~baglm_nb.analyses.alerts.video_alerts`, alert threshold 0.5).
    """
    video = next((v for v in obs.videos if v.uid == uid), None)
    if video is None:
        raise ValueError(f"video {uid!r} is not in the {obs.dataset} observations")
    resolved = require_dependencies(deps, obs.dataset)
    d = obs.segment_duration
    out: dict[str, Any] = {"video": video, "lag": int(lag)}
    for name, lag_s in (("filter", 0), ("smoothed", int(lag) * d)):
        b = run_baglm(obs, resolved, videos=[video], smoothing_lag=lag_s)[uid]
        said_at = announcements(b[d - 1 :: d], threshold, patience)
        said = np.full(len(b) // d, video.num_steps, dtype=np.int64)
        for s, state in said_at:
            said[s:] = state
        metrics = measure(
            obs.dataset,
            [video],
            {uid: b},
            segment_duration=d,
            lag_s=lag_s,
            threshold=threshold,
            patience=patience,
        )
        out[name] = {"beliefs": b, "said": np.repeat(said, d), "metrics": metrics}
    out["alerts"] = video_alerts(
        video,
        obs.vsg[uid][::d],
        obs.progress[uid][::d],
        resolved.matrix(video),
        hysteresis=(threshold, patience),
        segment_duration=d,
    )
    return out


def _draw_alerts(ax, alerts: Sequence) -> None:
    """The alerts on a strip: a black triangle (missing prerequisite) or square (skipped) at
    each alert's time, numbered with the missing step."""
    for a in alerts:
        marker = "v" if a.kind == "missing_prerequisite" else "s"
        ax.plot(a.t, 0.5, marker=marker, markersize=7, color="black", markeredgecolor="white")
        ax.annotate(
            str(a.missing + 1),
            (a.t, 0.5),
            xytext=(5, 0),
            textcoords="offset points",
            fontsize=7,
            va="center",
            color="black",
        )


def timeline(data: dict[str, Any], title: str):
    """Filter and smoothed beliefs (heatmaps, none last) above three strips: the ground truth
    and each one's announced state (grey: none or nothing yet), on one time axis."""
    video = data["video"]
    k = video.num_steps
    filt, smooth = data["filter"], data["smoothed"]
    t_len = len(filt["beliefs"])
    palette = np.vstack([step_colours(k)[:, :3], [[0.85, 0.85, 0.85]]])
    fig, axes = plt.subplots(
        5,
        1,
        figsize=(11, 3.0 + 0.45 * k),
        sharex=True,
        gridspec_kw={"height_ratios": [k + 1, k + 1, 1, 1, 1]},
    )
    extent = (0, t_len, k + 0.5, -0.5)
    names = ["filter (lag 0)", f"smoothed (lag {data['lag']} segments)"]
    for ax, part, name in zip(axes[:2], (filt, smooth), names, strict=True):
        ax.imshow(
            part["beliefs"].T,
            aspect="auto",
            cmap="Blues",
            vmin=0,
            vmax=1,
            extent=extent,
            interpolation="nearest",
        )
        m = part["metrics"]
        ax.set_yticks(range(k + 1), [*(str(i + 1) for i in range(k)), "none"], fontsize=6)
        ax.set_title(
            f"{name}: per-second accuracy {m['frame_accuracy']:.2f} (step rows "
            f"{m['frame_accuracy_on_steps']:.2f}), announcement "
            f"F1 {m['announce_f1']:.2f}, flicker {m['flicker_per_min']:.1f}/min",
            fontsize=8,
            loc="left",
        )
    strips = (
        ("ground truth", truth_states(video, t_len)),
        ("announced: filter", filt["said"]),
        ("announced: smoothed", smooth["said"]),
    )
    for ax, (name, states) in zip(axes[2:], strips, strict=True):
        ax.imshow(
            palette[np.asarray(states)][None],
            aspect="auto",
            extent=(0, t_len, 1, 0),
            interpolation="nearest",
        )
        ax.set_yticks([0.5], [name], fontsize=8)
        for start, length, state in runs(np.asarray(states)):
            if state < k and length >= t_len / 60:  # number the runs wide enough to read
                ax.text(
                    start + length / 2,
                    0.5,
                    str(state + 1),
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white",
                )
    alerts = data.get("alerts") or []
    _draw_alerts(axes[3], alerts)
    if alerts:
        axes[3].set_title(
            "\u25bc missing prerequisite, \u25a0 skipped (number: the missing step)",
            fontsize=7,
            loc="right",
        )
    axes[-1].set_xlabel("time (s); step numbers as in the task's step list")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def correlated_observations(
    datasets: Sequence[str], noise_corr: float, *, limit: int | None = None
) -> list[Observations]:
    """The simulated observations of ``datasets`` with each dataset's calibrated signal and
    temporally correlated noise (``noise_corr``: the AR(1) coefficient across segments,
    ``docs/alerts.md``; no paper number pins it)."""
    return [
        sources.observations(
            name, "simulated", limit=limit, params=default_params(name, noise_corr=noise_corr)
        )
        for name in datasets
    ]
