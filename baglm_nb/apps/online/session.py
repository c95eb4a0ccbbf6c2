"""One ``follow`` run from start to end: set up, follow, print, log and report.

:func:`run_follow` is what ``python -m baglm_nb follow`` does once its command line became a
:class:`~baglm_nb.apps.follow_config.FollowConfig` (:mod:`baglm_nb.apps.cli.follow`): it lists
the videos a replay can play, or builds the grounder (:mod:`.run_setup`), follows the source or
replays the scores (:mod:`.follow`), prints and logs what happens (:mod:`.terminal`), raises
alerts (:mod:`.alert_setup`) and writes the HTML report (:mod:`.report`). A source that broke
or gave no segment raises ``RuntimeError``, and Ctrl-C or SIGTERM
:class:`~baglm_nb.apps.online.ending.Interrupted`, after the log and the report are written.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from baglm_nb.apps.online.alert_setup import alert_monitor, alert_setting
from baglm_nb.apps.online.ending import Interrupted, ctrl_c_sets
from baglm_nb.apps.online.follow import follow, replay, smoothed
from baglm_nb.apps.online.run_settings import run_settings, settings_line
from baglm_nb.apps.online.run_setup import model_setup, replay_setup, replay_target
from baglm_nb.apps.online.terminal import consume, list_videos, one_line

if TYPE_CHECKING:
    from baglm_nb.apps.follow_config import FollowConfig
    from baglm_nb.core.online import Estimate, OnlineGrounder
    from baglm_nb.inputs.datasets import Video

__all__ = ["run_follow"]


def run_follow(config: FollowConfig, build_scorer: Callable[[], Any]) -> int:
    """Run ``follow`` with ``config``; ``build_scorer()`` loads the model of ``--model`` once
    the source is checked.

    Returns 0; after Ctrl-C / SIGTERM (the log and the report written) raises
    :class:`~baglm_nb.apps.online.ending.Interrupted`; bad input raises ``ValueError`` /
    ``FileNotFoundError``, a failed run ``RuntimeError``.
    """
    alerts_on, alerts_line = alert_setting(config)
    if config.html_path:  # loaded now, not at the end: the report is written while a person waits
        import matplotlib.pyplot  # noqa: F401

        import baglm_nb.apps.online.report  # noqa: F401
    if config.replay and not config.source:
        return list_videos(config.replay, *replay_target(config))
    ended: list[str] = []
    pressed = threading.Event()
    grounder, truth, stream, source = _opened(config, build_scorer, ended, pressed)
    stream = smoothed(stream, grounder)
    print(
        f"following {one_line(source)} ({grounder.source}); goal: {one_line(grounder.goal)}",
        flush=True,
    )
    settings = run_settings(config, grounder)
    print(settings_line(settings), flush=True)
    monitor, alerts_line = alert_monitor(config, grounder, alerts_on, alerts_line)
    print(alerts_line, flush=True)
    with ctrl_c_sets(pressed):
        estimates, gaps, reason, interrupted = consume(
            stream, config.jsonl_path, ended, pressed, monitor
        )
    quality = _quality(estimates, grounder, truth)
    if config.html_path:
        from baglm_nb.apps.online.report import RunReport, write_html_report

        h = grounder.hysteresis
        report = RunReport(
            estimates,
            grounder.steps,
            title=_title(grounder),
            note=f"followed: {_followed(truth, source)}; {reason}",
            video=truth,
            source=grounder.source,
            gaps=gaps,
            hysteresis=(h.threshold, h.patience),
            alerts=None if monitor is None else monitor.raised,
            alerts_note=alerts_line,
            settings=settings,
            quality=quality,
        )
        write_html_report(report, config.html_path)
        print(f"report: {config.html_path}", flush=True)
    if interrupted:
        raise Interrupted(getattr(pressed, "signum", signal.SIGINT))
    if getattr(reason, "failed", False):
        raise RuntimeError(reason)
    if not estimates:
        raise RuntimeError(f"no segment was followed: {reason}")
    return 0


def _opened(
    config: FollowConfig,
    build_scorer: Callable[[], Any],
    ended: list[str],
    pressed: threading.Event,
) -> tuple[OnlineGrounder, Video | None, Iterator, str | None]:
    """``(grounder, ground-truth video or None, stream of estimates and gaps, the source as
    named to the person)``: the scores replayed, or the source followed (its end appended to
    ``ended``; ``pressed`` stops it)."""
    if config.replay:
        grounder, scored, truth = replay_setup(config, *replay_target(config))
        return grounder, truth, replay(grounder, *scored, pace=config.pace), config.source
    grounder, truth, reader, source = model_setup(config, build_scorer)
    stream = follow(
        reader or config.source,
        grounder,
        growing=config.growing,
        timeout=config.timeout_s,
        on_end=ended.append,
        stop=pressed,
    )
    return grounder, truth, stream, source


def _quality(
    estimates: list[Estimate], grounder: OnlineGrounder, truth: Video | None
) -> dict | None:
    """The video's online metrics (:func:`~baglm_nb.apps.online.quality.video_quality`), printed
    as one line, when the run has a ground truth and a segment; else None."""
    if truth is None or not estimates:
        return None
    from baglm_nb.analyses.display import quality_text
    from baglm_nb.apps.online.quality import video_quality

    values = video_quality(estimates, grounder.steps, truth)
    print(f"quality on this video: {quality_text(values)} (docs/metrics.md)", flush=True)
    return values


def _title(grounder: OnlineGrounder) -> str:
    """The report's title: the goal, the stay when beyond the paper, and the source."""
    from baglm_nb.analyses.tables import title_for
    from baglm_nb.inputs.variants import with_stay

    heading = with_stay(f"Online step grounding: {one_line(grounder.goal, 120)}", grounder.stay)
    return title_for(heading, grounder.label)


def _followed(truth: Video | None, source: str | None) -> str:
    """What was followed: the dataset video, or the source as the person named it."""
    return f"{truth.dataset} video {truth.uid}" if truth is not None else one_line(source)
