"""Observations + dependency matrices -> beliefs -> the paper's numbers.

The thin layer that the CLI and the notebooks share: pick D per video, run the filter over
every video of an :class:`~baglm_nb.observations.Observations`, and evaluate BaGLM beside the
off-the-shelf baseline (the raw scores).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from baglm_nb.datasets import Video, load_dataset
from baglm_nb.evaluation import evaluate
from baglm_nb.filtering import run_filter
from baglm_nb.observations import Observations
from baglm_nb.oracles import oracle_dependency, oracle_progress

__all__ = ["compare", "dependency_for", "run_baglm"]


def dependency_for(video: Video, deps: Any) -> np.ndarray:
    """D (K, K) for ``video`` from a dependency source.

    ``deps`` is ``"oracle"`` (the ground-truth chain of the video), ``"none"`` (all zeros: BaGLM
    reduces to the normalised scores), a mapping keyed by video uid or group key, or a
    :class:`~baglm_nb.cache.DependencyCache` (looked up by uid, then by group).
    """
    if isinstance(deps, str):
        if deps == "oracle":
            return oracle_dependency(video)
        if deps == "none":
            return np.zeros((video.num_steps, video.num_steps))
        raise ValueError(f"unknown dependency source {deps!r}; use 'oracle', 'none' or a cache")
    if isinstance(deps, Mapping):
        key = video.uid if video.uid in deps else video.group
        if key not in deps:
            raise KeyError(f"no dependency matrix for video {video.uid!r} (group {video.group!r})")
        d = np.asarray(deps[key], dtype=np.float64)
    else:
        key = video.uid if deps.has(video.uid) else video.group
        if not deps.has(key):
            raise KeyError(f"no dependency matrix for video {video.uid!r} (group {video.group!r})")
        d = deps.read(key)
    if d.shape != (video.num_steps, video.num_steps):
        raise ValueError(
            f"dependency matrix for group {key!r} is {d.shape}, video {video.uid!r} has "
            f"K={video.num_steps} steps"
        )
    return d


def run_baglm(
    obs: Observations,
    deps: Any = "oracle",
    *,
    transition: str = "both",
    prior: str = "uniform",
    stepping: str = "second",
    progress: str = "scores",
    videos: list[Video] | None = None,
    progress_bar: bool = False,
) -> dict[str, np.ndarray]:
    """Beliefs (T, K+1) for every video of ``obs``.

    ``progress="oracle"`` replaces the observed progress with the ground-truth fraction of
    completion (Tab. oracle). ``prior="next_step"`` needs ``obs.next_step``.
    """
    videos = load_dataset(obs.dataset) if videos is None else videos
    beliefs = {}
    todo = [v for v in videos if v.uid in obs.vsg]
    for video in tqdm(todo, desc=f"filter {obs.dataset}", disable=not progress_bar):
        vsg = obs.vsg[video.uid]
        prog = obs.progress[video.uid]
        if progress == "oracle":
            prog = oracle_progress(video, vsg.shape[0])
        elif progress != "scores":
            raise ValueError(f"progress must be 'scores' or 'oracle', got {progress!r}")
        beliefs[video.uid] = run_filter(
            vsg,
            prog,
            dependency_for(video, deps),
            transition=transition,
            prior=prior,
            next_step=obs.next_step.get(video.uid) if prior == "next_step" else None,
            stepping=stepping,
            segment_duration=obs.segment_duration,
        )
    return beliefs


def compare(obs: Observations, deps: Any = "oracle", **kwargs) -> dict[str, Any]:
    """BaGLM and the off-the-shelf baseline on the same videos, in percent.

    Returns ``{"dataset", "source", "videos", "baglm", "off_the_shelf"}``; keyword arguments
    go to :func:`run_baglm`.
    """
    videos = kwargs.pop("videos", None) or load_dataset(obs.dataset)
    beliefs = run_baglm(obs, deps, videos=videos, **kwargs)
    return {
        "dataset": obs.dataset,
        "source": obs.label,
        "videos": len(beliefs),
        "baglm": evaluate(obs.dataset, beliefs, videos),
        "off_the_shelf": evaluate(obs.dataset, {u: obs.vsg[u] for u in beliefs}, videos),
    }
