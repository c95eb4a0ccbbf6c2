"""``python -m baglm_nb follow``: say which step is happening now, live.

``follow FILE --model ID --task TASK`` scores a video file, a growing file or a URL;
``follow --replay [SCORES] [--dataset NAME] -- UID`` replays scores through the online filter:
``simulated`` (the default; one video simulated on demand through :mod:`baglm_nb.core.sources`)
or a score-cache folder (or a folder above one). Without a uid, ``--replay`` lists the videos
it can replay. Bad input raises ``ValueError`` / ``FileNotFoundError`` naming the path or uid,
which :func:`baglm_nb.apps.cli.main.main` turns into one ``error:`` line and exit code 2
(``--debug`` shows the traceback).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


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
                   help="video file / URL (with --model) or video uid (with --replay)")  # fmt: skip
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
    from baglm_nb.apps.online import load_task
    from baglm_nb.core import sources

    if args.task:
        task = load_task(args.task)
        same = video is not None and tuple(task.steps) == tuple(video.steps)
        return task.goal, task.steps, task.dependency_matrix(), video if same else None
    resolved = sources.dependencies(args.deps or "oracle", video.dataset)
    d = resolved.matrix(video) if resolved else None
    if d is None:
        raise ValueError(f"--deps {args.deps!r} has no matrix for {video.dataset}")
    return video.goal, video.steps, d, video


def _replay_setup(args):
    """The grounder, the per-segment scores and the ground-truth video of a replay."""
    from baglm_nb.apps.online import OnlineGrounder
    from baglm_nb.core import sources
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
        label=obs.label,
    )  # fmt: skip
    return grounder, (vsg, progress), truth


def _model_setup(args):
    """The grounder and ground-truth video (or None) of a live run with ``--model``."""
    from baglm_nb.apps.online import OnlineGrounder
    from baglm_nb.inputs.datasets import load_dataset
    from baglm_nb.models.scoring import make_scorer

    if not args.source:
        raise ValueError("SOURCE (a video file or URL) is required with --model")
    stem = Path(str(args.source).split("?")[0]).stem
    video = None
    if args.dataset:
        video = next((v for v in load_dataset(args.dataset) if v.uid == stem), None)
    if not args.task and video is None:
        raise ValueError("--task is required with --model (or --dataset with a file named by "
                         "its video uid)")  # fmt: skip
    goal, steps, dep, truth = _task_of(args, video)
    scorer = make_scorer(args.model, trust_remote_code=args.trust_remote_code)
    grounder = OnlineGrounder(
        scorer, goal, steps, dep, transition=args.transition, threshold=args.threshold,
        patience=args.patience, source=f"lmm:{args.model}",
    )  # fmt: skip
    return grounder, truth


# --------------------------------------------------------------------------------------------
# the run


def run(args: argparse.Namespace) -> int:
    """Run the ``follow`` verb (errors: :func:`baglm_nb.apps.cli.main.main`'s rule)."""
    from baglm_nb.apps.online import follow, replay

    ended: list[str] = []
    if args.replay:
        grounder, scores, truth = _replay_setup(args)
        if grounder is None:
            return scores  # the videos were listed
        stream = replay(grounder, *scores, pace=args.pace)
    else:
        grounder, truth = _model_setup(args)
        stream = follow(args.source, grounder, growing=args.growing, timeout=args.timeout,
                        on_end=ended.append)  # fmt: skip
    print(f"following {args.source} ({grounder.source}); goal: {grounder.goal}", flush=True)
    estimates, reason, interrupted = _consume(stream, args, ended)
    if args.html:
        _report(args, grounder, estimates, truth, reason)
    return 130 if interrupted else 0


def _consume(stream, args, ended: list[str]):
    """Print the announcements and the status line; returns (estimates, reason, interrupted)."""
    from baglm_nb.apps.online import EventLog

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
    return estimates, reason, interrupted


def _report(args, grounder, estimates, truth, reason: str) -> None:
    from baglm_nb.analyses.tables import title_for
    from baglm_nb.apps.online_report import write_html_report

    title = title_for(f"Online step grounding: {grounder.goal}", grounder.label)
    what = f"{truth.dataset} video {truth.uid}" if truth is not None else str(args.source)
    write_html_report(estimates, grounder.steps, args.html, title=title, video=truth,
                      source=grounder.source, note=f"followed: {what}; {reason}")  # fmt: skip
    print(f"report: {args.html}")
