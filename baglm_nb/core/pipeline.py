"""Observations + dependency matrices -> beliefs -> the paper's numbers.

The thin layer that the CLI, the notebooks and the tables share: resolve the dependency source
(:mod:`baglm_nb.core.sources`), run the filter over every video of an
:class:`~baglm_nb.core.observations.Observations`, and evaluate BaGLM beside the off-the-shelf
baseline (the raw scores). The filter runs in the observations' ``precision``
(``float32-published`` on the authors' imported files); :func:`precision_agreement` counts the
(video, step) pairs whose best row the two precisions disagree on.

Exports :func:`run_baglm`, :func:`compare` and :func:`precision_agreement`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tqdm.auto import tqdm

from baglm_nb.core import sources
from baglm_nb.core.evaluation import best_rows, evaluate
from baglm_nb.core.filtering import PRECISIONS, check_stay, run_filter
from baglm_nb.core.observations import Observations
from baglm_nb.core.online_metrics import measure, online_keys
from baglm_nb.core.oracles import oracle_progress
from baglm_nb.inputs.datasets import Video, dataset_spec
from baglm_nb.inputs.metric_specs import metric_spec

__all__ = ["compare", "online_quality", "precision_agreement", "run_baglm"]


def run_baglm(
    obs: Observations,
    deps: sources.DependencySource = "oracle",
    *,
    transition: str = "both",
    prior: str = "uniform",
    stepping: str = "second",
    progress: str = "scores",
    videos: list[Video] | None = None,
    progress_bar: bool = False,
    smoothing_lag_s: int | None = 0,
    stay: float = 0.0,
) -> dict[str, np.ndarray]:
    """Beliefs (T, K+1) for every video of ``obs`` (or of ``videos``, a subset of it).

    ``deps`` is any deps setting of :mod:`baglm_nb.core.sources`. ``progress="oracle"``
    replaces the observed progress with the ground-truth fraction of completion (Tab. oracle).
    ``prior="next_step"`` needs ``obs.next_step``. The filter runs in ``obs.precision``;
    ``smoothing_lag_s`` (seconds, None for inf) smooths it and ``stay`` (beyond the paper) mixes
    its transitions with staying (both float64 only, see ``run_filter``).
    """
    if progress not in ("scores", "oracle"):
        raise ValueError(f"progress must be 'scores' or 'oracle', got {progress!r}")
    stay = check_stay(stay, obs.precision)  # one message, not one per video
    resolved = sources.dependencies(obs.dataset, deps)
    if resolved is None:
        raise KeyError(f"no dependency source for {obs.dataset}; add it to deps")
    todo = [v for v in (obs.videos if videos is None else videos) if v.uid in obs.vsg]
    beliefs = {}
    for video in tqdm(todo, desc=f"filter {obs.dataset}", disable=not progress_bar):
        vsg = obs.vsg[video.uid]
        prog = obs.progress[video.uid]
        if progress == "oracle":
            prog = oracle_progress(video, vsg.shape[0])
        try:
            beliefs[video.uid] = run_filter(
                vsg,
                prog,
                resolved.matrix(video),
                transition=transition,
                prior=prior,
                next_step=obs.next_step.get(video.uid) if prior == "next_step" else None,
                stepping=stepping,
                segment_duration=obs.segment_duration,
                precision=obs.precision,
                smoothing_lag_s=smoothing_lag_s,
                stay=stay,
            )
        except ValueError as exc:  # bad inputs: name the video and the source
            raise ValueError(f"{obs.dataset} video {video.uid!r} ({obs.label}): {exc}") from None
    return beliefs


def compare(
    obs: Observations,
    deps: sources.DependencySource = "oracle",
    *,
    online: dict | None = None,
    **kwargs,
) -> dict[str, Any]:
    """BaGLM and the off-the-shelf baseline on the same videos, in percent.

    Returns ``{"dataset", "source", "precision", "videos", "metric", "baglm",
    "off_the_shelf", "metrics"}`` (``source`` is the observations' label, which records the
    precision on imported files; ``metric`` the key of the number in ``baglm`` and
    ``off_the_shelf``, the dataset's R@1 or Avg. R@1), plus ``"online"``
    (:func:`online_quality`) when ``online`` gives its ``threshold`` and ``patience``;
    ``metrics`` describes every metric key of the result (its
    :meth:`~baglm_nb.inputs.metric_specs.MetricSpec.describe`: label, unit, description,
    aggregation, higher is better). Other keyword arguments go to :func:`run_baglm`.
    """
    videos = kwargs.pop("videos", None) or obs.videos
    beliefs = run_baglm(obs, deps, videos=videos, **kwargs)
    result = {
        "dataset": obs.dataset,
        "source": obs.label,
        "precision": obs.precision,
        "videos": len(beliefs),
        "metric": dataset_spec(obs.dataset).recall.metric,
        "baglm": evaluate(obs.dataset, beliefs, videos),
        "off_the_shelf": evaluate(obs.dataset, {u: obs.vsg[u] for u in beliefs}, videos),
    }
    keys = [result["metric"]]
    if online is not None:
        lag = kwargs.get("smoothing_lag_s", 0)
        result["online"] = online_quality(obs, beliefs, videos, smoothing_lag_s=lag, **online)
        keys += online_keys()
    result["metrics"] = {k: metric_spec(k).describe() for k in keys}
    return result


def online_quality(
    obs: Observations,
    beliefs: dict[str, np.ndarray],
    videos: list[Video],
    *,
    threshold: float = 0.5,
    patience: int = 2,
    smoothing_lag_s: int | None = 0,
) -> dict[str, Any]:
    """The online metrics (:mod:`baglm_nb.core.online_metrics`) of BaGLM's ``beliefs`` (made
    with ``smoothing_lag_s`` seconds, None for inf) and of the off-the-shelf model's scores.

    Returns ``{"threshold", "patience", "smoothing_lag_s", "baglm": {...}, "off_the_shelf":
    {...}}``.
    """
    opts = {"segment_duration": obs.segment_duration, "threshold": threshold, "patience": patience}
    raw = {u: obs.vsg[u] for u in beliefs}
    return {
        "threshold": threshold,
        "patience": patience,
        "smoothing_lag_s": smoothing_lag_s,
        "baglm": measure(obs.dataset, videos, beliefs, lag_s=smoothing_lag_s, **opts),
        "off_the_shelf": measure(obs.dataset, videos, raw, scores=True, **opts),
    }


def precision_agreement(
    obs: Observations, deps: sources.DependencySource = "oracle", **kwargs
) -> dict[str, Any]:
    """How far the two precisions disagree on ``obs``: best rows, hits and R@1 of each.

    Runs the filter in ``float64`` and in ``float32-published`` on the same videos and
    dependencies. Returns ``{"pairs", "best_row_differs", "hit_differs", "baglm"}``: the number
    of evaluable (video, step) pairs, how many of them get a different best row, how many of
    those change between hit and miss, and ``{precision: R@1}``. Keyword arguments go to
    :func:`run_baglm`.
    """
    videos = kwargs.pop("videos", None) or obs.videos
    runs = {p: run_baglm(obs.with_precision(p), deps, videos=videos, **kwargs) for p in PRECISIONS}
    pairs = rows = hits = 0
    for video in videos:
        if video.uid not in runs[PRECISIONS[0]]:
            continue
        (steps, a, y), (_, b, _) = (best_rows(video, run[video.uid]) for run in runs.values())
        pairs += len(steps)
        rows += int((a != b).sum())
        hits += int((y[a, steps] != y[b, steps]).sum())
    return {
        "pairs": pairs,
        "best_row_differs": rows,
        "hit_differs": hits,
        "baglm": {p: evaluate(obs.dataset, run, videos) for p, run in runs.items()},
    }
