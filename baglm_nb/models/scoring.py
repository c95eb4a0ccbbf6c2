"""Batch scoring: stream every video of a dataset through a scorer into the score cache.

The **driver** (:func:`score_dataset`) decides which videos still need scores, hands them to an
**engine** and writes what comes back: the cache one video at a time (atomically), so a killed run
resumes without redoing finished videos and never leaves a half-written file; ``failures.json``
beside the cache for a video that cannot be read (recorded, never retried); and the summary. The
engine (:mod:`baglm_nb.models.dispatch`, the same as the dependency driver's) runs
:func:`score_task` on each video:

* ``"local"`` (default): in this process, one video after the other;
* ``"ray"``: Ray Core actors on a cluster, each loading the model once
  (:class:`~baglm_nb.models.ray_pool.RayOptions`; a dead worker is replaced and its video retried
  up to ``max_attempts`` times, then recorded). The cache is identical to the local engine's.

An engine scores a :class:`VideoTask` with a scorer built from a :class:`ScorerSpec` (a model id
and options: any back-end that :func:`make_scorer` can build, so a worker can load it itself) and
returns a :class:`VideoResult`. VSG and the K progress prompts of a batch of segments are scored
in **one** call, from one vision encoding and one shared prefix
(:mod:`baglm_nb.models.passes`). Per-segment timings are stored with the scores, for the timing
figure: ``decode_s``; ``vsg_s``, the vision encoding and shared prefix plus the VSG question's own
pass; ``progress_s``, the progress questions' own passes. A scorer that does not report its phases
gets one ``score_s`` column instead.
"""

from __future__ import annotations

import functools
import json
import os
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm.auto import tqdm

from baglm_nb.inputs.datasets import Video, load_dataset
from baglm_nb.inputs.grid import length_mismatch, num_segments
from baglm_nb.inputs.progress import bar_options
from baglm_nb.inputs.variants import SAMPLING_FPS, SEGMENT_DURATION
from baglm_nb.inputs.video_records import VideoError, find_video_file
from baglm_nb.models.dispatch import ENGINES, Engine, EngineSetting, make_engine
from baglm_nb.models.questions import ScoringError
from baglm_nb.models.ray_pool import Outcome
from baglm_nb.stores.atomic import atomic_write_json
from baglm_nb.stores.keys import ScoreKey

if TYPE_CHECKING:
    from baglm_nb.models.engine import Scorer
    from baglm_nb.stores.scores import ScoreCache

__all__ = [
    "ENGINES",
    "check_engine",
    "check_inputs",
    "ScorerSpec",
    "VideoResult",
    "VideoTask",
    "make_scorer",
    "score_dataset",
    "score_task",
    "score_video",
    "scorer_identity",
]

RANDOM_PREFIX = "random-init:"


def make_scorer(model: str, *, trust_remote_code: bool = False, **kwargs: Any) -> Scorer:
    """A scorer from a model id: a registry id or local folder (real weights),
    ``random-init:<family>`` for a tiny randomly initialised model (labelled ``random-init``,
    for tests and demos of the mechanics only), or ``openai:<name>`` for a model behind an
    OpenAI-compatible server (:class:`~baglm_nb.models.served.ServedScorer`; ``kwargs`` such as
    ``connection``, ``strategy`` go to it)."""
    from baglm_nb.models.served import ServedScorer, is_served, served_name

    if is_served(model):
        return ServedScorer(served_name(model), **kwargs)
    if model.startswith(RANDOM_PREFIX):
        from baglm_nb.models.testing import make_random_scorer

        return make_random_scorer(model[len(RANDOM_PREFIX) :], **kwargs)
    from baglm_nb.models.registry import load_scorer

    return load_scorer(model, trust_remote_code=trust_remote_code, **kwargs)


@dataclass(frozen=True)
class ScorerSpec:
    """How to build a scorer, small enough to send to a worker that loads the model itself.

    Parameters
    ----------
    model
        What :func:`make_scorer` takes: a registry id, a weights folder, ``random-init:<family>``.
    trust_remote_code
        See :func:`make_scorer`.
    options
        Keyword arguments of the scorer (e.g. ``{"segment_batch_size": 16}``).
    """

    model: str
    trust_remote_code: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)

    def __call__(self) -> Scorer:
        """Build the scorer (loads the model)."""
        return make_scorer(self.model, trust_remote_code=self.trust_remote_code, **self.options)


def scorer_identity(scorer: Scorer) -> tuple[str, str, str, dict[str, Any] | None]:
    """``(model id of the cache key, label, weights fingerprint, weights record)`` of a
    scorer; a random model's id says so; the fingerprint is ``""`` and the record ``None`` for
    a scorer without them (the record: what the fingerprint stands for, ``weights.json``)."""
    model_id, label = str(scorer.model_id), str(getattr(scorer, "label", ""))
    if label == "random-init" and "random-init" not in model_id:
        model_id = RANDOM_PREFIX + model_id  # the cache folder says what made the scores
    weights = str(getattr(scorer, "fingerprint", "") or "")
    return model_id, label, weights, getattr(scorer, "weights_record", None)


@dataclass(frozen=True)
class VideoTask:
    """One video to score: what a worker needs, and nothing it would have to look up."""

    uid: str
    path: str
    goal: str
    steps: tuple[str, ...]
    segment_duration: int = SEGMENT_DURATION
    sampling_fps: float = SAMPLING_FPS
    batch_segments: int = 16
    found: bool = True  # False: ``path`` is where the file was looked for
    num_frames: int = 0  # the annotation's video_num_frames and video_fps (0: unknown, no check)
    fps: float = 0.0


@dataclass
class VideoResult:
    """What scoring one video gave: its arrays and timings, or the error that is recorded.

    ``attempts`` counts the workers that tried it (more than 1 only when a worker died).
    """

    uid: str
    vsg: np.ndarray | None = None
    progress: np.ndarray | None = None
    timings: dict[str, np.ndarray] = field(default_factory=dict)
    error: str | None = None
    attempts: int = 1

    @property
    def num_segments(self) -> int:
        """Segments scored (0 for a failure)."""
        return 0 if self.vsg is None else int(self.vsg.shape[0])


def _split_timings(r: Any, wall: float) -> dict[str, float]:
    """A batch's seconds as the cache's timing columns (see the module docs)."""
    t = getattr(r, "timings", None) or {}
    if not t:
        return {"score_s": wall}
    return {
        "vsg_s": t.get("shared", 0.0) + t.get("vsg", 0.0) + t.get("bin", 0.0),
        "progress_s": t.get("prog", 0.0),
    }


def score_video(
    path: str | os.PathLike,
    video: Video | VideoTask,
    scorer: Scorer,
    *,
    segment_duration: int = SEGMENT_DURATION,
    sampling_fps: float = SAMPLING_FPS,
    batch_segments: int = 16,
    show_progress: bool = True,
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Score one video file: ``vsg`` (S, K+1), ``progress`` (S, K, 10), per-segment timings."""
    from baglm_nb.inputs.video import VideoError, iter_segments, probe

    info = probe(path)
    total = num_segments(info.num_frames, info.fps, segment_duration, sampling_fps)
    why = None
    if getattr(video, "num_frames", 0) and getattr(video, "fps", 0):  # annotated length known
        why = length_mismatch(
            video,
            total,
            what="the file",
            segment_duration=segment_duration,
            sampling_fps=sampling_fps,
        )
    if why:
        raise VideoError(path, f"{why}: {info.num_frames} frames at {info.fps:g} fps")
    vsg, prog = [], []
    timings: dict[str, list[float]] = {"decode_s": []}
    bar = tqdm(
        total=total,
        desc=video.uid,
        unit="seg",
        leave=False,
        disable=not show_progress,
        **bar_options(),
    )
    batches = iter_segments(
        path,
        segment_duration=segment_duration,
        sampling_fps=sampling_fps,
        batch_segments=batch_segments,
    )
    for batch in batches:
        b = batch.num_segments
        t0 = time.perf_counter()
        try:
            r = scorer.score_segments(batch.frames, video.goal, video.steps)  # VSG + progress
        except ScoringError as exc:  # name the video and the segment
            done = len(timings["decode_s"])
            raise exc.located(video.uid, done, segment_duration) from None
        wall = time.perf_counter() - t0
        vsg.append(r.vsg)
        prog.append(r.progress)
        timings["decode_s"] += [batch.decode_s / b] * b
        for name, seconds in _split_timings(r, wall).items():
            timings.setdefault(name, []).extend([seconds / b] * b)
        bar.update(b)
    bar.close()
    k = len(video.steps)
    v = np.concatenate(vsg) if vsg else np.zeros((0, k + 1))
    p = np.concatenate(prog) if prog else np.zeros((0, k, 10))
    if not vsg:
        timings.update(vsg_s=[], progress_s=[])
    return v, p, {name: np.asarray(x, dtype=np.float64) for name, x in timings.items()}


def check_inputs(
    dataset: str,
    video_dir: str | os.PathLike,
    *,
    annotations: str | os.PathLike | None = None,
    limit: int | None = None,
) -> list[Video]:
    """The videos to score, after checking the inputs (before any model is loaded).

    Raises ``ValueError`` / ``FileNotFoundError`` naming the folder, file or option: a
    ``video_dir`` that is not a folder, an unreadable annotation file, a non-positive limit.
    """
    if limit is not None and limit < 1:
        raise ValueError(f"--limit must be a positive number of videos, got {limit}")
    if not Path(video_dir).is_dir():
        raise FileNotFoundError(f"--video-dir {video_dir}: not a folder")
    return list(load_dataset(dataset, annotations))[:limit]


def score_task(scorer: Scorer, task: VideoTask, show_progress: bool = False) -> VideoResult:
    """Score one :class:`VideoTask`: its arrays, or the error that is recorded.

    Every engine scores through this function. Any failure of this one video (a decoder's, the
    model's, ``MemoryError`` included) becomes the result's ``error``, so one bad video never
    stops a run; only a :class:`~baglm_nb.models.openai_client.ServerError` (the server, not the
    video, failed) and ``KeyboardInterrupt`` propagate.
    """
    from baglm_nb.models.openai_client import ServerError

    try:
        if not task.found:
            raise VideoError(task.path, "no file for this video uid")
        vsg, prog, timings = score_video(
            task.path,
            task,
            scorer,
            segment_duration=task.segment_duration,
            sampling_fps=task.sampling_fps,
            batch_segments=task.batch_segments,
            show_progress=show_progress,
        )
    except (VideoError, ScoringError) as exc:
        return VideoResult(task.uid, error=str(exc))
    except ServerError:
        raise
    except Exception as exc:  # noqa: BLE001 - recorded for this video; the run goes on
        return VideoResult(task.uid, error=_failure(task, exc))
    return VideoResult(task.uid, vsg, prog, timings)


def _failure(task: VideoTask, exc: BaseException) -> str:
    """The failure record of an unexpected error while scoring ``task``: the file, the type and
    the first line of the message."""
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0].strip()}" if lines else type(exc).__name__
    return f"{task.path}: {text[:500]}"


# --------------------------------------------------------------------------------------------
# the driver


#: Why a served model does not run on the Ray engine.
SERVED_ON_RAY = (
    "--engine ray loads a local model in each worker; a served model scales with --concurrency "
    "(and the server's replicas)"
)


def check_engine(
    scorer: Scorer | str | ScorerSpec, engine: EngineSetting, *, served: bool = False
) -> None:
    """Refuse a served model (``openai:<name>``, or any with ``served``) on the Ray engine:
    ValueError."""
    from baglm_nb.models.served import is_served

    model = scorer.model if isinstance(scorer, ScorerSpec) else scorer
    if engine != "local" and (served or (isinstance(model, str) and is_served(model))):
        raise ValueError(SERVED_ON_RAY)


def _engine(engine: EngineSetting, scorer: Scorer | str | ScorerSpec) -> Engine:
    """The engine of the setting, holding the scorer (built from a model id or spec)."""
    check_engine(scorer, engine)
    if isinstance(scorer, (str, ScorerSpec)):
        spec = ScorerSpec(scorer) if isinstance(scorer, str) else scorer
        return make_engine(engine, scorer_identity, build=spec)
    return make_engine(
        engine,
        scorer_identity,
        loaded=scorer,
        what="the model id (e.g. 'internvl3-8b') or a ScorerSpec, not a loaded scorer",
    )


class _DriverBar:
    """The driver's bar: videos done, failed, in flight, and segments per second."""

    def __init__(self, total: int, desc: str, engine: Engine, show: bool) -> None:
        self.engine, self.start = engine, time.perf_counter()
        self.failed = self.segments = 0
        self.bar = tqdm(total=total, desc=desc, unit="video", disable=not show, **bar_options())

    def update(self, result: VideoResult | None = None) -> None:
        """Count a finished video (``None``: refresh the figures only)."""
        if result is not None:
            self.failed += result.error is not None
            self.segments += result.num_segments
            self.bar.update(1)
        rate = self.segments / max(time.perf_counter() - self.start, 1e-9)
        self.bar.set_postfix(
            failed=self.failed, in_flight=self.engine.in_flight, seg_s=f"{rate:.2f}", refresh=False
        )
        self.bar.refresh()

    def close(self) -> None:
        """Close the bar."""
        self.bar.close()


def _cached(cache: ScoreCache, videos: Sequence[Video]) -> tuple[list[str], list[str]]:
    """The videos already in the cache, and the cached files that are unreadable (truncated:
    they are scored again)."""
    stored = [v.uid for v in videos if cache.has(v.uid)]
    unreadable = [uid for uid in stored if not cache.is_readable(uid)]
    return [uid for uid in stored if uid not in unreadable], unreadable


def _resume(
    cache: ScoreCache, videos: Sequence[Video], annotation: Path | None
) -> tuple[list[str], list[str], list[str]]:
    """Resuming: the videos cached for their current steps (done), the unreadable ones and
    the stale ones (stored for other steps: :mod:`baglm_nb.stores.provenance`); the cache
    records the SHA-256 of ``annotation`` (the file the videos come from, when known)."""
    from baglm_nb.stores.provenance import file_sha256

    cache.annotation_sha256 = None if annotation is None else file_sha256(annotation)
    done, unreadable = _cached(cache, videos)
    stale = cache.stale([v for v in videos if v.uid in set(done)])
    return [uid for uid in done if uid not in stale], unreadable, stale


def _record(
    cache: ScoreCache, failures_path: Path, failures: dict[str, str], video: Video, r: VideoResult
) -> bool:
    """Write one result (the cache, or ``failures.json``); True when the video was scored."""
    if r.error is not None:
        failures[video.uid] = r.error
        atomic_write_json(failures_path, failures)
        return False
    cache.write_video(video.uid, r.vsg, r.progress, steps=video.steps, timings=r.timings)
    if failures.pop(video.uid, None) is not None:
        atomic_write_json(failures_path, failures)
    return True


def score_dataset(
    dataset: str,
    video_dir: str | os.PathLike,
    scorer: Scorer | str | ScorerSpec,
    *,
    root: str | os.PathLike | None = None,
    segment_duration: int = SEGMENT_DURATION,
    sampling_fps: float = SAMPLING_FPS,
    limit: int | None = None,
    batch_segments: int = 16,
    videos: Sequence[Video] | None = None,
    annotations: str | os.PathLike | None = None,
    show_progress: bool = True,
    engine: EngineSetting = "local",
) -> dict[str, Any]:
    """Score the videos of ``dataset`` found in ``video_dir`` into a score cache.

    ``scorer`` is a loaded scorer (local engine), or a model id or :class:`ScorerSpec` that the
    engine builds (the ``"ray"`` engine needs one of these: each worker loads the model).
    ``engine`` is ``"local"`` (default), ``"ray"`` or a
    :class:`~baglm_nb.models.ray_pool.RayOptions`. ``root`` defaults to the project's
    ``data/cache``. Returns a summary: the cache folder, videos scored now, already cached,
    cached files found unreadable (truncated) and rescored (``rescored_unreadable``), cached
    videos stored for other steps than the annotation's and rescored (``rescored_stale``), failed
    (with their errors, also kept in ``failures.json`` in the cache folder), the videos that
    needed more than one attempt (``attempts``, uid -> workers that tried it), the engine, the
    label of the scorer (``random-init`` for tiny test models) and ``seconds``: ``startup``
    (until the model is loaded), ``scoring`` (from then to the last video) and ``driver`` (the
    part of it the driver spent writing and reporting).
    """
    from baglm_nb.inputs.datasets import annotation_path, data_dir

    root = data_dir() / "cache" if root is None else root
    annotation = annotation_path(dataset, annotations) if annotations or videos is None else None
    videos = (
        check_inputs(dataset, video_dir, annotations=annotations, limit=limit)
        if videos is None
        else list(videos)[:limit]
    )
    by_uid = {v.uid: v for v in videos}
    t0 = time.perf_counter()
    with _engine(engine, scorer) as eng:
        model_id, label, weights, _ = identity = eng.identity()
        t_ready = time.perf_counter()
        cache = _open_cache(root, dataset, identity, segment_duration, sampling_fps)
        failures_path = cache.path / "failures.json"
        failures = _read_failures(failures_path)
        done_before, unreadable, stale = _resume(cache, videos, annotation)
        tasks = [
            _task(v, video_dir, segment_duration, sampling_fps, batch_segments)
            for v in videos
            if v.uid not in done_before
        ]
        bar = _DriverBar(len(tasks), f"score {dataset}", eng, show_progress)
        try:
            scored, attempts, driver = _drive(
                eng, tasks, bar, cache, failures_path, failures, by_uid, show_progress
            )
        finally:
            bar.close()
        t_end = time.perf_counter()
    return {
        "cache": str(cache.path),
        "model": model_id,
        "weights": weights,
        "label": label,
        "engine": eng.name,
        "scored": scored,
        "already_cached": done_before,
        "rescored_unreadable": unreadable,
        "rescored_stale": stale,
        "failed": {u: failures[u] for u in failures if u in by_uid},
        "attempts": attempts,
        "seconds": {
            "startup": round(t_ready - t0, 3),
            "scoring": round(t_end - t_ready, 3),
            "driver": round(driver, 3),
        },
    }


def _score_key(
    dataset: str, model_id: str, weights: str, segment_duration: int, sampling_fps: float
) -> ScoreKey:
    """The key of a model's LMM scores (prompt version: the VSG and the progress prompts')."""
    from baglm_nb.models.prompts import PROMPTS

    version = f"{PROMPTS['vsg'].version}+{PROMPTS['prog'].version}"
    return ScoreKey(dataset, model_id, version, segment_duration, sampling_fps, weights=weights)


def _check_weights(folder: Path, record: Mapping[str, Any] | None) -> None:
    """Refuse to resume a served model's cache whose stored canary the server now answers
    differently (another model behind the same name and description): ``ServerError``
    naming both canaries and the folder."""
    from baglm_nb.models.served_checks import ServerRefused, canary_refusal
    from baglm_nb.stores.scores import read_weights_record

    stored = read_weights_record(folder) if folder.is_dir() else None
    if not record or not stored or "canary" not in record or "canary" not in stored:
        return
    why = canary_refusal(stored["canary"], record["canary"])
    if why:
        raise ServerRefused(
            f"the served model is not the one whose scores are in {folder}: {why}; serve that "
            "model again to resume, or score into another --cache-root (or move that folder away)"
        )


def _open_cache(
    root: str | os.PathLike,
    dataset: str,
    identity: tuple[str, str, str, Mapping[str, Any] | None],
    segment_duration: int,
    sampling_fps: float,
) -> ScoreCache:
    """The score cache of a model's LMM scores (``identity``: :func:`scorer_identity`'s),
    after :func:`_check_weights`, with the one-line warning when the weights have no
    fingerprint; ``record`` is written as its ``weights.json`` the
    first time, or when the stored canary was asked differently (a served cache from before
    canaries: said in one line, since its model cannot be checked)."""
    from baglm_nb.models.served_checks import canary_refusal
    from baglm_nb.stores.caches import create_cache  # pandas: the driver's, not a worker's
    from baglm_nb.stores.scores import read_weights_record, warn_unfingerprinted

    model_id, _, weights, record = identity
    key = _score_key(dataset, model_id, weights, segment_duration, sampling_fps)
    _check_weights(Path(root) / key.relpath(), record)  # before anything is written
    cache = create_cache(root, key)
    warn_unfingerprinted(cache)
    if record is None:
        return cache
    stored = read_weights_record(cache.path)
    if stored is not None and (
        "canary" not in record
        or ("canary" in stored and canary_refusal(stored["canary"], record["canary"]) != "")
    ):
        return cache
    if "canary" in record and cache.uids():
        warnings.warn(
            f"{cache.path}: scores cached without a canary comparable to this run's: that the "
            "server still serves the model that made them cannot be checked; its canary is "
            "recorded now",
            stacklevel=3,
        )
    cache.write_weights_record(record)
    return cache


def _read_failures(path: Path) -> dict[str, str]:
    """The failures recorded by earlier runs (``uid -> error``), or none yet."""
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def _drive(
    eng: Engine,
    tasks: list,
    bar: _DriverBar,
    cache: ScoreCache,
    failures_path: Path,
    failures: dict[str, str],
    by_uid: dict[str, Video],
    show_progress: bool,
) -> tuple[list[str], dict[str, int], float]:
    """Run the engine, recording each result as it comes: (scored uids, attempts, driver s)."""
    scored, attempts, driver = [], {}, 0.0
    fn = functools.partial(score_task, show_progress=show_progress and eng.in_process)
    for out in eng.imap(fn, [(t.uid, t) for t in tasks]):
        d0 = time.perf_counter()
        r = None if out is None else _result(out)
        if r is not None and _record(cache, failures_path, failures, by_uid[r.uid], r):
            scored.append(r.uid)
        if r is not None and r.attempts > 1:
            attempts[r.uid] = r.attempts
        bar.update(r)  # None: no video finished for a while (ray engine)
        driver += time.perf_counter() - d0
    return scored, attempts, driver


def _result(out: Outcome) -> VideoResult:
    """The :class:`VideoResult` of an engine's outcome (a worker that died: its error)."""
    if out.error is not None:
        return VideoResult(out.key, error=out.error, attempts=out.attempts)
    out.result.attempts = out.attempts
    return out.result


def _task(
    video: Video, video_dir: Any, segment_duration: int, sampling_fps: float, batch_segments: int
) -> VideoTask:
    """The :class:`VideoTask` of one video (its file found in ``video_dir``)."""
    path = find_video_file(video_dir, video.uid)
    where = Path(video_dir or ".") / video.uid if path is None else Path(path).resolve()
    return VideoTask(
        video.uid,
        str(where),
        video.goal,
        tuple(video.steps),
        segment_duration,
        sampling_fps,
        batch_segments,
        found=path is not None,
        num_frames=video.num_frames,
        fps=video.fps,
    )
