"""``python -m baglm_nb follow``: say which step is happening now, live.

``follow SOURCE --model ID --task TASK`` scores a video file, a growing file, a URL, a live
stream (``rtsp://``, ``udp://``, ``srt://``, live ``http(s)://`` MPEG-TS or HLS) or a camera
(``/dev/videoN``, ``--camera N``); the source is checked before the model loads, and a source
that breaks or yields no segment ends with exit code 1 after the event log and the report are
written;
``follow --replay [SCORES] [--dataset NAME] -- UID`` replays scores through the online filter:
``simulated`` (the default; one video simulated on demand through :mod:`baglm_nb.core.sources`)
or a score-cache folder (or a folder above one). Without a uid, ``--replay`` lists the videos
it can replay. Bad input raises ``ValueError`` / ``FileNotFoundError`` naming the path or uid,
which :func:`baglm_nb.apps.cli.main.main` turns into one ``error:`` line and exit code 2
(``--debug`` shows the traceback).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from baglm_nb.apps.cli.options import add_served_arguments
from baglm_nb.inputs.variants import TRANSITIONS


def register(verbs) -> None:
    """Add the ``follow`` verb."""
    from baglm_nb.inputs.datasets import DATASETS

    p = verbs.add_parser(
        "follow",
        help="follow a video, a growing file or a URL (or replay scores) online",
        description="Prints one line per announced step change plus a status line. "
        "SOURCE is a video file or URL with --model, or a video uid with --replay (put it "
        "after --, uids may start with '-'). --replay without a uid lists the videos.",
    )
    p.add_argument("source", nargs="?",
                   help="video file, URL, live stream (rtsp://, udp://, srt://, http(s)://) or "
                   "/dev/videoN (with --model), or video uid (with --replay)")  # fmt: skip
    p.add_argument("--task", help="task file (JSON or YAML); with --replay or a dataset video, "
                   "defaults to the video's annotation")  # fmt: skip
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--model", help="scorer model id (needs local weights; "
                       "random-init:<family>: a tiny random model, mechanics only)")  # fmt: skip
    group.add_argument("--replay", metavar="SCORES", nargs="?", const="simulated",
                       help="replay scores: 'simulated' (default: simulated on demand) or a "
                       "score-cache folder, or a folder above one")  # fmt: skip
    p.add_argument("--dataset", choices=sorted(DATASETS),
                   help="the video's dataset (--replay simulated: found from the uid if "
                   "omitted; --model: a file named <uid>.<ext> gets its ground truth)")  # fmt: skip
    p.add_argument("--deps", default=None,
                   help="for a dataset video without --task: 'oracle' (default), 'none' or a "
                   "dependency cache folder")  # fmt: skip
    p.add_argument("--pace", choices=["fast", "realtime"], default="fast",
                   help="--replay, or a file read with --live: 'realtime' plays it at its own "
                   "rate (as a camera would)")  # fmt: skip
    p.add_argument("--growing", action="store_true", help="the file is still being written")
    p.add_argument("--timeout", type=float, default=10.0,
                   help="seconds without new frames before a growing file ends, or before a "
                   "live source counts as stalled (an error)")  # fmt: skip
    _add_live_options(p)
    p.add_argument("--transition", default="both", choices=TRANSITIONS)
    p.add_argument("--threshold", type=float, default=0.5, help="hysteresis confidence")
    p.add_argument("--patience", type=int, default=2, help="hysteresis segments")
    p.add_argument("--smoothing-lag", metavar="N",
                   help="fixed-lag smoothing: each segment's belief from the N segments after "
                   "it, emitted N segments late (lag_s in the event log); the announcements "
                   "are made on the smoothed beliefs (default 0: the filter)")  # fmt: skip
    _add_alert_options(p)
    p.add_argument("--jsonl", help="write the event log here (JSON lines)")
    p.add_argument("--html", help="write a self-contained HTML report here")
    p.add_argument("--trust-remote-code", action="store_true")
    add_served_arguments(p, timeout_option="--request-timeout")
    p.set_defaults(func=run)


def _add_live_options(p: argparse.ArgumentParser) -> None:
    """The live-source options (:mod:`baglm_nb.inputs.live`)."""
    live = p.add_argument_group("live sources (streams and cameras)")
    live.add_argument("--camera", type=int, metavar="N", help="follow the V4L2 camera /dev/videoN")
    live.add_argument("--live", action=argparse.BooleanOptionalAction, default=None,
                      help="read SOURCE frame by frame as a live stream, on the stream's own "
                      "clock (default: streams, cameras and http(s) without a length; --live "
                      "on a file compares it with a stream of it)")  # fmt: skip
    live.add_argument("--lag", choices=["drop", "queue"],
                      help="when scoring is slower than real time: 'drop' skips to the newest "
                      "segment and logs the skipped span as a gap (default for live sources); "
                      "'queue' keeps every segment (default for files)")  # fmt: skip
    live.add_argument("--reconnect", type=int, default=0, metavar="N",
                      help="reopen a lost or stalled live source up to N times (per loss), "
                      "waiting 0.5, 1, 2, 4, then 5 s before each attempt; the lost span is "
                      "logged as a gap")  # fmt: skip
    live.add_argument("--reconnect-window", type=float, default=0.0, metavar="SECONDS",
                      help="keep reopening a lost live source until SECONDS after the loss "
                      "(e.g. 30 to ride out a server or camera restart)")  # fmt: skip
    live.add_argument("--transport", choices=["tcp", "udp"], default="tcp",
                      help="RTSP transport (default: tcp)")  # fmt: skip


def _add_alert_options(p: argparse.ArgumentParser) -> None:
    """The alert options (:mod:`baglm_nb.core.alerts`)."""
    from baglm_nb.core.alerts import DEFAULT_THRESHOLD

    alerts = p.add_argument_group("alerts (read from the prerequisites D)")
    alerts.add_argument("--alerts", action=argparse.BooleanOptionalAction, default=None,
                        help="warn when a step is announced before a step it needs was seen, "
                        "and list skipped steps (default: on when the run has a D: a dataset "
                        "video with --deps other than 'none', or a task file with a "
                        "'dependency' field)")  # fmt: skip
    alerts.add_argument("--alert-threshold", type=float, default=DEFAULT_THRESHOLD, metavar="P",
                        help="step k needs step j when D[k, j] >= P, P in [0, 1] (default: "
                        f"{DEFAULT_THRESHOLD:g})")  # fmt: skip


# --------------------------------------------------------------------------------------------
# what to replay


def _dataset_of(uid: str) -> str:
    """The one dataset whose annotation has ``uid``."""
    from baglm_nb.inputs.datasets import DATASETS, load_dataset

    found = [name for name in DATASETS if any(v.uid == uid for v in load_dataset(name))]
    if len(found) != 1:
        where = "no dataset's annotation" if not found else f"several datasets ({', '.join(found)})"
        raise ValueError(f"video {uid!r} is in {where}; pass --dataset NAME (or check the uid)")
    return found[0]


def _replay_target(args) -> tuple[str | None, str | Path, list[str] | None]:
    """``(dataset, scores setting, uids the cache holds or None for simulated)``."""
    from baglm_nb.core import sources
    from baglm_nb.stores.scores import ScoreCache

    if args.replay == sources.SIMULATED:
        dataset = args.dataset or (_dataset_of(args.source) if args.source else None)
        return dataset, sources.SIMULATED, None
    folder = sources.score_cache_folder(args.replay)
    cache = ScoreCache.open(folder)
    if args.dataset and args.dataset != cache.key.dataset:
        raise ValueError(f"{folder} holds {cache.key.dataset} scores, not {args.dataset}")
    return cache.key.dataset, folder, cache.uids()


def _list_videos(args, dataset: str | None, scores, cached: list[str] | None) -> int:
    """Print the videos ``--replay`` can play (the first ones of each dataset without one)."""
    from baglm_nb.inputs.datasets import DATASETS, load_dataset

    if dataset is None:
        print("replay simulated scores of any annotated video; list one dataset's videos with "
              "--dataset NAME:")  # fmt: skip
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
    print(f"follow one: python -m baglm_nb follow --replay {args.replay}{extra} -- UID")
    return 0


def _task_of(args, video):
    """``(goal, steps, D, ground-truth video or None)`` from ``--task`` or the annotation."""
    from baglm_nb.core import sources
    from baglm_nb.inputs.tasks import load_task

    if args.task:
        task = load_task(args.task)
        same = video is not None and tuple(task.steps) == tuple(video.steps)
        return task.goal, task.steps, task.dependency_matrix(), video if same else None
    resolved = sources.dependencies(args.deps or "oracle", video.dataset)
    d = resolved.matrix(video) if resolved else None
    if d is None:
        raise ValueError(f"--deps {args.deps!r} has no matrix for {video.dataset}")
    return video.goal, video.steps, d, video


def _lag(args) -> int:
    """``--smoothing-lag`` in segments (an ``error:`` line for a bad value)."""
    from baglm_nb.apps.cli.options import smoothing_lag

    return smoothing_lag(args.smoothing_lag, "--smoothing-lag", allow_inf=False)


def _replay_setup(args):
    """The grounder, the per-segment scores and the ground-truth video of a replay."""
    from baglm_nb.core import sources
    from baglm_nb.core.online import OnlineGrounder
    from baglm_nb.inputs.datasets import load_dataset

    dataset, scores, cached = _replay_target(args)
    if not args.source:
        return None, _list_videos(args, dataset, scores, cached), None
    uid = args.source
    video = next((v for v in load_dataset(dataset) if v.uid == uid), None)
    if video is None or (cached is not None and uid not in cached):
        where = f"the score cache {scores}" if cached is not None else f"the {dataset} annotation"
        raise ValueError(f"video {uid!r} is not in {where}; run without a uid to list them")
    obs = sources.observations(dataset, scores, videos=[video])
    d = obs.segment_duration
    vsg, progress = obs.vsg[uid][::d], obs.progress[uid][::d]
    goal, steps, dep, truth = _task_of(args, video)
    if vsg.shape[1] != len(steps) + 1:
        raise ValueError(f"the scores have K={vsg.shape[1] - 1} steps for {uid!r}, the task "
                         f"has {len(steps)}")  # fmt: skip
    grounder = OnlineGrounder(
        None, goal, steps, dep, transition=args.transition, segment_duration=d,
        threshold=args.threshold, patience=args.patience, source=f"replay of {obs.label} scores",
        label=obs.label, smoothing_lag=_lag(args),
    )  # fmt: skip
    return grounder, (vsg, progress), truth


def _model_setup(args):
    """The grounder, the ground-truth video (or None) and the live reader (or None for a file)
    of a run with ``--model``; the source is checked before the model loads."""
    from baglm_nb.apps.cli.options import served_scorer  # noqa: PLC0415
    from baglm_nb.core.online import OnlineGrounder
    from baglm_nb.inputs.datasets import load_dataset
    from baglm_nb.models.scoring import make_scorer

    if not args.source and args.camera is None:
        raise ValueError("SOURCE (a video file, URL or camera) is required with --model")
    stem = Path(str(args.source or "").split("?")[0]).stem
    video = None
    if args.dataset:
        video = next((v for v in load_dataset(args.dataset) if v.uid == stem), None)
    if not args.task and video is None:
        raise ValueError("--task is required with --model (or --dataset with a file named by "
                         "its video uid)")  # fmt: skip
    goal, steps, dep, truth = _task_of(args, video)
    reader = _check_source(args)
    try:
        if args.backend == "openai" or args.model.startswith("openai:"):
            scorer = served_scorer(args, args.model.removeprefix("openai:"))
        else:
            scorer = make_scorer(args.model, trust_remote_code=args.trust_remote_code)
    except BaseException:
        if reader is not None:
            reader.stop()
        raise
    grounder = OnlineGrounder(
        scorer, goal, steps, dep, transition=args.transition, threshold=args.threshold,
        patience=args.patience, source=f"lmm:{args.model}", smoothing_lag=_lag(args),
    )  # fmt: skip
    return grounder, truth, reader


def _check_source(args):
    """Open a live source (its reader, started unless it is a file), or check a file."""
    from baglm_nb.inputs.grid import SEGMENT_DURATION
    from baglm_nb.inputs.live import SourceError, live_reader_for
    from baglm_nb.inputs.video import check_video_file

    if args.reconnect < 0 or not args.timeout > 0 or not args.reconnect_window >= 0:
        raise ValueError("--reconnect and --reconnect-window must be >= 0 and --timeout > 0")
    try:
        reader = live_reader_for(args.source, segment_duration=SEGMENT_DURATION,
                                 live=args.live, lag=args.lag,
                                 timeout=args.timeout, reconnect=args.reconnect,
                                 reconnect_window=args.reconnect_window,
                                 transport=args.transport, pace=args.pace,
                                 camera=args.camera)  # fmt: skip
    except SourceError as exc:  # a local file or device that is no video: bad input
        if args.source is not None and "://" not in str(args.source):
            raise ValueError(str(exc)) from None
        raise
    if args.camera is not None:
        args.source = reader.source.label
    if reader is None:
        if args.lag == "drop":
            raise ValueError("--lag drop needs a live source (a stream, a camera, or --live)")
        check_video_file(args.source, growing=args.growing)
    elif reader.source.kind != "file":
        reader.start()  # drain the stream while the model loads
    return reader


# --------------------------------------------------------------------------------------------
# the run


def run(args: argparse.Namespace) -> int:
    """Run the ``follow`` verb (errors: :func:`baglm_nb.apps.cli.main.main`'s rule)."""
    from baglm_nb.apps.online import follow, replay, smoothed

    _lag(args)  # a bad value is refused before anything loads
    ended: list[str] = []
    pressed = threading.Event()
    alerts_on, alerts_line = _alert_setting(args)
    if args.replay:
        grounder, scores, truth = _replay_setup(args)
        if grounder is None:
            return scores  # the videos were listed
        stream = replay(grounder, *scores, pace=args.pace)
    else:
        grounder, truth, reader = _model_setup(args)
        stream = follow(reader or args.source, grounder, growing=args.growing,
                        timeout=args.timeout, on_end=ended.append, stop=pressed)  # fmt: skip
    stream = smoothed(stream, grounder)
    print(f"following {one_line(args.source)} ({grounder.source}); goal: "
          f"{one_line(grounder.goal)}", flush=True)  # fmt: skip
    monitor, alerts_line = _alert_monitor(args, grounder, alerts_on, alerts_line)
    print(alerts_line, flush=True)
    with _ctrl_c_sets(pressed):
        estimates, gaps, reason, interrupted = _consume(stream, args, ended, pressed, monitor)
    if args.html:
        _report(args, grounder, estimates, gaps, truth, reason,
                alerts=None if monitor is None else monitor.raised,
                alerts_note=alerts_line)  # fmt: skip
    if interrupted:
        return 128 + getattr(pressed, "signum", signal.SIGINT)  # 130 Ctrl-C, 143 SIGTERM
    if getattr(reason, "failed", False):
        raise RuntimeError(reason)
    if not estimates:
        raise RuntimeError(f"no segment was followed: {reason}")
    return 0


def one_line(text, width: int = 80) -> str:
    """User text as one line of at most ``width`` characters (whitespace runs collapsed)."""
    from baglm_nb.analyses.belief_legend import short_label

    return short_label(" ".join(str(text)[: 4 * width].split()), width)


@contextmanager
def _ctrl_c_sets(pressed: threading.Event) -> Iterator[None]:
    """While following: Ctrl-C (SIGINT) and SIGTERM raise ``KeyboardInterrupt`` and set
    ``pressed`` (its ``signum`` says which), which the follow loops check at every segment and
    poll, so both end the run with the event log and the report written. Python drops an
    interrupt raised inside a finaliser or a C callback (it only prints it); the flag stays.
    Outside the main thread (no signal handlers there) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_signal(signum, frame):
        pressed.signum = signum
        pressed.set()
        raise KeyboardInterrupt

    previous = {n: signal.signal(n, on_signal) for n in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for n, handler in previous.items():
            signal.signal(n, handler)


def _consume(stream, args, ended: list[str], pressed: threading.Event, monitor=None):
    """Print the announcements, the gaps, the alerts (``monitor``: an
    :class:`~baglm_nb.core.alerts.AlertMonitor`, or None) and the status line; returns
    (estimates, gaps, reason, interrupted)."""
    from baglm_nb.apps.online import EventLog, raise_if_stopped
    from baglm_nb.inputs.live import Gap

    estimates, gaps = [], []
    log = EventLog(args.jsonl) if args.jsonl else None
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
                    print(f"\r[{item.t_start:7.1f} s] gap: {item.count} segments ({span}): "
                          f"{item.reason}", flush=True)  # fmt: skip
                continue
            estimates.append(item)
            _print_estimate(item, tty)
            if monitor is not None:
                _emit_alerts(monitor.feed(item), log, tty)
        if monitor is not None:  # the video ended (not on Ctrl-C): the skipped steps
            _emit_alerts(monitor.finish(), log, tty)
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


def _print_estimate(est, tty: bool) -> None:
    if est.announced:
        end = "\n" if not tty else "\x1b[K\n"
        late = f" [smoothed: said {est.lag_s:g} s late]" if est.lag_s else ""
        print(f"\r[{est.t_start:7.1f} s] step: {one_line(est.announced)} "
              f"({est.confidence:.2f}){late}", end=end, flush=True)  # fmt: skip
    if tty:
        lag = f"  lag {est.lag:.1f} s" if est.marks else ""
        print(f"\r  t={est.t_end:7.1f} s  now: {one_line(est.step_name, 50)} "
              f"({est.confidence:.2f}){lag}\x1b[K", end="", flush=True)  # fmt: skip


def _status(estimates, gaps) -> str:
    """The final status line (without the reason)."""
    if not estimates:
        return "status: no segment"
    last = estimates[-1]
    text = (f"status: {len(estimates)} segments, {last.t_end:.0f} s; current step: "
            f"{one_line(last.current) if last.current else 'none announced'}")  # fmt: skip
    dropped = sum(g.count for g in gaps if g.reason == "lag")
    other = [g for g in gaps if g.reason != "lag"]
    if dropped:
        text += f"; {dropped} segments dropped to keep up with live"
    if other:
        text += f"; {len(other)} gaps ({sum(g.count for g in other)} segments)"
    if last.marks:
        text += f"; lag {last.lag:.1f} s"
    return text


def _report(
    args, grounder, estimates, gaps, truth, reason: str, *, alerts=None, alerts_note: str = ""
) -> None:
    from baglm_nb.analyses.tables import title_for
    from baglm_nb.apps.online.report import write_html_report

    title = title_for(f"Online step grounding: {one_line(grounder.goal, 120)}", grounder.label)
    what = f"{truth.dataset} video {truth.uid}" if truth is not None else one_line(args.source)
    h = grounder.hysteresis
    write_html_report(estimates, grounder.steps, args.html, title=title, video=truth,
                      source=grounder.source, note=f"followed: {what}; {reason}",
                      gaps=gaps, hysteresis=(h.threshold, h.patience), alerts=alerts,
                      alerts_note=alerts_note)  # fmt: skip
    print(f"report: {args.html}")


# --------------------------------------------------------------------------------------------
# alerts


def _no_dependency_reason(args) -> str | None:
    """Why this run has no D (a task file without 'dependency' or with no prerequisite in it,
    or --deps none), else None."""
    from baglm_nb.core.alerts import has_dependencies
    from baglm_nb.inputs.tasks import load_task

    if args.task:
        dependency = load_task(args.task).dependency
        if dependency is None:
            return f"the task file {args.task} has no 'dependency' field"
        if not has_dependencies(dependency):
            return (
                f"the task file {args.task} has no prerequisite in 'dependency' (all zero "
                "off the diagonal)"
            )
        return None
    return "--deps none gives no prerequisites" if args.deps == "none" else None


def _alert_setting(args) -> tuple[bool, str]:
    """``(on, the line to print once)`` from ``--alerts`` and the run's D; checked before
    anything loads. ``--alert-threshold`` outside [0, 1], or ``--alerts`` without a D, is bad
    input (``ValueError`` naming the flag)."""
    from baglm_nb.core.alerts import check_level

    check_level("--alert-threshold", args.alert_threshold)
    missing = _no_dependency_reason(args)
    if missing and args.alerts:
        raise ValueError(f"--alerts needs a dependency matrix D, and {missing}")
    if missing:
        return False, f"alerts: off ({missing})"
    if args.alerts is False:
        return False, "alerts: off (--no-alerts)"
    return True, f"alerts: on (from D, --alert-threshold {args.alert_threshold:g})"


def _alert_monitor(args, grounder, on: bool, line: str):
    """``(AlertMonitor or None, the line to print)``; a D with no prerequisite gives none."""
    from baglm_nb.core.alerts import AlertMonitor, has_dependencies

    if not on:
        return None, line
    dependency = grounder.state.dependency
    if not has_dependencies(dependency):
        if args.alerts:
            raise ValueError(
                "--alerts needs a dependency matrix D, and this run's D has no "
                "prerequisite (all zero off the diagonal)"
            )
        return None, "alerts: off (the dependency matrix D is all zero off the diagonal)"
    monitor = AlertMonitor(dependency, grounder.steps, threshold=args.alert_threshold,
                           segment_duration=grounder.segment_duration)  # fmt: skip
    return monitor, line


def _emit_alerts(alerts, log, tty: bool) -> None:
    """Log each alert (an ``alert`` event) and print it on its own line."""
    for alert in alerts:
        if log:
            log.write(alert.to_json())
        end = "\x1b[K\n" if tty else "\n"
        print(f"\r[{alert.t:7.1f} s] alert: {alert.message}", end=end, flush=True)
