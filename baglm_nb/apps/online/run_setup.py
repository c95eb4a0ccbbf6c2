"""What a followed run follows: the replay target, the task, the source and the grounder.

``follow --replay`` plays scores (``simulated``, ``simulated:iid`` / ``simulated:pinned``, or a
score-cache folder) of one annotated video through the online filter (:func:`replay_setup`);
``follow --model`` checks the source (a file, a URL, a live stream or a camera) before the model
loads, then builds the grounder (:func:`model_setup`). ``args`` is the ``follow`` verb's parsed
command line (:mod:`baglm_nb.apps.cli.follow`), with ``lag_segments`` already a whole number of
segments and ``stay`` a float in [0, 1). A non-zero stay (beyond the paper) is named in the
grounder's ``source``, so in the terminal's banner, the event log and the report's banner.
Bad input raises ``ValueError`` / ``FileNotFoundError`` naming the path, uid or option.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from baglm_nb.core.online import OnlineGrounder
    from baglm_nb.inputs.datasets import Video
    from baglm_nb.inputs.live import LiveReader

__all__ = ["model_setup", "replay_setup", "replay_target"]


def _dataset_of(uid: str) -> str:
    """The one dataset whose annotation has ``uid``."""
    from baglm_nb.inputs.datasets import DATASETS, load_dataset

    found = [name for name in DATASETS if any(v.uid == uid for v in load_dataset(name))]
    if len(found) != 1:
        where = "no dataset's annotation" if not found else f"several datasets ({', '.join(found)})"
        raise ValueError(f"video {uid!r} is in {where}; pass --dataset NAME (or check the uid)")
    return found[0]


def replay_target(args: argparse.Namespace) -> tuple[str | None, str | Path, list[str] | None]:
    """``(dataset, scores setting, uids the cache holds or None for simulated)``."""
    from baglm_nb.core import sources

    if str(args.replay).split(":", 1)[0] == sources.SIMULATED:
        sources.simulated_twin(args.replay)  # "simulated" or a twin by name, else refused
        dataset = args.dataset or (_dataset_of(args.source) if args.source else None)
        return dataset, args.replay, None
    folder = sources.score_cache_folder(args.replay)
    dataset, uids = sources.score_cache_contents(folder)
    if args.dataset and args.dataset != dataset:
        raise ValueError(f"{folder} holds {dataset} scores, not {args.dataset}")
    return dataset, folder, uids


def _task_of(
    args: argparse.Namespace, video: Video | None
) -> tuple[str, list[str], np.ndarray, Video | None]:
    """``(goal, steps, D, ground-truth video or None)`` from ``--task`` or the annotation."""
    from baglm_nb.core import sources
    from baglm_nb.core.simulate_deps import SIMULATED_LLM
    from baglm_nb.inputs.tasks import load_task

    if args.task:
        task = load_task(args.task)
        same = video is not None and tuple(task.steps) == tuple(video.steps)
        return task.goal, task.steps, task.dependency_matrix(), video if same else None
    resolved = sources.dependencies(video.dataset, args.deps or SIMULATED_LLM)
    d = resolved.matrix(video) if resolved else None
    if d is None:
        raise ValueError(f"--deps {args.deps!r} has no matrix for {video.dataset}")
    return video.goal, video.steps, d, video


def _named_twin(scores: str | Path) -> str | None:
    """``scores`` when it names a simulated twin (``simulated:<twin>``), else None."""
    return str(scores) if str(scores).startswith("simulated:") else None


def replay_setup(
    args: argparse.Namespace, dataset: str, scores: str | Path, cached: list[str] | None
) -> tuple[OnlineGrounder, tuple[np.ndarray, np.ndarray], Video]:
    """The grounder, the per-segment scores and the ground-truth video of a replay of the video
    ``args.source`` from ``scores`` (what :func:`replay_target` found)."""
    from baglm_nb.core import sources
    from baglm_nb.core.online import OnlineGrounder
    from baglm_nb.inputs.datasets import load_dataset
    from baglm_nb.inputs.variants import with_stay

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
        raise ValueError(
            f"the scores have K={vsg.shape[1] - 1} steps for {uid!r}, the task has {len(steps)}"
        )
    grounder = OnlineGrounder(
        None,
        goal,
        steps,
        dep,
        transition=args.transition,
        segment_duration=d,
        threshold=args.threshold,
        patience=args.patience,
        source=with_stay(f"replay of {_named_twin(scores) or obs.label} scores", args.stay),
        label=obs.label,
        lag_segments=args.lag_segments,
        stay=args.stay,
    )
    return grounder, (vsg, progress), truth


def model_setup(
    args: argparse.Namespace, build_scorer: Callable[[], Any]
) -> tuple[OnlineGrounder, Video | None, LiveReader | None]:
    """The grounder, the ground-truth video (or None) and the live reader (or None for a file)
    of a run with ``--model``; the source is checked before ``build_scorer()`` loads the model."""
    from baglm_nb.core.online import OnlineGrounder
    from baglm_nb.inputs.datasets import load_dataset
    from baglm_nb.inputs.variants import with_stay

    if not args.source and args.camera is None:
        raise ValueError("SOURCE (a video file, URL or camera) is required with --model")
    stem = Path(str(args.source or "").split("?")[0]).stem
    video = None
    if args.dataset:
        video = next((v for v in load_dataset(args.dataset) if v.uid == stem), None)
    if not args.task and video is None:
        raise ValueError(
            "--task is required with --model (or --dataset with a file named by its video uid)"
        )
    goal, steps, dep, truth = _task_of(args, video)
    reader = _check_source(args)
    try:
        scorer = build_scorer()
    except BaseException:
        if reader is not None:
            reader.stop()
        raise
    grounder = OnlineGrounder(
        scorer,
        goal,
        steps,
        dep,
        transition=args.transition,
        threshold=args.threshold,
        patience=args.patience,
        source=with_stay(f"lmm:{args.model}", args.stay),
        label=f"lmm:{args.model}",
        lag_segments=args.lag_segments,
        stay=args.stay,
    )
    return grounder, truth, reader


def _check_source(args: argparse.Namespace) -> LiveReader | None:
    """Open a live source (its reader, started unless it is a file), or check a file."""
    from baglm_nb.inputs.grid import SEGMENT_DURATION
    from baglm_nb.inputs.live import SourceError, live_reader_for
    from baglm_nb.inputs.video import check_video_file

    try:
        reader = live_reader_for(
            args.source,
            segment_duration=SEGMENT_DURATION,
            live=args.live,
            lag=args.lag,
            timeout=args.timeout,
            reconnect=args.reconnect,
            reconnect_window=args.reconnect_window,
            transport=args.transport,
            pace=args.pace,
            camera=args.camera,
        )
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
