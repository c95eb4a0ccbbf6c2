"""A single self-contained HTML report of an online run: ground truth, beliefs, latency.

The title names the observation source, and simulated scores get a banner that says so. For a
dataset video (a replay, or a file named by its uid) the report shows the ground truth: each
annotated step, whether it was announced inside its annotation and whether BaGLM's peak belief
hits it (R@1), the announcements of steps that are not annotated, and the belief views of
:class:`~baglm_nb.analyses.belief_views.BeliefFigure` (heatmap with the annotation outlined,
top-state and announced-step strips beside the ground truth), with a caption that describes
only what the figure draws (:func:`~baglm_nb.analyses.belief_legend.reading_guide`: no outlines
or right/wrong strips without a ground truth). A live run's gaps (segments it
did not score: skipped to keep up with live, or lost while reconnecting) are listed and left
blank in the belief view. The alerts of the run (:mod:`baglm_nb.core.alerts`), when it had
them, are listed with their time and drawn on a time strip. The latency section gives each
part's median and p99 and one bar per segment over the segment's own time span
(:func:`latency_figure`); a replay of precomputed scores decoded and scored nothing, so it shows
the filter's time only and says why. Figures are embedded as base64 PNG, so the file can be
mailed or opened offline.
"""

from __future__ import annotations

import base64
import html
import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from baglm_nb.analyses.belief_data import annotated_intervals, announced_status, peak_hits
from baglm_nb.analyses.belief_legend import (
    STATUS_TEXT,
    mmss,
    reading_guide,
    set_mmss_axis,
    when_annotated,
)
from baglm_nb.analyses.belief_views import BeliefFigure, step_colours
from baglm_nb.analyses.display import MISSING
from baglm_nb.analyses.palette import STAGE_COLOURS
from baglm_nb.apps.online.events import median_p99
from baglm_nb.apps.online.quality import run_rows, video_quality
from baglm_nb.core.online import Estimate
from baglm_nb.core.online_metrics import online_keys, truth_states
from baglm_nb.inputs.datasets import Video
from baglm_nb.inputs.grid import ground_truth
from baglm_nb.inputs.metric_specs import metric_spec
from baglm_nb.stores.atomic import atomic_write_text

__all__ = ["RunReport", "latency_figure", "render_html", "video_quality", "write_html_report"]

STYLE = (
    "body{font-family:sans-serif;max-width:1150px;margin:2em auto;color:#222}img{max-width:100%}"
    "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;"
    "text-align:left;vertical-align:top}td:first-child{white-space:nowrap}.hit{background:#d9f0d3;color:#1a6b30}"
    ".miss{background:#fbdcd5;color:#a52a1a}.na{color:#888}"
    ".banner{padding:.6em 1em;border-radius:4px;font-weight:bold}"
    ".simulated{background:#fff3cd;border:2px solid #e0a800}.real{background:#e7f1fb;"
    "border:1px solid #7aa7d6}"
)


def _png(fig) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _gaps_table(gaps: Sequence) -> str:
    """The spans a live run did not score (:class:`~baglm_nb.inputs.live.Gap`)."""
    why = {
        "lag": "skipped to keep up with live (--lag drop)",
        "reconnect": "connection lost",
        "no frames": "no frames in the stream",
        "frame size": "frame size changed",
    }
    rows = "".join(
        f"<tr><td>{mmss(g.t_start)}\u2013{mmss(g.t_end)}</td><td>{g.count}</td>"
        f"<td>{html.escape(why.get(g.reason, g.reason))}</td></tr>"
        for g in gaps
    )
    total = sum(g.count for g in gaps)
    return (
        f"<h2>Gaps</h2><p>{len(gaps)} gaps, {total} segments not scored (blank in the belief "
        "view; the filter predicted through them).</p>"
        '<table id="gaps"><tr><th>time (mm:ss)</th><th>segments</th><th>why</th></tr>'
        f"{rows}</table>"
    )


def _belief_view(beliefs, said, steps, video: Video | None, title: str) -> tuple[str, str]:
    """The belief view as base64 PNG, and the caption that says how to read what it draws."""
    plot = BeliefFigure(
        video if video else steps,
        len(beliefs),
        panels=("baglm",),
        announced=True,
        legend=False,
        dpi=100,
    )
    plot.update(beliefs, title=title, announced=said)
    buf = io.BytesIO()
    plot.savefig(buf, format="png", dpi=100)
    drawn = bool(video and annotated_intervals(video, len(beliefs)))
    caption = reading_guide(plot.style, truth=video is not None, announced=True, annotated=drawn)
    return base64.b64encode(buf.getvalue()).decode("ascii"), caption


def latency_figure(estimates: Sequence[Estimate]):
    """Stacked bars of each segment's latency parts (ms), each bar spanning its segment's time
    (``t_start`` to ``t_end``, mm:ss ticks), so the axis starts at the video's 0 s."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = np.array([e.t_start for e in estimates])
    width = np.array([e.t_end - e.t_start for e in estimates])
    fig, ax = plt.subplots(figsize=(10, 2.4))
    bottom = np.zeros(len(estimates))
    for part in _parts(estimates):
        ms = np.array([e.latency.get(part, 0.0) for e in estimates]) * 1000
        ax.bar(
            t,
            ms,
            width=width,
            bottom=bottom,
            align="edge",
            label=part,
            color=STAGE_COLOURS[part],
            edgecolor="white",
            linewidth=0.5,
        )
        bottom += ms
    ax.set_xlim(0, estimates[-1].t_end)
    set_mmss_axis(ax.xaxis)
    ax.set_xlabel("time in the video (mm:ss); one bar per segment")
    ax.set_ylabel("latency (ms)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _parts(estimates: Sequence[Estimate]) -> tuple[str, ...]:
    """The latency parts to show: decode, score, filter (and wait for a live source)."""
    live = any("wait" in e.latency for e in estimates)
    return ("decode", "wait", "score", "filter") if live else ("decode", "score", "filter")


def _is_replay(estimates: Sequence[Estimate]) -> bool:
    """A replay of precomputed scores: no segment was decoded or scored (both zero)."""
    return not any(e.latency.get("decode", 0.0) or e.latency.get("score", 0.0) for e in estimates)


def _latency_section(estimates: Sequence[Estimate]) -> str:
    """Median and p99 of each latency part, and the bars per segment; on a replay, the
    filter's time only, and a line that says why (nothing was decoded or scored)."""
    replay = _is_replay(estimates)
    parts = ("filter",) if replay else _parts(estimates)
    lat = {p: median_p99([e.latency.get(p, 0.0) * 1000 for e in estimates]) for p in parts}
    rows = "".join(
        f"<tr><td>{p}</td><td>{m:.3f}</td><td>{q:.3f}</td></tr>" for p, (m, q) in lat.items()
    )
    table = (
        '<table id="latency"><tr><th>part</th><th>median (ms)</th><th>p99 (ms)</th></tr>'
        f"{rows}</table>"
    )
    if replay:
        return (
            '<h2>Latency per segment</h2><p id="latency-note">A replay of precomputed scores: '
            "no video was decoded and no model ran, so the only time spent per segment is the "
            f"filter's.</p>{table}"
        )
    return (
        f"<h2>Latency per segment</h2>{table}"
        f'<img id="latency-plot" alt="latency" '
        f'src="data:image/png;base64,{_png(latency_figure(estimates))}">'
    )


def _cell(state: str, text: str | None = None) -> str:
    """A table cell coloured by its outcome (``STATUS_TEXT`` keys), with its text."""
    css = "hit" if state == "hit" else "na" if state == "-" else "miss"
    return f'<td class="{css}">{html.escape(text or STATUS_TEXT[state])}</td>'


def _swatch(colour) -> str:
    r, g, b = (int(round(255 * c)) for c in colour[:3])
    return f'<span style="color:rgb({r},{g},{b})">\u25a0</span>'


def _steps_table(steps: Sequence[str]) -> str:
    """The task's steps (number, colour in the figure, text) when there is no ground truth."""
    colours = step_colours(len(steps))
    rows = "".join(
        f"<tr><td>{_swatch(colours[i])} {i + 1}</td><td>{html.escape(s)}</td></tr>"
        for i, s in enumerate(steps)
    )
    return f'<table id="steps"><tr><th>#</th><th>step</th></tr>{rows}</table>'


def _truth_table(video: Video, beliefs: np.ndarray, said: np.ndarray) -> tuple[str, str]:
    """The per-step table and the one-line summary of hits and misses."""
    said_status = announced_status(video, said)
    peaks = {s: ("hit" if h else "miss") for s, (_, h) in peak_hits(video, beliefs).items()}
    colours = step_colours(video.num_steps)
    rows = []
    for i, step in enumerate(video.steps):
        rows.append(
            f"<tr><td>{_swatch(colours[i])} {i + 1}</td><td>{html.escape(step)}</td>"
            f"<td>{html.escape(when_annotated(video, i, most=4))}</td>"
            f"{_cell(said_status[i])}{_cell(peaks.get(i, '-'))}</tr>"
        )
    table = (
        '<table id="truth"><tr><th>#</th><th>step</th><th>annotated (mm:ss)</th>'
        "<th>announced inside its annotation</th><th>BaGLM R@1 (peak belief inside)</th></tr>"
        + "".join(rows)
        + "</table>"
    )
    annotated = [s for s, v in said_status.items() if v in ("hit", "missed")]
    hits = sum(said_status[s] == "hit" for s in annotated)
    false = sum(v == "false" for v in said_status.values())
    r1 = sum(v == "hit" for v in peaks.values())
    summary = (
        f"Ground truth: {len(annotated)} annotated steps. Announced inside their annotation: "
        f"{hits} of {len(annotated)} (missed: {len(annotated) - hits}). Announced steps that "
        f"are not annotated in this video: {false}. BaGLM R@1 on this video: {r1} of "
        f"{len(peaks)} steps."
    )
    return table, summary


def _changes(estimates: Sequence[Estimate], steps: Sequence[str], video: Video | None) -> str:
    index = {name: i for i, name in enumerate(steps)}
    truth = ground_truth(video, int(estimates[-1].t_end) + 1) if video else None
    rows = []
    for e in estimates:
        if not e.announced:
            continue
        cell = ""
        if truth is not None:
            row = truth[min(int(e.t_start), len(truth) - 1)]
            state = index.get(e.announced, len(steps))
            right = row[state] if state < len(steps) else not row[: len(steps)].any()
            if state < len(steps):
                said = "\u2713 annotated then" if right else "\u2717 not annotated then"
            else:
                said = "\u2713 no step annotated then" if right else "\u2717 a step was annotated"
            if not right:
                said += _on_screen(video, min(int(e.t_start), len(truth) - 1))
            cell = _cell("hit" if right else "miss", said)
        rows.append(
            f"<tr><td>{mmss(e.t_start)}</td><td>{html.escape(e.announced)}</td>"
            f"<td>{e.confidence:.2f}</td>{cell}</tr>"
        )
    head = "<th>right?</th>" if truth is not None else ""
    return (
        '<table id="changes"><tr><th>time (mm:ss)</th><th>announced step</th>'
        f"<th>confidence</th>{head}</tr>{''.join(rows)}</table>"
    )


def _on_screen(video: Video, row: int) -> str:
    """What was truly on screen at per-second ``row``: the annotated step (by its number), or
    no step (:func:`~baglm_nb.core.online_metrics.truth_states`)."""
    state = int(truth_states(video, row + 1)[row])
    if state >= video.num_steps:
        return "; on screen: no step"
    return f"; on screen: step {state + 1} ({video.steps[state]})"


#: How the report and the JSONL event log number steps.
NUMBERING = (
    "Steps are numbered 1 to K in the task's step order, here and in the JSONL event log's "
    "<code>step_number</code> (its <code>step</code> field is the 0-based index, K for none)."
)


def _number(value: float) -> str:
    """A metric's value to 3 decimals, or the missing marker ("–") for NaN."""
    return MISSING if value != value else f"{value:.3f}"


def _quality(estimates, steps, video: Video, hysteresis, values: dict | None = None) -> str:
    """The online metrics of this video (:func:`video_quality`, or ``values`` when already
    computed) with the threshold, patience and smoothing lag the announcements were made
    with."""
    d = int(round(estimates[0].t_end - estimates[0].t_start)) or 1
    lag = float(estimates[0].lag_s)
    values = values if values is not None else video_quality(estimates, steps, video)
    rows = "".join(
        f"<tr><td>{k}</td><td>{_number(values[k])}</td>"
        f"<td>{html.escape(metric_spec(k).description)}</td></tr>"
        for k in online_keys()
    )
    threshold, patience = hysteresis if hysteresis else (MISSING, MISSING)
    smoothing = (
        f"beliefs smoothed with a fixed lag of {lag:g} s ({lag / d:g} segments)"
        if lag
        else "the filter's beliefs (no smoothing)"
    )
    return (
        "<h2>Online quality on this video</h2>"
        f'<p id="quality-settings">Announcements: threshold {threshold}, patience {patience} '
        f"segments, on {smoothing}. Definitions: docs/metrics.md.</p>"
        '<table id="quality"><tr><th>metric</th><th>value</th><th>what</th></tr>'
        f"{rows}</table>"
    )


def _alerts_strip(alerts: Sequence, steps: Sequence[str], duration: float) -> str:
    """The alerts on a time strip (PNG, base64): a triangle per missing prerequisite, a
    square per skipped step, in the missing step's colour, with its number; alerts raised at
    the same time are stacked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = step_colours(len(steps))
    stack: dict[float, int] = {}
    fig, ax = plt.subplots(figsize=(10, 1.0 + 0.25 * len(alerts) ** 0.5))
    for a in alerts:
        y = stack[a.t] = stack.get(a.t, -1) + 1
        marker = "v" if a.kind == "missing_prerequisite" else "s"
        ax.plot(
            a.t,
            y,
            marker=marker,
            markersize=9,
            color=colours[a.missing],
            markeredgecolor="black",
            clip_on=False,
        )
        ax.annotate(
            str(a.missing + 1),
            (a.t, y),
            xytext=(7, 0),
            textcoords="offset points",
            ha="left",
            va="center",
            fontsize=8,
        )
    ax.set_xlim(0, max(duration, 1.0) * 1.03)
    ax.set_ylim(-0.8, max(stack.values(), default=0) + 0.8)
    ax.set_yticks([])
    set_mmss_axis(ax.xaxis)
    ax.set_xlabel("time in the video (mm:ss)")
    ax.set_title(
        "alerts: \u25bc missing prerequisite, \u25a0 skipped (number: the missing step)", fontsize=9
    )
    fig.tight_layout()
    return _png(fig)


def _alerts_section(
    alerts: Sequence | None, note: str, steps: Sequence[str], duration: float
) -> str:
    """The run's alerts: whether they were on (``note``), a table and a time strip."""
    head = f'<h2>Alerts</h2><p id="alerts-note">{html.escape(note)}</p>'
    if alerts is None:
        return head
    if not alerts:
        return head + '<p id="no-alerts">No alert was raised.</p>'
    kinds = {"missing_prerequisite": "missing prerequisite", "skipped": "skipped"}
    rows = "".join(
        f"<tr><td>{mmss(a.t)}</td><td>{kinds.get(a.kind, a.kind)}</td>"
        f"<td>{a.missing + 1}</td><td>{', '.join(str(b + 1) for b in a.needed_by)}</td>"
        f"<td>{html.escape(a.message)}</td></tr>"
        for a in alerts
    )
    image = _alerts_strip(alerts, steps, duration)
    return (
        head + "<p>Step numbers as in the steps table (from 1); the event log's "
        "<code>missing</code> and <code>needed_by</code> count from 0.</p>"
        '<table id="alerts"><tr><th>time (mm:ss)</th><th>alert</th><th>missing step</th>'
        f"<th>needed by</th><th>message</th></tr>{rows}</table>"
        f'<img id="alerts-timeline" alt="alerts on a time strip" '
        f'src="data:image/png;base64,{image}">'
    )


def _source_banner(source: str) -> str:
    if "simulated" in source:
        return (
            '<p id="source" class="banner simulated">Source: '
            f"{html.escape(source)}. SIMULATED observations: the scores come from the simulated "
            "observation model (baglm_nb.core.simulate), not from a real LMM; they show how the "
            "online filter behaves, not how well a model grounds steps.</p>"
        )
    if "random-init" in source:
        return (
            '<p id="source" class="banner simulated">Source: '
            f"{html.escape(source)}. A tiny RANDOMLY INITIALISED model: the scores are noise; "
            "the run shows the mechanics only.</p>"
        )
    return f'<p id="source" class="banner real">Source: {html.escape(source)}.</p>'


def _truth_section(
    estimates, steps, beliefs, said, video: Video | None, hysteresis, quality
) -> str:
    """The ground truth's summary, the online metrics and the per-step table; without a
    ground truth, why not, and the task's steps."""
    if video is None:
        return (
            '<p id="no-truth">No ground truth: this is not a dataset video (replay a dataset '
            f'video, or pass --dataset with a file named by its uid).</p><p id="numbering">'
            f"{NUMBERING}</p><h2>Steps</h2>" + _steps_table(steps)
        )
    table, summary = _truth_table(video, beliefs, said)
    return (
        f'<p id="summary">{html.escape(summary)}</p><p id="numbering">{NUMBERING}</p>'
        + _quality(estimates, steps, video, hysteresis, quality)
        + "<h2>Ground truth and outcome per step</h2>"
        + table
    )


def _settings_table(settings: Sequence[tuple[str, str]]) -> str:
    """What the run used (:func:`~baglm_nb.apps.online.run_settings.run_settings`): one
    column per field, its name above its value."""
    head = "".join(f"<th>{html.escape(name)}</th>" for name, _ in settings)
    cells = "".join(f"<td>{html.escape(str(value) or MISSING)}</td>" for _, value in settings)
    return f'<table id="settings"><tr>{head}</tr><tr>{cells}</tr></table>'


@dataclass(frozen=True)
class RunReport:
    """One online run as its report shows it: :func:`render_html` draws it and
    :func:`write_html_report` writes it."""

    #: The run's estimates.
    estimates: Sequence[Estimate]
    #: The task's step texts.
    steps: Sequence[str]
    #: Page title and heading; it should name the source (``title_for``).
    title: str
    #: A line under the source banner (what was followed, why it ended).
    note: str = ""
    #: The dataset video, for the ground truth (tables, outlines, right/wrong strips).
    video: Video | None = None
    #: The observation source (``"simulated"`` in it gets the simulated banner).
    source: str = ""
    #: A live run's unscored spans, :class:`~baglm_nb.inputs.live.Gap` (listed; blank rows in
    #: the belief view).
    gaps: Sequence = ()
    #: ``(threshold, patience)``: what the announcements were made with (shown beside the
    #: online metrics).
    hysteresis: tuple[float, int] | None = None
    #: The run's alerts (:mod:`baglm_nb.core.alerts`); None when alerts were off.
    alerts: Sequence | None = None
    #: Whether alerts were on, and why (an "Alerts" section shows it when given).
    alerts_note: str = ""
    #: What the run used, ``(name, value)`` (observations, D, threshold, patience, smoothing
    #: lag), shown under the source banner.
    settings: Sequence[tuple[str, str]] = ()
    #: The video's online metrics when already computed (:func:`video_quality`).
    quality: dict | None = None


def render_html(run: RunReport) -> str:
    """The report of ``run`` as one HTML string (figures inline)."""
    estimates, steps, video = run.estimates, run.steps, run.video
    parts = [_source_banner(run.source or "unknown")]
    if run.settings:
        parts.append(_settings_table(run.settings))
    parts.append(f'<p id="note">{html.escape(run.note)}</p>')
    if not estimates:
        parts.append("<p>No segment was processed.</p>")
    else:
        beliefs, said = run_rows(estimates, steps)
        parts.append(f"<p>{len(estimates)} segments, {estimates[-1].t_end:.0f} s of video.</p>")
        parts.append(
            _truth_section(estimates, steps, beliefs, said, video, run.hysteresis, run.quality)
        )
        image, reading = _belief_view(beliefs, said, steps, video, run.title)
        if run.gaps:
            parts.append(_gaps_table(run.gaps))
        parts += [
            "<h2>Step changes</h2>",
            _changes(estimates, steps, video),
        ]
        if run.alerts is not None or run.alerts_note:
            parts.append(_alerts_section(run.alerts, run.alerts_note, steps, estimates[-1].t_end))
        parts += [
            f'<h2>Beliefs</h2><p id="reading">{html.escape(reading)}</p>',
            f'<img id="beliefs" alt="belief views" src="data:image/png;base64,{image}">',
        ]
        parts.append(_latency_section(estimates))
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(run.title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{html.escape(run.title)}</h1>{''.join(parts)}</body></html>\n"
    )


def write_html_report(run: RunReport, path: str | os.PathLike) -> Path:
    """Write :func:`render_html` of ``run`` to ``path`` atomically; returns the path."""
    return atomic_write_text(path, render_html(run))
