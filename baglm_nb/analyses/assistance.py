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
:func:`lag_lines`, :func:`quality_text`, :func:`as_shown`, :func:`alert_levels`,
:func:`timeline_data`, :func:`timeline` and
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
from baglm_nb.analyses.display import axis_label, in_percent, quality_text
from baglm_nb.analyses.palette import WORKBENCH, colour, ink_on
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
from baglm_nb.core.online_metrics import (
    announcements,
    measure,
    online_keys,
    truth_states,
)
from baglm_nb.core.pipeline import run_baglm
from baglm_nb.core.simulate import default_params
from baglm_nb.inputs.grid import per_second

__all__ = [
    "CURVE_METRICS",
    "LAGS",
    "alert_levels",
    "as_shown",
    "correlated_observations",
    "lag_view",
    "lag_label",
    "lag_lines",
    "lag_table",
    "quality_text",
    "timeline",
    "timeline_data",
]

#: The smoothing lags of the curve, in segments (None: the offline smoother, L = inf).
LAGS: tuple[int | None, ...] = (0, 1, 2, 4, 8, 16, None)

#: The columns :func:`lag_lines` draws, with their axis labels (:func:`~baglm_nb.analyses.
#: display.axis_label`); all in percent (R@1, in ``workbench``, is stored in percent; the
#: fractions are drawn times 100, :func:`~baglm_nb.analyses.display.in_percent`).
CURVE_METRICS = {
    k: axis_label(k)
    for k in ("frame_accuracy", "frame_accuracy_on_steps", "announce_f1", "workbench")
}


def lag_label(lag: int | None) -> str:
    """A lag in segments as text: the number, or ``inf``."""
    return "inf" if lag is None else str(int(lag))


def _rounded(metrics: dict) -> dict:
    return {k: round(float(metrics[k]), 3) for k in online_keys()}


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
    the :func:`~baglm_nb.core.online_metrics.online_keys`, ``threshold``, ``patience`` and
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
            beliefs = run_baglm(obs, resolved, smoothing_lag_s=lag_s)
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
    *(k for k in online_keys() if k != "delay_p90_s"),
)


def lag_view(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`lag_table`'s rows with the columns a reader compares (:data:`VIEW_COLUMNS`;
    R@1 in ``workbench``), narrow enough for a page; the file keeps every column."""
    return table.loc[:, [c for c in VIEW_COLUMNS if c in table.columns]]


def lag_lines(table: pd.DataFrame, title: str):
    """Per-second and step-row accuracy, announcement F1 and R@1 (all in %) against the lag, one
    column per dataset.

    ``table`` comes from :func:`lag_table`: BaGLM with dots, the off-the-shelf model with squares
    (flat: no smoothing), both solid (workbench numbers) in their palette hues
    (:mod:`baglm_nb.analyses.palette`); the x axis is the lag in segments, ``inf`` last. Each
    metric's row shares one y axis across the datasets, so a small change looks small.
    """
    datasets = list(dict.fromkeys(table["dataset"]))
    lags = list(dict.fromkeys(table["lag"]))
    size = (0.8 + 3.3 * len(datasets), 2.3 * len(CURVE_METRICS))
    fig, axes = plt.subplots(
        len(CURVE_METRICS), len(datasets), squeeze=False, figsize=size, sharey="row"
    )
    x = np.arange(len(lags))
    for col, name in enumerate(datasets):
        sub = table[table["dataset"] == name]
        for row, (metric, label) in enumerate(CURVE_METRICS.items()):
            ax = axes[row, col]
            scale = 100.0 if in_percent(metric) else 1.0
            for key, marker in (("baglm", "o"), ("off_the_shelf", "s")):
                method = METHOD_NAMES[key]
                m = sub[sub["method"] == method].set_index("lag").reindex(lags)
                ax.plot(
                    x,
                    m[metric].to_numpy(float) * scale,
                    marker=marker,
                    linestyle=WORKBENCH,
                    color=colour(method),
                    label=method,
                    markersize=4,
                )
            ax.set_xticks(x, lags)
            ax.grid(axis="y", color="0.9", linewidth=0.6)
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


def as_shown(beliefs: np.ndarray, segment_duration: int) -> np.ndarray:
    """Per-second beliefs (T, K+1) as an online run shows them: each segment's belief at its
    last second, held over the segment's seconds (the rows inside a segment exist only once the
    whole segment is scored). ``segment_duration`` 1 returns the rows as they are."""
    d = int(segment_duration)
    t = len(beliefs)
    ends = np.minimum(np.arange(-(-t // d)) * d + d - 1, t - 1)
    return per_second(beliefs[ends], d)[:t]


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
    ``metrics`` (the video's online metrics of what ``follow`` shows: each segment's belief at
    its end, held for the segment, :func:`as_shown`; so ``follow``'s report of the same video and
    settings gives the same numbers); ``alerts`` the alerts ``follow`` raises on the filter's
    announcements (:func:`~baglm_nb.analyses.alerts.video_alerts`, alert threshold 0.5).
    """
    video = next((v for v in obs.videos if v.uid == uid), None)
    if video is None:
        raise ValueError(f"video {uid!r} is not in the {obs.dataset} observations")
    resolved = require_dependencies(deps, obs.dataset)
    d = obs.segment_duration
    out: dict[str, Any] = {"video": video, "lag": int(lag)}
    for name, lag_s in (("filter", 0), ("smoothed", int(lag) * d)):
        b = run_baglm(obs, resolved, videos=[video], smoothing_lag_s=lag_s)[uid]
        said_at = announcements(b[d - 1 :: d], threshold, patience)
        said = np.full(len(b) // d, video.num_steps, dtype=np.int64)
        for s, state in said_at:
            said[s:] = state
        metrics = measure(
            obs.dataset,
            [video],
            {uid: as_shown(b, d)},
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


def alert_levels(times: Sequence[float], gap: float) -> list[int]:
    """A row per alert so that markers on one row are more than ``gap`` apart: each alert
    (in the order given) takes the lowest row whose last alert is at least ``gap`` earlier."""
    last: list[float] = []
    levels = []
    for t in times:
        row = next((i for i, prev in enumerate(last) if t - prev >= gap), len(last))
        if row == len(last):
            last.append(t)
        last[row] = t
        levels.append(row)
    return levels


def _draw_alerts(ax, alerts: Sequence, t_len: float, colours: np.ndarray) -> None:
    """The alerts on their own strip: a triangle (missing prerequisite) or a square (skipped)
    at each alert's time in the missing step's colour, its number beside it; alerts closer than
    the room a marker and its number take are stacked on rows (:func:`alert_levels`), and the
    last ones, near the right edge, are numbered on their left so nothing is cut off."""
    ordered = sorted(alerts, key=lambda a: a.t)
    levels = alert_levels([a.t for a in ordered], gap=t_len / 45)
    rows = max(levels, default=0) + 1
    for a, level in zip(ordered, levels, strict=True):
        y = level + 0.5
        marker = "v" if a.kind == "missing_prerequisite" else "s"
        ax.plot(
            a.t,
            y,
            marker=marker,
            markersize=8,
            color=colours[a.missing],
            markeredgecolor="black",
            markeredgewidth=0.7,
            clip_on=False,
        )
        right = a.t < 0.95 * t_len
        ax.annotate(
            str(a.missing + 1),
            (a.t, y),
            xytext=(6 if right else -6, 0),
            textcoords="offset points",
            ha="left" if right else "right",
            va="center",
            fontsize=8,
            fontweight="bold",
            annotation_clip=False,
        )
    ax.set_ylim(rows, 0)
    ax.set_yticks([rows / 2], ["alerts"], fontsize=8)
    if not alerts:
        ax.text(t_len / 2, rows / 2, "no alert", ha="center", va="center", fontsize=7, color="0.4")


def timeline(data: dict[str, Any], title: str):
    """Filter and smoothed beliefs (heatmaps, none last) above four strips on one time axis:
    the ground truth, the filter's announced state (grey: none or nothing yet), the alerts
    ``follow`` raises on it, and the smoothed announced state."""
    video = data["video"]
    k = video.num_steps
    filt, smooth = data["filter"], data["smoothed"]
    t_len = len(filt["beliefs"])
    palette = step_colours(k)[:, :3]  # the steps, then none
    alerts = data.get("alerts") or []
    alert_rows = max(alert_levels(sorted(a.t for a in alerts), t_len / 45), default=0) + 1
    fig, axes = plt.subplots(
        6,
        1,
        figsize=(11, 3.4 + 0.45 * k + 0.25 * alert_rows),
        sharex=True,
        gridspec_kw={"height_ratios": [k + 1, k + 1, 1, 1, 0.8 * alert_rows, 1]},
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
        ax.set_yticks(range(k + 1), [*(str(i + 1) for i in range(k)), "none"], fontsize=6)
        ax.set_title(f"{name}: {quality_text(part['metrics'])}", fontsize=8, loc="left")
    strips = (
        (axes[2], "ground truth", truth_states(video, t_len)),
        (axes[3], "announced: filter", filt["said"]),
        (axes[5], "announced: smoothed", smooth["said"]),
    )
    for ax, name, states in strips:
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
                    color=ink_on(palette[state]),
                )
    _draw_alerts(axes[4], alerts, t_len, palette)
    axes[4].set_title(
        "alerts on the filter's announcements: \u25bc missing prerequisite, \u25a0 skipped "
        "(number and colour: the missing step)",
        fontsize=7,
        loc="right",
    )
    axes[-1].set_xlim(0, t_len)
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
