"""What a followed run follows: the replay target, the task, the source and the grounder.

``follow --replay`` plays scores (``simulated``, ``simulated:iid`` / ``simulated:pinned``, or a
score-cache folder) of one annotated video through the online filter (:func:`replay_setup`);
``follow --model`` checks the source (a file, a URL, a live stream or a camera) before the model
loads, then builds the grounder (:func:`model_setup`). ``config`` is the run's
:class:`~baglm_nb.apps.follow_config.FollowConfig`, its values already checked by the command
line. A non-zero stay (beyond the paper) is named in the
grounder's ``source``, so in the terminal's banner, the event log and the report's banner.
Bad input raises ``ValueError`` / ``FileNotFoundError`` naming the path, uid or option.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from baglm_nb.apps.follow_config import FollowConfig
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


def replay_target(config: FollowConfig) -> tuple[str | None, str | Path, list[str] | None]:
    """``(dataset, scores setting, uids the cache holds or None for simulated)``."""
    from baglm_nb.core import sources

    if str(config.replay).split(":", 1)[0] == sources.SIMULATED:
        sources.simulated_twin(config.replay)  # "simulated" or a twin by name, else refused
        dataset = config.dataset or (_dataset_of(config.source) if config.source else None)
        return dataset, config.replay, None
    folder = sources.score_cache_folder(config.replay)
    dataset, uids = sources.score_cache_contents(folder)
    if config.dataset and config.dataset != dataset:
        raise ValueError(f"{folder} holds {dataset} scores, not {config.dataset}")
    return dataset, folder, uids


def _task_of(
    config: FollowConfig, video: Video | None
) -> tuple[str, list[str], np.ndarray, Video | None]:
    """``(goal, steps, D, ground-truth video or None)`` from ``--task`` or the annotation."""
    from baglm_nb.core import sources
    from baglm_nb.core.simulate_deps import SIMULATED_LLM
    from baglm_nb.inputs.tasks import load_task

    if config.task_path:
        task = load_task(config.task_path)
        same = video is not None and tuple(task.steps) == tuple(video.steps)
        return task.goal, task.steps, task.dependency_matrix(), video if same else None
    resolved = sources.dependencies(video.dataset, config.deps or SIMULATED_LLM)
    d = resolved.matrix(video) if resolved else None
    if d is None:
        raise ValueError(f"--deps {config.deps!r} has no matrix for {video.dataset}")
    return video.goal, video.steps, d, video


def _named_twin(scores: str | Path) -> str | None:
    """``scores`` when it names a simulated twin (``simulated:<twin>``), else None."""
    return str(scores) if str(scores).startswith("simulated:") else None


def replay_setup(
    config: FollowConfig, dataset: str, scores: str | Path, cached: list[str] | None
) -> tuple[OnlineGrounder, tuple[np.ndarray, np.ndarray], Video]:
    """The grounder, the per-segment scores and the ground-truth video of a replay of the video
    ``config.source`` from ``scores`` (what :func:`replay_target` found)."""
    from baglm_nb.core import sources
    from baglm_nb.core.online import OnlineGrounder
    from baglm_nb.inputs.datasets import load_dataset
    from baglm_nb.inputs.variants import with_stay

    uid = config.source
    video = next((v for v in load_dataset(dataset) if v.uid == uid), None)
    if video is None or (cached is not None and uid not in cached):
        where = f"the score cache {scores}" if cached is not None else f"the {dataset} annotation"
        raise ValueError(f"video {uid!r} is not in {where}; run without a uid to list them")
    obs = sources.observations(dataset, scores, videos=[video])
    d = obs.segment_duration
    vsg, progress = obs.vsg[uid][::d], obs.progress[uid][::d]
    goal, steps, dep, truth = _task_of(config, video)
    if vsg.shape[1] != len(steps) + 1:
        raise ValueError(
            f"the scores have K={vsg.shape[1] - 1} steps for {uid!r}, the task has {len(steps)}"
        )
    grounder = OnlineGrounder(
        None,
        goal,
        steps,
        dep,
        transition=config.transition,
        segment_duration=d,
        threshold=config.threshold,
        patience=config.patience_segments,
        source=with_stay(f"replay of {_named_twin(scores) or obs.label} scores", config.stay),
        label=obs.label,
        lag_segments=config.lag_segments,
        stay=config.stay,
    )
    return grounder, (vsg, progress), truth


def model_setup(
    config: FollowConfig, build_scorer: Callable[[], Any]
) -> tuple[OnlineGrounder, Video | None, LiveReader | None, str | None]:
    """The grounder, the ground-truth video (or None), the live reader (or None for a file) and
    the source as named to the person (a camera by its device) of a run with ``--model``; the
    source is checked before ``build_scorer()`` loads the model."""
    from baglm_nb.core.online import OnlineGrounder
    from baglm_nb.inputs.datasets import load_dataset
    from baglm_nb.inputs.variants import with_stay

    if not config.source and config.camera is None:
        raise ValueError("SOURCE (a video file, URL or camera) is required with --model")
    stem = Path(str(config.source or "").split("?")[0]).stem
    video = None
    if config.dataset:
        video = next((v for v in load_dataset(config.dataset) if v.uid == stem), None)
    if not config.task_path and video is None:
        raise ValueError(
            "--task is required with --model (or --dataset with a file named by its video uid)"
        )
    goal, steps, dep, truth = _task_of(config, video)
    reader = _check_source(config)
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
        transition=config.transition,
        threshold=config.threshold,
        patience=config.patience_segments,
        source=with_stay(f"lmm:{config.model}", config.stay),
        label=f"lmm:{config.model}",
        lag_segments=config.lag_segments,
        stay=config.stay,
    )
    source = reader.source.label if config.camera is not None else config.source
    return grounder, truth, reader, source


def _check_source(config: FollowConfig) -> LiveReader | None:
    """Open a live source (its reader, started unless it is a file), or check a file."""
    from baglm_nb.inputs.grid import SEGMENT_DURATION
    from baglm_nb.inputs.live import SourceError, live_reader_for

    try:
        reader = live_reader_for(
            config.source,
            segment_duration=SEGMENT_DURATION,
            live=config.live,
            lag=config.lag_policy,
            timeout=config.timeout_s,
            reconnect=config.reconnect,
            reconnect_window=config.reconnect_window_s,
            transport=config.transport,
            pace=config.pace,
            camera=config.camera,
        )
    except SourceError as exc:  # a local file or device that is no video: bad input
        if config.source is not None and "://" not in str(config.source):
            raise ValueError(str(exc)) from None
        raise
    if reader is None:
        if config.lag_policy == "drop":
            raise ValueError("--lag drop needs a live source (a stream, a camera, or --live)")
        # here, not above: a live source is read with PyAV, without torchcodec's libraries
        from baglm_nb.inputs.video import check_video_file

        check_video_file(config.source, growing=config.growing)
    elif reader.source.kind != "file":
        reader.start()  # drain the stream while the model loads
    return reader
