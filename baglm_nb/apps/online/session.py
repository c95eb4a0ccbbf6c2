"""One ``follow`` run from start to end: set up, follow, print, log and report.

:func:`run_follow` is what ``python -m baglm_nb follow`` does once its command line is parsed
(:mod:`baglm_nb.apps.cli.follow`): it lists the videos a replay can play, or builds the
grounder (:mod:`.run_setup`), follows the source or replays the scores (:mod:`.follow`),
prints and logs what happens (:mod:`.terminal`), raises alerts (:mod:`.alert_setup`) and
writes the HTML report (:mod:`.report`). A source that broke or gave no segment raises
``RuntimeError`` after the log and the report are written.
"""

from __future__ import annotations

import argparse
import signal
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from baglm_nb.apps.online.alert_setup import alert_monitor, alert_setting
from baglm_nb.apps.online.ending import ctrl_c_sets
from baglm_nb.apps.online.follow import follow, replay, smoothed
from baglm_nb.apps.online.run_settings import run_settings, settings_line
from baglm_nb.apps.online.run_setup import model_setup, replay_setup, replay_target
from baglm_nb.apps.online.terminal import consume, list_videos, one_line

if TYPE_CHECKING:
    from baglm_nb.core.online import Estimate, OnlineGrounder
    from baglm_nb.inputs.datasets import Video
    from baglm_nb.inputs.live import Gap

__all__ = ["run_follow"]


def run_follow(args: argparse.Namespace, build_scorer: Callable[[], Any]) -> int:
    """Run ``follow`` for the parsed command line ``args`` (``lag_segments`` already a whole
    number); ``build_scorer()`` loads the model of ``--model`` once the source is checked.

    Returns the exit status (0, or 128 + the signal after Ctrl-C / SIGTERM); bad input raises
    ``ValueError`` / ``FileNotFoundError``, a failed run ``RuntimeError``.
    """
    ended: list[str] = []
    pressed = threading.Event()
    alerts_on, alerts_line = alert_setting(args)
    if args.html:  # loaded now, not when the run ends: the report is written while a person waits
        import matplotlib.pyplot  # noqa: F401

        import baglm_nb.apps.online.report  # noqa: F401
    if args.replay:
        dataset, scores, cached = replay_target(args)
        if not args.source:
            return list_videos(args.replay, dataset, scores, cached)
        grounder, scored, truth = replay_setup(args, dataset, scores, cached)
        stream = replay(grounder, *scored, pace=args.pace)
    else:
        grounder, truth, reader = model_setup(args, build_scorer)
        stream = follow(
            reader or args.source,
            grounder,
            growing=args.growing,
            timeout=args.timeout,
            on_end=ended.append,
            stop=pressed,
        )
    stream = smoothed(stream, grounder)
    print(
        f"following {one_line(args.source)} ({grounder.source}); goal: {one_line(grounder.goal)}",
        flush=True,
    )
    settings = run_settings(args, grounder)
    print(settings_line(settings), flush=True)
    monitor, alerts_line = alert_monitor(args, grounder, alerts_on, alerts_line)
    print(alerts_line, flush=True)
    with ctrl_c_sets(pressed):
        estimates, gaps, reason, interrupted = consume(stream, args, ended, pressed, monitor)
    quality = _quality(estimates, grounder, truth)
    if args.html:
        _report(
            args,
            grounder,
            estimates,
            gaps,
            truth,
            reason,
            alerts=None if monitor is None else monitor.raised,
            alerts_note=alerts_line,
            settings=settings,
            quality=quality,
        )
    if interrupted:
        return 128 + getattr(pressed, "signum", signal.SIGINT)  # 130 Ctrl-C, 143 SIGTERM
    if getattr(reason, "failed", False):
        raise RuntimeError(reason)
    if not estimates:
        raise RuntimeError(f"no segment was followed: {reason}")
    return 0


def _quality(
    estimates: list[Estimate], grounder: OnlineGrounder, truth: Video | None
) -> dict | None:
    """The video's online metrics (:func:`~baglm_nb.apps.online.report.video_quality`), printed
    as one line, when the run has a ground truth and a segment; else None."""
    if truth is None or not estimates:
        return None
    from baglm_nb.analyses.assistance import quality_text
    from baglm_nb.apps.online.report import video_quality

    values = video_quality(estimates, grounder.steps, truth)
    print(f"quality on this video: {quality_text(values)} (docs/metrics.md)", flush=True)
    return values


def _report(
    args: argparse.Namespace,
    grounder: OnlineGrounder,
    estimates: list[Estimate],
    gaps: list[Gap],
    truth: Video | None,
    reason: str,
    *,
    alerts: list | None = None,
    alerts_note: str = "",
    settings: list[tuple[str, str]] = (),
    quality: dict | None = None,
) -> None:
    """Write the HTML report of ``--html`` and say where."""
    from baglm_nb.analyses.tables import title_for
    from baglm_nb.apps.online.report import write_html_report
    from baglm_nb.inputs.variants import with_stay

    heading = with_stay(f"Online step grounding: {one_line(grounder.goal, 120)}", grounder.stay)
    title = title_for(heading, grounder.label)
    what = f"{truth.dataset} video {truth.uid}" if truth is not None else one_line(args.source)
    h = grounder.hysteresis
    write_html_report(
        estimates,
        grounder.steps,
        args.html,
        title=title,
        video=truth,
        source=grounder.source,
        note=f"followed: {what}; {reason}",
        gaps=gaps,
        hysteresis=(h.threshold, h.patience),
        alerts=alerts,
        alerts_note=alerts_note,
        settings=settings,
        quality=quality,
    )
    print(f"report: {args.html}", flush=True)
