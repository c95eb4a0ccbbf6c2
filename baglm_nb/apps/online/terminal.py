"""What a followed run prints: the announcements, gaps, alerts and the status line.

:func:`consume` reads a follow stream (estimates and gaps), writes the JSONL event log, and
prints one line per announced step change, gap and alert, a live status line on a terminal,
and the final status with why the run ended; :func:`list_videos` prints the videos
``follow --replay`` can play.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from baglm_nb.apps.online.events import EventLog
    from baglm_nb.core.alerts import AlertMonitor
    from baglm_nb.core.online import Estimate
    from baglm_nb.inputs.live_items import Gap

__all__ = ["consume", "list_videos", "one_line"]


def one_line(text: object, width: int = 80) -> str:
    """User text as one line of at most ``width`` characters (whitespace runs collapsed), any
    password in a URL hidden."""
    from baglm_nb.analyses.short_text import short_label
    from baglm_nb.inputs.urls import redact_urls

    return short_label(" ".join(redact_urls(str(text))[: 4 * width].split()), width)


def list_videos(
    replay: str, dataset: str | None, scores: str | Path, cached: list[str] | None
) -> int:
    """Print the videos ``--replay`` can play (the first ones of each dataset without one)."""
    from baglm_nb.inputs.datasets import DATASETS, load_dataset

    if dataset is None:
        print(
            "replay simulated scores of any annotated video; list one dataset's videos with "
            "--dataset NAME:"
        )
        for name in DATASETS:
            videos = load_dataset(name)
            print(f"  {name}: {len(videos)} videos, e.g. {', '.join(v.uid for v in videos[:3])}")
        print("then: python -m baglm_nb follow --replay simulated --dataset NAME -- UID")
        return 0
    videos = load_dataset(dataset)
    if cached is not None:
        keep = set(cached)
        videos = [v for v in videos if v.uid in keep]
    print(f"{len(videos)} {dataset} videos in {scores} (uid, K, task):")
    for v in videos:
        print(f"  {v.uid}  K={v.num_steps}  {v.goal}")
    extra = "" if cached is not None else f" --dataset {dataset}"
    print(f"follow one: python -m baglm_nb follow --replay {replay}{extra} -- UID")
    return 0


def consume(
    stream: Iterator,
    jsonl_path: str | None,
    ended: list[str],
    pressed: threading.Event,
    monitor: AlertMonitor | None = None,
) -> tuple[list[Estimate], list[Gap], str, bool]:
    """Print the announcements, the gaps, the alerts (``monitor``: an
    :class:`~baglm_nb.core.alerts.AlertMonitor`, or None) and the status line; returns
    (estimates, gaps, reason, interrupted). ``jsonl_path``: the event log's path, or None."""
    from baglm_nb.apps.online.ending import raise_if_stopped
    from baglm_nb.apps.online.events import EventLog
    from baglm_nb.inputs.live_items import Gap

    estimates, gaps = [], []
    log = EventLog(jsonl_path) if jsonl_path else None
    tty = sys.stdout.isatty()
    interrupted = False
    try:
        for item in stream:
            raise_if_stopped(pressed)  # replay too, and a follow whose own check came first
            if log:
                log.write(item.to_json())
            if isinstance(item, Gap):
                gaps.append(item)
                if item.reason != "lag":  # lag gaps are counted in the status line
                    span = f"{item.t_start:.0f}-{item.t_end:.0f} s"
                    print(
                        f"\r[{item.t_start:7.1f} s] gap: {item.count} segments ({span}): "
                        f"{item.reason}",
                        flush=True,
                    )
                continue
            estimates.append(item)
            _print_estimate(item, tty)
            if monitor is not None:
                emit_alerts(monitor.feed(item), log, tty)
        if monitor is not None:  # the video ended (not on Ctrl-C): the skipped steps
            emit_alerts(monitor.finish(), log, tty)
    except KeyboardInterrupt:
        interrupted = True
        stream.close()
    finally:
        if log:
            log.close()
    if tty:
        print()
    reason = ended[0] if ended else "source ended"
    if interrupted:
        sigterm = getattr(pressed, "signum", None) == signal.SIGTERM
        reason = "terminated (SIGTERM)" if sigterm else "interrupted (Ctrl-C)"
    print(f"{_status(estimates, gaps)}; {reason}", flush=True)
    return estimates, gaps, reason, interrupted


def _print_estimate(est: Estimate, tty: bool) -> None:
    if est.announced:
        end = "\n" if not tty else "\x1b[K\n"
        late = f" [smoothed: said {est.lag_s:g} s late]" if est.lag_s else ""
        print(
            f"\r[{est.t_start:7.1f} s] step: {one_line(est.announced)} "
            f"({est.confidence:.2f}){late}",
            end=end,
            flush=True,
        )
    if tty:
        lag = f"  lag {est.lag:.1f} s" if est.marks else ""
        print(f"\r  t={est.t_end:7.1f} s  now: {one_line(est.step_name, 50)} "
              f"({est.confidence:.2f}){lag}\x1b[K", end="", flush=True)  # fmt: skip


def _status(estimates: list[Estimate], gaps: list[Gap]) -> str:
    """The final status line (without the reason)."""
    if not estimates:
        return "status: no segment"
    last = estimates[-1]
    text = (
        f"status: {len(estimates)} segments, {last.t_end:.0f} s; current step: "
        f"{one_line(last.current) if last.current else 'none announced'}"
    )
    dropped = sum(g.count for g in gaps if g.reason == "lag")
    other = [g for g in gaps if g.reason != "lag"]
    if dropped:
        text += f"; {dropped} segments dropped to keep up with live"
    if other:
        text += f"; {len(other)} gaps ({sum(g.count for g in other)} segments)"
    if last.marks:
        text += f"; lag {last.lag:.1f} s"
    return text


def emit_alerts(alerts: Iterable, log: EventLog | None, tty: bool) -> None:
    """Log each alert (an ``alert`` event) and print it on its own line."""
    for alert in alerts:
        if log:
            log.write(alert.to_json())
        end = "\x1b[K\n" if tty else "\n"
        print(f"\r[{alert.t:7.1f} s] alert: {alert.message}", end=end, flush=True)
