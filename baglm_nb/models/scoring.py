"""Batch scoring: stream every video of a dataset through a scorer into the score cache.

Videos are written to the cache one by one (atomically), so a killed run resumes without
redoing finished videos and never leaves a half-written file. A video that cannot be read is
recorded in ``failures.json`` next to the cache and the run goes on; so is a video whose
scores a scorer refuses (a :class:`~baglm_nb.models.questions.ScoringError`, e.g. an answer
token missing from a server's response), with the segment named. Per-segment timings
(``decode_s``, ``vsg_s``, ``progress_s``) are stored with the scores, for the timing figure.

VSG and progress are scored in two calls per batch of segments, so that their times can be
reported separately; within the progress call the K step prompts share the frames' prefix
(see :mod:`baglm_nb.models.engine`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from baglm_nb.inputs.datasets import Video, load_dataset
from baglm_nb.inputs.grid import length_mismatch, num_segments
from baglm_nb.inputs.video import find_video_file
from baglm_nb.models.questions import ScoringError
from baglm_nb.stores.atomic import atomic_write_json
from baglm_nb.stores.keys import ScoreKey
from baglm_nb.stores.scores import ScoreCache

__all__ = ["check_inputs", "make_scorer", "score_dataset", "score_video"]

RANDOM_PREFIX = "random-init:"


def make_scorer(model: str, *, trust_remote_code: bool = False, **kwargs: Any):
    """A scorer from a model id: a registry id or local folder (real weights),
    ``random-init:<family>`` for a tiny randomly initialised model (labelled ``random-init``,
    for tests and demos of the mechanics only), or ``openai:<name>`` for a model behind an
    OpenAI-compatible server (:class:`~baglm_nb.models.served.ServedScorer`; ``kwargs`` such as
    ``base_url``, ``api_key_env`` go to it)."""
    from baglm_nb.models.served import PREFIX, ServedScorer

    if model.startswith(PREFIX):
        return ServedScorer(model[len(PREFIX) :], **kwargs)
    if model.startswith(RANDOM_PREFIX):
        from baglm_nb.models.testing import make_random_scorer

        return make_random_scorer(model[len(RANDOM_PREFIX) :], **kwargs)
    from baglm_nb.models.registry import load_scorer

    return load_scorer(model, trust_remote_code=trust_remote_code, **kwargs)


def score_video(
    path: str | os.PathLike,
    video: Video,
    scorer: Any,
    *,
    segment_duration: int = 2,
    sampling_fps: float = 2.0,
    batch_segments: int = 16,
    show_progress: bool = True,
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Score one video file: ``vsg`` (S, K+1), ``progress`` (S, K, 10), per-segment timings."""
    from baglm_nb.inputs.video import VideoError, iter_segments, probe

    info = probe(path)
    total = num_segments(info.num_frames, info.fps, segment_duration, sampling_fps)
    why = length_mismatch(video, total, what="the file", segment_duration=segment_duration,
                          sampling_fps=sampling_fps)  # fmt: skip
    if why:
        raise VideoError(path, f"{why}: {info.num_frames} frames at {info.fps:g} fps")
    vsg, prog = [], []
    timings: dict[str, list[float]] = {"decode_s": [], "vsg_s": [], "progress_s": []}
    bar = tqdm(total=total, desc=video.uid, unit="seg", leave=False, disable=not show_progress)
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
            r_vsg = scorer.score_segments(batch.frames, video.goal, video.steps, progress=False)
            t1 = time.perf_counter()
            r_prog = scorer.score_segments(batch.frames, video.goal, video.steps, prompt=None)
        except ScoringError as exc:  # name the video and the segment
            done = len(timings["decode_s"])
            raise exc.located(video.uid, done, segment_duration) from None
        t2 = time.perf_counter()
        vsg.append(r_vsg.vsg)
        prog.append(r_prog.progress)
        timings["decode_s"] += [batch.decode_s / b] * b
        timings["vsg_s"] += [(t1 - t0) / b] * b
        timings["progress_s"] += [(t2 - t1) / b] * b
        bar.update(b)
    bar.close()
    k = video.num_steps
    v = np.concatenate(vsg) if vsg else np.zeros((0, k + 1))
    p = np.concatenate(prog) if prog else np.zeros((0, k, 10))
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


def score_dataset(
    dataset: str,
    video_dir: str | os.PathLike,
    scorer: Any,
    *,
    root: str | os.PathLike | None = None,
    segment_duration: int = 2,
    sampling_fps: float = 2.0,
    limit: int | None = None,
    batch_segments: int = 16,
    videos: Sequence[Video] | None = None,
    annotations: str | os.PathLike | None = None,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Score the videos of ``dataset`` found in ``video_dir`` into a score cache.

    ``root`` defaults to the project's ``data/cache``. Returns a summary: the cache folder,
    videos scored now, already cached, cached files found unreadable (truncated) and rescored,
    failed (with their errors, also kept in
    ``failures.json`` in the cache folder) and the label of the scorer (``random-init`` for
    tiny test models).
    """
    from baglm_nb.inputs.datasets import data_dir
    from baglm_nb.inputs.video import VideoError
    from baglm_nb.models.prompts import PROMPTS

    root = data_dir() / "cache" if root is None else root
    if videos is None:
        videos = check_inputs(dataset, video_dir, annotations=annotations, limit=limit)
    else:
        videos = list(videos)[:limit]
    model_id = scorer.model_id
    if getattr(scorer, "label", "") == "random-init" and "random-init" not in model_id:
        model_id = RANDOM_PREFIX + model_id  # the cache folder says what made the scores
    version = f"{PROMPTS['vsg'].version}+{PROMPTS['prog'].version}"
    cache = ScoreCache(root, ScoreKey(dataset, model_id, version, segment_duration,
                                      sampling_fps, source="lmm"))  # fmt: skip
    failures_path = cache.path / "failures.json"
    failures: dict[str, str] = {}
    if failures_path.exists():
        failures = json.loads(failures_path.read_text(encoding="utf-8"))
    stored = [v.uid for v in videos if cache.has(v.uid)]
    unreadable = [uid for uid in stored if not cache.is_readable(uid)]  # rescored below
    done_before = [uid for uid in stored if uid not in unreadable]
    todo = [v for v in videos if v.uid not in done_before]
    scored = []
    for video in tqdm(todo, desc=f"score {dataset}", unit="video", disable=not show_progress):
        path = find_video_file(video_dir, video.uid)
        try:
            if path is None:
                raise VideoError(Path(video_dir) / video.uid, "no file for this video uid")
            vsg, prog, timings = score_video(
                path, video, scorer, segment_duration=segment_duration,
                sampling_fps=sampling_fps, batch_segments=batch_segments,
                show_progress=show_progress,
            )  # fmt: skip
        except (VideoError, ScoringError) as exc:
            failures[video.uid] = str(exc)
            atomic_write_json(failures_path, failures)
            continue
        cache.write_video(video.uid, vsg, prog, steps=video.steps, timings=timings)
        scored.append(video.uid)
        if failures.pop(video.uid, None) is not None:
            atomic_write_json(failures_path, failures)
    return {
        "cache": str(cache.path),
        "model": model_id,
        "label": getattr(scorer, "label", ""),
        "scored": scored,
        "already_cached": done_before,
        "rescored_unreadable": unreadable,
        "failed": {u: failures[u] for u in failures if u in {v.uid for v in videos}},
    }
