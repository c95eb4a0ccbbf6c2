"""The explorer's computation, without widgets: one video filtered and scored.

:func:`compute_video` is what every change of :class:`baglm_nb.apps.widgets.Explorer` runs
(simulate the video or take its cached rows, resolve and optionally binarise D, run
:func:`baglm_nb.core.pipeline.run_baglm` on it, the filter the notebooks and the CLI run, per-video
R@1); the tests drive it directly.

Exports :class:`VideoResult`, :func:`binarise`, :func:`compute_video`, :func:`video_recall` and
:func:`format_recall`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from baglm_nb.core import sources
from baglm_nb.core.evaluation import video_hits
from baglm_nb.core.observations import Observations
from baglm_nb.core.pipeline import run_baglm
from baglm_nb.core.simulate import SimulationParams, default_params, per_second, simulate_video
from baglm_nb.inputs.datasets import Video

__all__ = ["VideoResult", "binarise", "compute_video", "format_recall", "video_recall"]


def binarise(dependency: np.ndarray, threshold: float | None) -> np.ndarray:
    """``D >= threshold`` as 0/1 floats (the convention of the violations table); ``None``: D.

    The diagonal is thresholded like every other entry.
    """
    d = np.asarray(dependency, dtype=np.float64)
    if threshold is None:
        return d
    return (d >= float(threshold)).astype(np.float64)


def video_recall(video: Video, beliefs: np.ndarray) -> tuple[float, int, int]:
    """Per-video R@1: ``(percent, hits, evaluable steps)``; NaN percent without steps."""
    steps, hits = video_hits(video, beliefs)
    n = len(steps)
    return (float(hits.mean() * 100) if n else float("nan")), int(hits.sum()), n


@dataclass(frozen=True)
class VideoResult:
    """One video's recomputation: beliefs, raw scores and per-video R@1 of both methods."""

    uid: str
    label: str
    beliefs: np.ndarray
    scores: np.ndarray
    recall_baglm: tuple[float, int, int]
    recall_off_the_shelf: tuple[float, int, int]
    seconds: float
    stay: float = 0.0


def compute_video(
    video: Video,
    *,
    rows: tuple[np.ndarray, np.ndarray] | None = None,
    params: SimulationParams | None = None,
    label: str = "simulated",
    deps: sources.DependencySource = sources.SIMULATED_LLM,
    threshold: float | None = None,
    transition: str = "both",
    prior: str = "uniform",
    stepping: str = "second",
    next_step: np.ndarray | None = None,
    precision: str = "float64",
    stay: float = 0.0,
) -> VideoResult:
    """Filter one video and score it, the explorer's recompute path (no widgets involved).

    Parameters
    ----------
    video : Video
        The annotated video.
    rows : (vsg, progress), optional
        Per-second observation rows (a score cache); without them the video is simulated
        with ``params`` (label ``simulated``).
    params : SimulationParams, optional
        Simulation parameters (default: the default twin's for the video's dataset); their
        ``segment_duration`` is also the segment length for ``stepping="segment"``.
    label : str
        The source label of ``rows``.
    deps : str, mapping or cache
        A deps setting of :mod:`baglm_nb.core.sources` (default ``simulated-llm:llama``, the
        tables' D; ``"none"``: D = 0). A setting without a source for the video's dataset is
        refused as :func:`~baglm_nb.core.pipeline.run_baglm` refuses it.
    threshold : float, optional
        Binarise D at this threshold (:func:`binarise`); None keeps D as it is.
    transition, prior, stepping, next_step, precision
        Passed to :func:`baglm_nb.core.pipeline.run_baglm` (``precision``: the observations'
        own, ``float32-published`` on imported files; ``label`` should record it).
    stay : float in [0, 1)
        Beyond the paper: transitions mixed with staying (0, the default, is the paper's filter;
        float64 only). Recorded in the result.
    """
    start = time.perf_counter()
    params = default_params(video.dataset) if params is None else params
    if rows is None:
        vsg, progress = per_second(simulate_video(video, params))
        label = "simulated"
    else:
        vsg, progress = rows
    resolved = sources.dependencies(video.dataset, deps)
    if resolved is not None and threshold is not None:
        d = binarise(resolved.matrix(video), threshold)
        resolved = sources.Dependencies(resolved.label, {video.uid: d}, resolved.kind)
    uid = video.uid
    rows_of = {uid: vsg}, {uid: progress}, {} if next_step is None else {uid: next_step}
    obs = Observations(video.dataset, label, int(params.segment_duration), *rows_of, [video])
    obs = obs.with_precision(precision)
    filtered = run_baglm(
        obs,
        deps if resolved is None else resolved,
        videos=[video],
        transition=transition,
        prior=prior,
        stepping=stepping,
        stay=stay,
    )
    beliefs = filtered[uid]
    return VideoResult(
        uid=video.uid,
        label=label,
        beliefs=beliefs,
        scores=vsg,
        recall_baglm=video_recall(video, beliefs),
        recall_off_the_shelf=video_recall(video, vsg),
        seconds=time.perf_counter() - start,
        stay=float(stay),
    )


def format_recall(name: str, recall: tuple[float, int, int]) -> str:
    """``BaGLM: 57.1% (4/7 steps)``, or ``n/a`` without an evaluable step."""
    value, hits, n = recall
    if not n:
        return f"{name}: n/a (no evaluable step)"
    return f"{name}: {value:.1f}% ({hits}/{n} steps)"
