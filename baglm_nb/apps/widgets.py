"""An ipywidgets explorer of one video at a time (notebook ``explore.ipynb``).

Pick a dataset and a video; choose the transition variant, the prior and the stepping; binarise
the dependency matrix at a threshold; move the simulated observation quality (signal strength)
and the segment duration. Every change recomputes that one video (simulate it, or read its
cached scores; run the numba filter; per-video R@1) and redraws the belief plot by replacing the
curves of the existing matplotlib artists and rendering a PNG into an ``ipywidgets.Image``, so
it needs no interactive matplotlib backend and works headless (ipympl is not required). A
recompute takes a few tens of milliseconds (``benchmarks/widget_latency.py``).

The computation is :func:`compute_video` (no widgets), which the tests drive directly.
"""

from __future__ import annotations

import html
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import ipywidgets as widgets
import numpy as np

from baglm_nb.analyses.plots import BeliefFigure
from baglm_nb.analyses.tables import DATASET_NAMES, title_for
from baglm_nb.core import sources
from baglm_nb.core.evaluation import video_hits
from baglm_nb.core.filtering import TRANSITIONS, run_filter
from baglm_nb.core.observations import Observations
from baglm_nb.core.simulate import SimulationParams, per_second, simulate_video
from baglm_nb.inputs.datasets import Video

__all__ = ["Explorer", "VideoResult", "binarise", "compute_video", "video_recall"]

DEFAULT_DATASETS = ("htstep", "crosstask", "ego4d_goalstep", "coin")


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


def compute_video(
    video: Video,
    *,
    rows: tuple[np.ndarray, np.ndarray] | None = None,
    params: SimulationParams | None = None,
    label: str = "simulated",
    deps: Any = "oracle",
    threshold: float | None = None,
    transition: str = "both",
    prior: str = "uniform",
    stepping: str = "second",
    next_step: np.ndarray | None = None,
    precision: str = "float64",
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
        Simulation parameters (default: the calibrated CPU default); their
        ``segment_duration`` is also the segment length for ``stepping="segment"``.
    label : str
        The source label of ``rows``.
    deps : str, mapping or cache
        A deps setting of :mod:`baglm_nb.core.sources` (no source: D = 0).
    threshold : float, optional
        Binarise D at this threshold (:func:`binarise`); None keeps D as it is.
    transition, prior, stepping, next_step, precision
        Passed to :func:`baglm_nb.core.filtering.run_filter` (``precision``: the observations'
        own, ``float32-published`` on imported files; ``label`` should record it).
    """
    start = time.perf_counter()
    params = SimulationParams() if params is None else params
    if rows is None:
        vsg, progress = per_second(simulate_video(video, params))
        label = "simulated"
    else:
        vsg, progress = rows
    resolved = sources.dependencies(deps, video.dataset)
    d = binarise(
        resolved.matrix(video) if resolved else np.zeros((video.num_steps,) * 2), threshold
    )
    beliefs = run_filter(
        vsg,
        progress,
        d,
        transition=transition,
        prior=prior,
        next_step=next_step if prior == "next_step" else None,
        stepping=stepping,
        segment_duration=int(params.segment_duration),
        precision=precision,
    )
    return VideoResult(
        uid=video.uid,
        label=label,
        beliefs=beliefs,
        scores=vsg,
        recall_baglm=video_recall(video, beliefs),
        recall_off_the_shelf=video_recall(video, vsg),
        seconds=time.perf_counter() - start,
    )


def _fmt_recall(name: str, recall: tuple[float, int, int]) -> str:
    value, hits, n = recall
    if not n:
        return f"{name}: n/a (no evaluable step)"
    return f"{name}: {value:.1f}% ({hits}/{n} steps)"


class Explorer:
    """The widget explorer: controls, the belief plot, the ground truth and per-video R@1.

    Parameters
    ----------
    datasets : sequence of str
        Datasets offered in the dataset menu.
    dataset : str
        The dataset shown first.
    video : str, optional
        The uid shown first (default: the dataset's first video).
    scores : mapping, optional
        Dataset -> score-cache folder or :class:`~baglm_nb.core.observations.Observations`; those
        datasets show cached scores (the simulation sliders are then disabled), the others
        simulated ones.
    deps : str or mapping
        ``"oracle"`` (default), ``"none"``, or dataset -> dependency-cache folder (datasets
        missing from the mapping use D = 0, and the status line says so).
    max_videos : int, optional
        Offer only the first ``max_videos`` videos of a dataset in the video menu.
    params : SimulationParams, optional
        Starting simulation parameters (default: the calibrated CPU default).
    figsize, dpi
        Size and resolution of the rendered plot.

    Attributes
    ----------
    widget : ipywidgets.VBox
        The whole explorer; display it in a notebook.
    result : VideoResult
        The latest recomputation.
    """

    def __init__(
        self,
        datasets: Sequence[str] = DEFAULT_DATASETS,
        *,
        dataset: str | None = None,
        video: str | None = None,
        scores: Mapping[str, str | os.PathLike | Observations] | None = None,
        deps: Any = "oracle",
        max_videos: int | None = 500,
        params: SimulationParams | None = None,
        figsize: tuple[float, float] = (10.0, 5.6),
        dpi: float = 80,
    ) -> None:
        self.datasets = list(datasets)
        self.scores = dict(scores or {})
        self.deps = deps
        self.max_videos = max_videos
        self.params = SimulationParams() if params is None else params
        self.figsize, self.dpi = figsize, dpi
        self._observations: dict[str, Observations] = {}
        self._plot: BeliefFigure | None = None
        self._plot_key: tuple | None = None
        self._hold = False
        self.result: VideoResult | None = None
        self.recomputes = 0

        first = dataset or self.datasets[0]
        self._build_controls(first)
        layout = widgets.Layout(width="auto")
        self.widget = widgets.VBox(
            [
                widgets.HBox([self.dataset, self.video], layout=layout),
                widgets.HBox([self.transition, self.prior, self.stepping], layout=layout),
                widgets.HBox([self.binarise, self.threshold], layout=layout),
                widgets.HBox([self.signal, self.segment_duration], layout=layout),
                self.recall,
                self.image,
                self.status,
            ]
        )
        self.widget.add_class("baglm-explorer")

        self._fill_videos(first, video)
        self.dataset.observe(self._on_dataset, names="value")
        for w in (
            self.video,
            self.transition,
            self.prior,
            self.stepping,
            self.threshold,
            self.signal,
            self.segment_duration,
        ):
            w.observe(self._on_change, names="value")
        self.binarise.observe(self._on_binarise, names="value")
        self._sync_source()
        self.recompute()

    def _build_controls(self, first: str) -> None:
        """The menus, sliders and output widgets (CSS classes for the browser test)."""
        style = {"description_width": "initial"}
        self.dataset = widgets.Dropdown(
            options=[(DATASET_NAMES.get(n, n), n) for n in self.datasets],
            value=first,
            description="dataset",
        )
        self.video = widgets.Dropdown(description="video", layout=widgets.Layout(width="460px"))
        self.transition = widgets.Dropdown(
            options=list(TRANSITIONS), value="both", description="transition"
        )
        self.prior = widgets.Dropdown(
            options=["uniform", "propagated"], value="uniform", description="prior"
        )
        self.stepping = widgets.ToggleButtons(
            options=["second", "segment"], value="second", description="stepping", style=style
        )
        self.binarise = widgets.Checkbox(value=False, description="binarise D", indent=False)
        self.threshold = widgets.FloatSlider(
            value=0.5,
            min=0.0,
            max=1.0,
            step=0.05,
            description="D threshold",
            continuous_update=False,
            disabled=True,
            style=style,
        )
        self.signal = widgets.FloatSlider(
            value=round(self.params.signal, 2),
            min=0.0,
            max=4.0,
            step=0.05,
            description="observation quality (signal)",
            continuous_update=False,
            style=style,
            layout=widgets.Layout(width="420px"),
        )
        self.segment_duration = widgets.IntSlider(
            value=int(self.params.segment_duration),
            min=1,
            max=4,
            step=1,
            description="segment (s)",
            continuous_update=False,
            style=style,
        )
        self.image = widgets.Image(format="png", layout=widgets.Layout(width="100%"))
        self.recall = widgets.HTML()
        self.status = widgets.HTML()
        self.signal.add_class("baglm-signal")
        self.segment_duration.add_class("baglm-segment")
        self.threshold.add_class("baglm-threshold")
        self.image.add_class("baglm-plot")
        self.recall.add_class("baglm-recall")
        self.status.add_class("baglm-status")

    # -- sources ---------------------------------------------------------------------------

    def _obs(self, name: str) -> Observations | None:
        if name not in self.scores:
            return None
        if name not in self._observations:
            self._observations[name] = sources.observations(name, self.scores)
        return self._observations[name]

    def _videos(self, name: str) -> list[Video]:
        obs = self._obs(name)
        return sources.select_videos(
            name, self.max_videos or None, among=None if obs is None else obs.vsg
        )

    def _fill_videos(self, name: str, uid: str | None = None) -> None:
        self._by_uid = {v.uid: v for v in self._videos(name)}
        options = [
            (f"{v.uid} \u00b7 {v.goal} (K={v.num_steps})", v.uid) for v in self._by_uid.values()
        ]
        if not options:
            raise ValueError(f"no videos to explore in {name}")
        if uid is not None and uid not in self._by_uid:
            raise ValueError(f"video {uid!r} is not among the offered videos of {name}")
        self._hold = True
        try:
            self.video.options = options
            self.video.value = uid if uid is not None else options[0][1]
        finally:
            self._hold = False

    def _sync_source(self) -> None:
        """Enable the simulation sliders only for simulated datasets; offer next_step if any."""
        obs = self._obs(self.dataset.value)
        cached = obs is not None
        self.signal.disabled = cached
        self.segment_duration.disabled = cached
        priors = ["uniform", "propagated"]
        if cached and obs.next_step:
            priors.append("next_step")
        self._hold = True
        try:
            if list(self.prior.options) != priors:
                current = self.prior.value
                self.prior.options = priors
                self.prior.value = current if current in priors else "uniform"
            if cached:
                self.segment_duration.value = int(obs.segment_duration)
        finally:
            self._hold = False

    def _deps_for(self, name: str) -> tuple[Any, str]:
        d = sources.dependencies(self.deps, name)
        if d is None:
            return "none", "no dependency cache for this dataset: D = 0"
        return d, f"D = {d.label}"

    # -- events ----------------------------------------------------------------------------

    def _on_dataset(self, change) -> None:
        self._fill_videos(change["new"])
        self._sync_source()
        self.recompute()

    def _on_binarise(self, change) -> None:
        self.threshold.disabled = not change["new"]
        self.recompute()

    def _on_change(self, _change) -> None:
        if not self._hold:
            self.recompute()

    # -- recompute -------------------------------------------------------------------------

    def recompute(self) -> VideoResult:
        """Recompute the current video and redraw; returns the new :class:`VideoResult`."""
        start = time.perf_counter()
        name = self.dataset.value
        video = self._by_uid[self.video.value]
        obs = self._obs(name)
        deps, deps_text = self._deps_for(name)
        if obs is None:
            params = replace(
                self.params,
                signal=float(self.signal.value),
                segment_duration=int(self.segment_duration.value),
            )
            rows, label, next_step, precision = None, "simulated", None, "float64"
        else:
            params = replace(self.params, segment_duration=int(obs.segment_duration))
            rows = (obs.vsg[video.uid], obs.progress[video.uid])
            label, next_step = obs.label, obs.next_step.get(video.uid)
            precision = obs.precision
        result = compute_video(
            video,
            rows=rows,
            params=params,
            label=label,
            deps=deps,
            threshold=float(self.threshold.value) if self.binarise.value else None,
            transition=self.transition.value,
            prior=self.prior.value,
            stepping=self.stepping.value,
            next_step=next_step,
            precision=precision,
        )
        t_rows = result.beliefs.shape[0]
        key = (name, video.uid, t_rows)
        if self._plot is None:
            self._plot = BeliefFigure(video, t_rows, figsize=self.figsize, dpi=self.dpi, blit=True)
        elif self._plot_key != key:
            self._plot.set_video(video, t_rows)
        self._plot_key = key
        what = f"{DATASET_NAMES.get(name, name)} {video.uid}: {video.goal}"
        self._plot.update(result.beliefs, result.scores, title_for(what, label))
        self.image.value = self._plot.png()
        self.recall.value = (
            "<b>R@1 on this video</b> \u2014 "
            + html.escape(_fmt_recall("BaGLM", result.recall_baglm))
            + " \u00b7 "
            + html.escape(_fmt_recall("off-the-shelf LMM", result.recall_off_the_shelf))
        )
        self.seconds = time.perf_counter() - start
        self.status.value = html.escape(
            f"observations: {label}; {deps_text}; {t_rows} rows, K={video.num_steps}; "
            f"recomputed in {self.seconds * 1000:.0f} ms"
        )
        self.result = result
        self.recomputes += 1
        return result
