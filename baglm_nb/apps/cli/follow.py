"""``python -m baglm_nb follow``: say which step is happening now, live."""

from __future__ import annotations

import argparse
import sys


def register(verbs) -> None:
    """Add the ``follow`` verb."""
    p = verbs.add_parser(
        "follow",
        help="follow a video, a growing file or a URL (or replay a score cache) online",
        description="Prints one line per announced step change plus a status line. "
        "SOURCE is a video file or URL with --model, or a video uid with --replay.",
    )
    p.add_argument("source", help="video file / URL (with --model) or video uid (with --replay)")
    p.add_argument("--task", help="task file (JSON or YAML); with --replay, defaults to the "
                   "dataset's annotation of the video")  # fmt: skip
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--model", help="scorer model id (needs local weights)")
    group.add_argument("--replay", metavar="CACHE", help="score cache folder to replay")
    p.add_argument("--deps", default=None,
                   help="with --replay and no --task: 'oracle' (default), 'none' or a "
                   "dependency cache folder")  # fmt: skip
    p.add_argument("--pace", choices=["fast", "realtime"], default="fast")
    p.add_argument("--growing", action="store_true", help="the file is still being written")
    p.add_argument("--timeout", type=float, default=10.0,
                   help="seconds without new frames before a growing source ends")  # fmt: skip
    p.add_argument("--transition", default="both",
                   choices=["static", "readiness", "validity", "both"])  # fmt: skip
    p.add_argument("--threshold", type=float, default=0.5, help="hysteresis confidence")
    p.add_argument("--patience", type=int, default=2, help="hysteresis segments")
    p.add_argument("--jsonl", help="write the event log here (JSON lines)")
    p.add_argument("--html", help="write a self-contained HTML report here")
    p.add_argument("--trust-remote-code", action="store_true")
    p.set_defaults(func=run)


def _replay_setup(args):
    import numpy as np

    from baglm_nb.apps.online import OnlineGrounder, load_task
    from baglm_nb.core import sources
    from baglm_nb.core.observations import labelled
    from baglm_nb.inputs.datasets import load_dataset
    from baglm_nb.stores.scores import ScoreCache

    cache = ScoreCache.open(args.replay)
    if not cache.has(args.source):
        raise SystemExit(f"error: video {args.source!r} is not in the score cache {args.replay}")
    scores = cache.read_video(args.source)
    if scores.progress is None:
        raise SystemExit(f"error: {args.replay}: video {args.source!r} has no progress scores")
    if args.task:
        task = load_task(args.task)
        goal, steps, dep = task.goal, task.steps, task.dependency_matrix()
    else:
        videos = {v.uid: v for v in load_dataset(cache.key.dataset)}
        if args.source not in videos:
            raise SystemExit(f"error: {args.source!r} is not a {cache.key.dataset} video; "
                             "pass --task")  # fmt: skip
        video = videos[args.source]
        goal, steps = video.goal, video.steps
        resolved = sources.dependencies(args.deps or "oracle", cache.key.dataset)
        dep = resolved.matrix(video)
    if scores.vsg.shape[1] != len(steps) + 1:
        raise SystemExit(f"error: the cache has K={scores.vsg.shape[1] - 1} steps for "
                         f"{args.source!r}, the task has {len(steps)}")  # fmt: skip
    label = labelled(cache.key.source_label, "float64")  # the online filter is float64
    grounder = OnlineGrounder(
        None, goal, steps, np.asarray(dep), transition=args.transition,
        segment_duration=cache.key.segment_duration, threshold=args.threshold,
        patience=args.patience, source=f"replay of {label} scores",
    )  # fmt: skip
    return grounder, scores


def run(args: argparse.Namespace) -> int:
    """Run the ``follow`` verb."""
    from baglm_nb.apps.online import EventLog, follow, load_task, replay
    from baglm_nb.apps.online_report import write_html_report

    ended: list[str] = []
    if args.replay:
        grounder, scores = _replay_setup(args)
        stream = replay(grounder, scores.vsg, scores.progress, pace=args.pace)
    else:
        if not args.task:
            raise SystemExit("error: --task is required with --model")
        from baglm_nb.apps.online import OnlineGrounder
        from baglm_nb.models.registry import load_scorer

        task = load_task(args.task)
        scorer = load_scorer(args.model, trust_remote_code=args.trust_remote_code)
        grounder = OnlineGrounder(
            scorer, task.goal, task.steps, task.dependency_matrix(),
            transition=args.transition, threshold=args.threshold, patience=args.patience,
            source=f"lmm:{args.model}",
        )  # fmt: skip
        stream = follow(args.source, grounder, growing=args.growing, timeout=args.timeout,
                        on_end=ended.append)  # fmt: skip
    print(f"following {args.source} ({grounder.source}); goal: {grounder.goal}", flush=True)
    estimates = []
    log = EventLog(args.jsonl) if args.jsonl else None
    tty = sys.stdout.isatty()
    interrupted = False
    try:
        for est in stream:
            estimates.append(est)
            if log:
                log.write(est.to_json())
            if est.announced:
                end = "\n" if not tty else "\x1b[K\n"
                print(f"\r[{est.t_start:7.1f} s] step: {est.announced} "
                      f"({est.confidence:.2f})", end=end, flush=True)  # fmt: skip
            if tty:
                print(f"\r  t={est.t_end:7.1f} s  now: {est.step_name[:50]} "
                      f"({est.confidence:.2f})\x1b[K", end="", flush=True)  # fmt: skip
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if log:
            log.close()
    if tty:
        print()
    reason = "interrupted (Ctrl-C)" if interrupted else (ended[0] if ended else "source ended")
    last = estimates[-1] if estimates else None
    status = (f"status: {len(estimates)} segments, {last.t_end:.0f} s; current step: "
              f"{last.current or 'none announced'}" if last else "status: no segment")  # fmt: skip
    print(f"{status}; {reason}", flush=True)
    if args.html:
        write_html_report(estimates, grounder.steps, args.html,
                          title=f"Online step grounding: {grounder.goal}",
                          note=f"source: {args.source} ({grounder.source}); {reason}")  # fmt: skip
        print(f"report: {args.html}")
    return 130 if interrupted else 0
