"""A single self-contained HTML report of an online run: timeline, beliefs, latency.

Figures are embedded as base64 PNG, so the file can be mailed or opened offline.
"""

from __future__ import annotations

import base64
import html
import io
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from baglm_nb.apps.online import Estimate, median_p99
from baglm_nb.stores.atomic import atomic_write_text

__all__ = ["render_html", "write_html_report"]


def _png(fig) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _figures(estimates: Sequence[Estimate], steps: Sequence[str]) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = np.array([e.t_start for e in estimates])
    beliefs = np.stack([e.belief for e in estimates])
    names = list(steps) + ["none"]
    cmap = plt.get_cmap("tab20")
    colors = [cmap(i % 20) for i in range(len(names))]
    colors[-1] = (0.6, 0.6, 0.6, 1.0)
    out = {}

    fig, ax = plt.subplots(figsize=(10, 1.6 + 0.18 * len(names)))
    current = [e.current for e in estimates]
    for i, name in enumerate(names):
        mask = np.array([c == name for c in current])
        if mask.any():
            ax.broken_barh([(ti, e.t_end - e.t_start) for ti, e, m in
                            zip(t, estimates, mask, strict=False) if m],
                           (i - 0.4, 0.8), color=colors[i])  # fmt: skip
    ax.set_yticks(range(len(names)), [n[:40] for n in names], fontsize=7)
    ax.set_xlabel("time (s)")
    ax.set_title("announced step (after hysteresis)", fontsize=9)
    fig.tight_layout()
    out["timeline"] = _png(fig)

    fig, ax = plt.subplots(figsize=(10, 3.2))
    for i, name in enumerate(names):
        ax.plot(t, beliefs[:, i], color=colors[i], lw=1.2, label=name[:40])
    ax.set_ylim(0, 1)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("belief")
    ax.legend(fontsize=6, ncol=3, loc="upper right")
    fig.tight_layout()
    out["beliefs"] = _png(fig)

    fig, ax = plt.subplots(figsize=(10, 2.4))
    bottom = np.zeros(len(estimates))
    for part in ("decode", "score", "filter"):
        ms = np.array([e.latency.get(part, 0.0) for e in estimates]) * 1000
        ax.bar(t, ms, width=estimates[0].t_end - estimates[0].t_start, bottom=bottom, label=part)
        bottom += ms
    ax.set_xlabel("time (s)")
    ax.set_ylabel("latency (ms)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    out["latency"] = _png(fig)
    return out


def render_html(
    estimates: Sequence[Estimate], steps: Sequence[str], *, title: str, note: str = ""
) -> str:
    """The report as one HTML string (figures inline)."""
    if not estimates:
        body = "<p>No segment was processed.</p>"
        figs: dict[str, str] = {}
    else:
        figs = _figures(estimates, steps)
        rows = []
        for e in estimates:
            if e.announced:
                rows.append(f"<tr><td>{e.t_start:.1f}</td><td>{html.escape(e.announced)}</td>"
                            f"<td>{e.confidence:.2f}</td></tr>")  # fmt: skip
        lat = {p: median_p99([e.latency.get(p, 0.0) * 1000 for e in estimates])
               for p in ("decode", "score", "filter")}  # fmt: skip
        lat_rows = "".join(
            f"<tr><td>{p}</td><td>{m:.3f}</td><td>{q:.3f}</td></tr>" for p, (m, q) in lat.items()
        )
        body = (
            f"<p>{len(estimates)} segments, {estimates[-1].t_end:.0f} s of video.</p>"
            '<h2>Step changes</h2><table id="changes"><tr><th>time (s)</th><th>step</th>'
            f"<th>confidence</th></tr>{''.join(rows)}</table>"
            f'<h2>Timeline</h2><img id="timeline" alt="timeline" '
            f'src="data:image/png;base64,{figs["timeline"]}">'
            f'<h2>Beliefs</h2><img id="beliefs" alt="beliefs" '
            f'src="data:image/png;base64,{figs["beliefs"]}">'
            '<h2>Latency per segment</h2><table id="latency"><tr><th>part</th>'
            f"<th>median (ms)</th><th>p99 (ms)</th></tr>{lat_rows}</table>"
            f'<img id="latency-plot" alt="latency" src="data:image/png;base64,{figs["latency"]}">'
        )
    style = (
        "body{font-family:sans-serif;max-width:1100px;margin:2em auto}img{max-width:100%}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px}"
    )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{style}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(note)}</p>{body}</body></html>\n"
    )


def write_html_report(
    estimates: Sequence[Estimate],
    steps: Sequence[str],
    path: str | os.PathLike,
    *,
    title: str,
    note: str = "",
) -> Path:
    """Write :func:`render_html` to ``path`` atomically; returns the path."""
    return atomic_write_text(path, render_html(estimates, steps, title=title, note=note))
