"""Observations + dependency matrices -> beliefs -> the paper's numbers.

The thin layer that the CLI, the notebooks and the tables share: resolve the dependency source
(:mod:`baglm_nb.core.sources`), run the filter over every video of an
:class:`~baglm_nb.core.observations.Observations`, and evaluate BaGLM beside the off-the-shelf
baseline (the raw scores).

Exports :func:`run_baglm` and :func:`compare`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tqdm.auto import tqdm

from baglm_nb.core import sources
from baglm_nb.core.evaluation import evaluate
from baglm_nb.core.filtering import run_filter
from baglm_nb.core.observations import Observations
from baglm_nb.core.oracles import oracle_progress
from baglm_nb.inputs.datasets import Video

__all__ = ["compare", "run_baglm"]


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
    """Beliefs (T, K+1) for every video of ``obs`` (or of ``videos``, a subset of it).

    ``deps`` is any deps setting of :mod:`baglm_nb.core.sources`. ``progress="oracle"``
    replaces the observed progress with the ground-truth fraction of completion (Tab. oracle).
    ``prior="next_step"`` needs ``obs.next_step``.
    """
    if progress not in ("scores", "oracle"):
        raise ValueError(f"progress must be 'scores' or 'oracle', got {progress!r}")
    resolved = sources.dependencies(deps, obs.dataset)
    if resolved is None:
        raise KeyError(f"no dependency source for {obs.dataset}; add it to deps")
    todo = [v for v in (obs.videos if videos is None else videos) if v.uid in obs.vsg]
    beliefs = {}
    for video in tqdm(todo, desc=f"filter {obs.dataset}", disable=not progress_bar):
        vsg = obs.vsg[video.uid]
        prog = obs.progress[video.uid]
        if progress == "oracle":
            prog = oracle_progress(video, vsg.shape[0])
        beliefs[video.uid] = run_filter(
            vsg,
            prog,
            resolved.matrix(video),
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
    videos = kwargs.pop("videos", None) or obs.videos
    beliefs = run_baglm(obs, deps, videos=videos, **kwargs)
    return {
        "dataset": obs.dataset,
        "source": obs.label,
        "videos": len(beliefs),
        "baglm": evaluate(obs.dataset, beliefs, videos),
        "off_the_shelf": evaluate(obs.dataset, {u: obs.vsg[u] for u in beliefs}, videos),
    }
