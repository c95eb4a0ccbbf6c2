"""An ipywidgets explorer of one video at a time (notebook ``explore.ipynb``).

Pick a dataset and a video (the menu narrowed by a search box: words of the uid or the task);
choose the dependency matrix D (a simulated LLM's, the tables' default ``simulated-llm:llama``,
the oracle chain or none), the transition variant, the prior, the stepping and the view (heatmap
or lines); binarise D at a threshold; move the simulated observation quality (signal strength)
and the segment duration; mix the filter's transitions with staying (``stay``, beyond the paper,
0 by default). The title above the views (an HTML widget, not text in the image) names the
source, D and every setting. Every control has a tooltip; one that cannot change anything under
the current settings is disabled, its tooltip saying why. The sliders are one table,
:data:`SLIDERS`.

Every change recomputes that one video (simulate it, or read its cached scores; run the numba
filter; per-video R@1) and gives the belief views
(:class:`~baglm_nb.analyses.belief_views.BeliefFigure`: heatmap with the annotation outlined,
top-state strips, step legend) new data in place: the same figure, axes and artists, only the
data drawn again over the figure's cached background (a dataset or video switch may build
another figure). The pixels go to the browser as two PNG bands in ``ipywidgets.Image`` widgets
(above the legend; the legend), each sent only when it changed, so no interactive matplotlib
backend is needed and it works headless. ``benchmarks/explorer_latency.py`` times a change in
a browser; ``benchmarks/widget_latency.py`` the kernel's share.

The computation is :func:`~baglm_nb.apps.explorer_compute.compute_video` (no widgets, in
:mod:`baglm_nb.apps.explorer_compute`, re-exported here), which the tests drive directly.
"""

from __future__ import annotations

import html
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import ipywidgets as widgets
import numpy as np

from baglm_nb.analyses.belief_views import BeliefFigure
from baglm_nb.analyses.raster import png_bytes
from baglm_nb.analyses.tables import DATASET_NAMES, title_for
from baglm_nb.apps.explorer_compute import (
    VideoResult,
    binarise,
    compute_video,
    format_recall,
    video_recall,
)
from baglm_nb.core import sources
from baglm_nb.core.observations import Observations
from baglm_nb.core.simulate import SimulationParams, default_params
from baglm_nb.inputs.datasets import DATASETS, Video
from baglm_nb.inputs.variants import (
    BASE_PRIORS,
    PRIORS,
    PUBLISHED_PRECISION,
    STEPPINGS,
    TRANSITIONS,
    with_stay,
)

__all__ = ["Explorer", "VideoResult", "binarise", "compute_video", "video_recall"]

DEFAULT_DATASETS = tuple(DATASETS)

#: The D menu: deps settings (:mod:`baglm_nb.core.sources`) and their labels.
DEPS_CHOICES = {
    sources.SIMULATED_LLM: "simulated-llm:llama (the tables' D)",
    "simulated-llm:gpt": "simulated-llm:gpt",
    "oracle": "oracle (ground-truth chain)",
    "none": "none (D = 0)",
}
#: The D menu's entry for a ``deps`` argument that is none of :data:`DEPS_CHOICES`.
GIVEN = "given"

#: The sliders, in the order shown: name -> (widget class, minimum, maximum, step, start); None:
#: the simulation parameters' value (``signal``, ``segment``). To add one: an entry here, its
#: label and tooltip below, and its value read where the recomputation needs it.
SLIDERS = {
    "threshold": (widgets.FloatSlider, 0.05, 1.0, 0.05, 0.5),
    "signal": (widgets.FloatSlider, 0.0, 4.0, 0.05, None),
    "segment": (widgets.IntSlider, 1, 4, 1, None),
    "stay": (widgets.FloatSlider, 0.0, 0.99, 0.01, 0.0),
}

#: The label of each control.
CONTROL_NAMES = {
    "dataset": "dataset",
    "video": "video",
    "find": "find video",
    "deps": "dependencies D",
    "transition": "transition",
    "prior": "prior",
    "stepping": "stepping",
    "view": "view",
    "binarise": "binarise D",
    "threshold": "D threshold",
    "signal": "observation quality (signal)",
    "segment": "segment (s)",
    "stay": "stay (beyond the paper)",
}
#: The tooltip of each control while it is enabled.
CONTROL_TIPS = {
    "dataset": "The dataset whose annotated videos the video menu offers.",
    "video": "The video shown: uid \u00b7 task (K = its number of candidate steps).",
    "find": "Narrow the video menu to the videos whose uid or task contains these words (all "
    "of them, any case; press Enter); empty: every video.",
    "deps": "The dependency matrix D: a simulated LLM's (LLaMA-3.3-70B, the tables' default; "
    "GPT-4.1-mini), the ground-truth chain (oracle) or none (D = 0: BaGLM = the LMM's scores).",
    "transition": "BaGLM's transition: static = from the dependency matrix D only; readiness / "
    "validity also weigh each step by its prerequisites' / dependants' progress; both = the "
    "published model.",
    "prior": "Each second's prior: uniform, or the last belief propagated through the transition "
    "matrix (next_step: the cache's next-step scores).",
    "stepping": "second: each segment's observation is applied once per second (the published "
    "code); segment: once per segment (the paper's equations).",
    "view": "heatmap: steps x time with the annotated intervals outlined; lines: one curve per "
    "state (readable up to about 5 steps).",
    "binarise": "Replace the dependency matrix D by D >= threshold (0/1 entries).",
    "threshold": "The threshold of 'binarise D': entries of D at or above it become 1, the rest 0.",
    "signal": "Simulated observation quality: how strongly the simulated LMM scores favour the "
    "annotated step (higher = a better model).",
    "segment": "Simulated segment length in seconds (the LMM scores one segment at a time).",
    "stay": "Beyond the paper: each transition row mixed with staying, (1 - S) T + S I; 0 is the "
    "paper's filter. The title says so when S is not 0.",
}


class Explorer:
    """The widget explorer: controls, the belief views and per-video R@1.

    Every control has a tooltip (hover its label); a control that cannot change anything under
    the current settings is disabled and its tooltip says why (:meth:`control_state`).

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
        The D menu's first choice: ``"simulated-llm:llama"`` (default), ``"simulated-llm:gpt"``,
        ``"oracle"``, ``"none"``, or another deps setting, e.g. dataset -> dependency-cache
        folder (offered as ``given``; datasets missing from a mapping use D = 0, and the status
        line says so).
    max_videos : int, optional
        Offer at most ``max_videos`` videos (of those the search box lets through) in the menu.
    params : SimulationParams, optional
        Starting simulation parameters (default: the calibrated CPU default).
    width, dpi
        Width (inches) and resolution of the rendered views.
    prewarm : bool
        Visit each dataset once while building (:meth:`_prewarm`): a few seconds more to
        build, and a dataset switch then redraws an existing figure.

    Attributes
    ----------
    widget : ipywidgets.VBox
        The whole explorer; display it in a notebook.
    controls : dict
        The input widgets by name (``dataset``, ``video``, ``transition``, ``prior``,
        ``stepping``, ``view``, ``binarise``, ``threshold``, ``signal``, ``segment``).
    result : VideoResult
        The latest recomputation.
    """

    #: zlib level of the PNGs sent to the browser (:func:`~baglm_nb.analyses.raster.png_bytes`).
    png_level = 1

    def __init__(
        self,
        datasets: Sequence[str] = DEFAULT_DATASETS,
        *,
        dataset: str | None = None,
        video: str | None = None,
        scores: Mapping[str, str | os.PathLike | Observations] | None = None,
        deps: sources.DependencySource = sources.SIMULATED_LLM,
        max_videos: int | None = 500,
        params: SimulationParams | None = None,
        width: float = 11.0,
        dpi: float = 100,
        prewarm: bool = True,
    ) -> None:
        self.datasets = list(datasets)
        self.scores = dict(scores or {})
        self._given = None if isinstance(deps, str) and deps in DEPS_CHOICES else deps
        self._resolved: dict[tuple[str, str], Any] = {}
        self.max_videos = max_videos
        # the simulated source: each dataset's calibrated parameters unless ``params`` is given
        self._calibrated = params is None
        first = dataset if dataset in self.datasets else self.datasets[0]
        self.params = default_params(first) if params is None else params
        self.width, self.dpi = width, dpi
        self._observations: dict[str, Observations] = {}
        self._plots: dict[tuple[str, str], BeliefFigure] = {}  # (dataset, view) -> figure
        self._plot: BeliefFigure | None = None
        self._hold = False
        self._sent: dict[int, np.ndarray] = {}  # widget id -> the pixels it shows
        self.title_text = ""
        self.result: VideoResult | None = None
        self.recomputes = 0

        first = dataset or self.datasets[0]
        self._build_controls(first, GIVEN if self._given is not None else deps)
        self.widget = widgets.VBox(
            [self._grid(), self.recall, self.title, self.image, self.legend_image, self.status],
            layout=widgets.Layout(width="100%"),
        )
        self.widget.add_class("baglm-explorer")

        self._fill_videos(first, video)
        self.dataset.observe(self._on_dataset, names="value")
        self.find.observe(self._on_find, names="value")
        for name, w in self.controls.items():
            if name not in ("dataset", "find"):
                w.observe(self._on_change, names="value")
        self._sync_source()
        self.recompute()
        if prewarm:
            self._prewarm()

    def _prewarm(self) -> None:
        """Visit every other dataset once, then come back: each dataset's D is resolved and its
        first video's figure built and drawn, so that a first switch is as quick as a switch
        back."""
        first, uid = self.dataset.value, self.video.value
        for name in self.datasets:
            if name != first:
                self.dataset.value = name
        if self.dataset.value != first:
            self.dataset.value = first
        if self.video.value != uid:
            self._fill_videos(first, uid)
            self.recompute()

    def _build_controls(self, first: str, deps: str) -> None:
        """The menus and the sliders (:data:`SLIDERS`), then the outputs."""
        full = widgets.Layout(width="auto", flex="1 1 auto")
        self.dataset = widgets.Dropdown(
            options=[(DATASET_NAMES.get(n, n), n) for n in self.datasets], value=first, layout=full
        )
        self.video = widgets.Dropdown(layout=full)
        self.find = widgets.Text(
            placeholder="words of the uid or task, then Enter",
            continuous_update=False,
            layout=full,
        )
        given = [(f"{GIVEN}: the deps argument", GIVEN)] if self._given is not None else []
        self.deps = widgets.Dropdown(
            options=given + [(text, key) for key, text in DEPS_CHOICES.items()],
            value=deps,
            layout=full,
        )
        self.transition = widgets.Dropdown(options=list(TRANSITIONS), value="both", layout=full)
        self.prior = widgets.Dropdown(options=list(BASE_PRIORS), value="uniform", layout=full)
        self.stepping = widgets.ToggleButtons(
            options=list(STEPPINGS),
            value="second",
            tooltips=[
                "each segment's observation once per second (published code)",
                "each segment's observation once per segment (the paper's equations)",
            ],
            style={"button_width": "90px"},
        )
        self.view = widgets.ToggleButtons(
            options=["heatmap", "lines"],
            value="heatmap",
            tooltips=["steps x time, the annotation outlined", "one curve per state"],
            style={"button_width": "90px"},
        )
        self.binarise = widgets.Checkbox(value=False, indent=False, layout=full)
        starts = {"signal": round(self.params.signal, 2), "segment": self.params.segment_duration}
        sliders = {
            name: kind(
                value=starts.get(name, start),
                min=low,
                max=high,
                step=step,
                continuous_update=False,
                layout=full,
            )
            for name, (kind, low, high, step, start) in SLIDERS.items()
        }
        self.threshold, self.signal = sliders["threshold"], sliders["signal"]
        self.segment_duration, self.stay = sliders["segment"], sliders["stay"]
        self.controls = {
            "dataset": self.dataset,
            "video": self.video,
            "find": self.find,
            "deps": self.deps,
            "transition": self.transition,
            "prior": self.prior,
            "stepping": self.stepping,
            "view": self.view,
            "binarise": self.binarise,
            **sliders,
        }
        label = {"width": "190px", "min_width": "190px"}
        self._labels = {
            name: widgets.HTML(layout=widgets.Layout(**label)) for name in self.controls
        }
        self._build_outputs()
        for name in self.controls:
            self._set_enabled(name, True)

    def _build_outputs(self) -> None:
        """The views (two image bands: above the legend, the legend), the settings title, the
        R@1 line and the status line (CSS classes for the browser tests)."""
        band = {"width": "100%", "margin": "0"}
        self.image = widgets.Image(format="png", layout=widgets.Layout(**band))
        self.legend_image = widgets.Image(format="png", layout=widgets.Layout(**band))
        self.title = widgets.HTML(
            layout=widgets.Layout(width="100%", justify_content="center"),
            tooltip="The video, the observation source and every setting the views show.",
        )
        self.recall = widgets.HTML(
            tooltip="Per-video R@1: the share of the video's annotated steps whose "
            "highest-probability second lies inside their annotation."
        )
        self.status = widgets.HTML(
            tooltip="Where the observations and D come from; the size of the recomputed video."
        )
        for name, w in (
            ("plot", self.image),
            ("plot-legend", self.legend_image),
            ("title", self.title),
            ("recall", self.recall),
            ("status", self.status),
        ):
            w.add_class(f"baglm-{name}")

    def _grid(self) -> widgets.GridBox:
        """Two aligned columns of labelled controls (label width fixed)."""
        cells = []
        for name, w in self.controls.items():
            box = widgets.HBox([self._labels[name], w], layout=widgets.Layout(width="100%"))
            box.add_class("baglm-control")
            box.add_class(f"baglm-{name}")
            cells.append(box)
        return widgets.GridBox(
            cells,
            layout=widgets.Layout(
                grid_template_columns="repeat(2, minmax(0, 1fr))",
                grid_gap="4px 24px",
                width="100%",
                align_items="center",
            ),
        )

    def _set_enabled(self, name: str, enabled: bool, why: str = "") -> None:
        """Enable a control, or disable it with ``why`` as its tooltip."""
        tip = CONTROL_TIPS[name] if enabled else f"Disabled: {why}"
        w, label = self.controls[name], self._labels[name]
        w.disabled = not enabled
        w.tooltip = label.tooltip = tip
        colour = "inherit" if enabled else "#888"
        label.value = (
            f'<span class="baglm-label" title="{html.escape(tip, quote=True)}" '
            f'style="color:{colour};cursor:help">{html.escape(CONTROL_NAMES[name])}</span>'
        )

    # -- sources ---------------------------------------------------------------------------

    def _obs(self, name: str) -> Observations | None:
        if name not in self.scores:
            return None
        if name not in self._observations:
            self._observations[name] = sources.observations(name, self.scores)
        return self._observations[name]

    def _videos(self, name: str) -> list[Video]:
        obs = self._obs(name)
        return sources.select_videos(name, None, among=None if obs is None else obs.vsg)

    def _fill_videos(self, name: str, uid: str | None = None) -> None:
        """The video menu of dataset ``name``: the videos the search box lets through."""
        if getattr(self, "_videos_of", None) != name:
            self._by_uid = {v.uid: v for v in self._videos(name)}
            self._labels_of = {
                u: f"{u} \u00b7 {v.goal} (K={v.num_steps})" for u, v in self._by_uid.items()
            }
            self._videos_of = name
        words = self.find.value.lower().split()
        shown = [u for u, text in self._labels_of.items() if all(w in text.lower() for w in words)][
            : self.max_videos or None
        ]
        if not shown and not words:
            raise ValueError(f"no videos to explore in {name}")
        if uid is not None and uid not in self._by_uid:
            raise ValueError(f"video {uid!r} is not among the offered videos of {name}")
        if uid is not None and uid not in shown:  # asked for by name: offered first
            shown = [uid, *shown][: len(shown)]
        self.found = len(shown)
        if not shown:  # nothing matches: the menu stays as it was
            return
        if uid is None or uid not in shown:
            uid = self.video.value if self.video.value in shown else shown[0]
        self._hold = True
        try:
            self.video.options = [(self._labels_of[u], u) for u in shown]
            self.video.value = uid
        finally:
            self._hold = False

    def _sync_source(self) -> None:
        """Offer next_step when the cache has it; cached scores fix the segment length."""
        obs = self._obs(self.dataset.value)
        priors = list(PRIORS if obs is not None and obs.next_step else BASE_PRIORS)
        self._hold = True
        try:
            if list(self.prior.options) != priors:
                current = self.prior.value
                self.prior.options = priors
                self.prior.value = current if current in priors else "uniform"
            if obs is not None:
                self.segment_duration.value = int(obs.segment_duration)
        finally:
            self._hold = False

    @property
    def deps_setting(self) -> Any:
        """The deps setting the D menu selects (:mod:`baglm_nb.core.sources`)."""
        return self._given if self.deps.value == GIVEN else self.deps.value

    def _deps_for(self, name: str) -> tuple[Any, str]:
        """``(resolved D or "none", status text)`` of dataset ``name``, resolved once."""
        key = (str(self.deps.value), name)
        if key not in self._resolved:
            d = sources.dependencies(name, self.deps_setting)
            self._resolved[key] = (
                ("none", "no dependency cache for this dataset: D = 0")
                if d is None
                else (d, f"D = {d.label}")
            )
        return self._resolved[key]

    def settings_text(self, deps: sources.DependencySource) -> str:
        """The settings line of the title: D and every filter and simulation setting."""
        label = deps.label if isinstance(deps, sources.Dependencies) else str(deps)
        if self.binarise.value:
            label += f" \u2265 {float(self.threshold.value):.2f}"
        parts = [
            f"D: {label}",
            f"transition: {self.transition.value}",
            f"prior: {self.prior.value}",
            f"stepping: {self.stepping.value}",
        ]
        if self._obs(self.dataset.value) is None:
            parts.append(f"signal {float(self.signal.value):.2f}")
        parts.append(f"{int(self.segment_duration.value)}-s segments")
        return " \u00b7 ".join(parts)

    def control_state(self, video: Video, deps: sources.DependencySource) -> dict[str, str]:
        """Why each currently ineffective control has no effect: ``{name: reason}``.

        Rules (each checked in the tests): cached scores fix the simulation controls; 1-s
        segments make the two steppings equal; a D that is already 0/1 does not change when
        binarised (the threshold runs from 0.05); with D = 0 every transition variant and both
        priors give the same beliefs.
        """
        out: dict[str, str] = {}
        obs = self._obs(self.dataset.value)
        if obs is not None:
            why = f"cached scores ({obs.label}) are shown; the simulation does not apply"
            out["signal"] = out["segment"] = why
        if int(self.segment_duration.value) == 1:
            out["stepping"] = "1-s segments: stepping per second and per segment are the same"
        if obs is not None and obs.precision == PUBLISHED_PRECISION:
            out["stay"] = f"stay runs in float64 only; these scores run in {obs.precision}"
        resolved = sources.dependencies(video.dataset, deps)
        label, d = resolved.label, resolved.matrix(video)
        if np.isin(d, (0.0, 1.0)).all():
            out["binarise"] = out["threshold"] = (
                f"D is already 0/1 (deps: {label}); binarising it changes nothing"
            )
        elif not self.binarise.value:
            out["threshold"] = "tick 'binarise D' to use a threshold"
        effective = binarise(d, float(self.threshold.value) if self.binarise.value else None)
        if not effective.any():
            why = f"D = 0 for this video (deps: {label}): every variant gives the same beliefs"
            out["transition"] = why
            if list(self.prior.options) == list(BASE_PRIORS):
                out["prior"] = why
        return out

    # -- events ----------------------------------------------------------------------------

    def _on_dataset(self, change) -> None:
        if self._calibrated:  # the new dataset's calibrated signal
            self.params = default_params(change["new"])
            self._hold, held = True, self._hold
            self.signal.value = round(self.params.signal, 2)
            self._hold = held
        self._hold, held = True, self._hold
        self.find.value = ""  # the search box was for the other dataset's videos
        self._hold = held
        self._fill_videos(change["new"])
        self._sync_source()
        self.recompute()

    def _on_find(self, _change) -> None:
        """Narrow the video menu; recompute when the video shown had to change."""
        if self._hold:
            return
        before = self.video.value
        self._fill_videos(self.dataset.value)
        if self.video.value != before:
            self.recompute()
        elif not self.found:
            self.status.value = html.escape(f"no video matches {self.find.value!r}")

    def _on_change(self, _change) -> None:
        if not self._hold:
            self.recompute()

    # -- recompute -------------------------------------------------------------------------

    def _inputs(self, name: str, video: Video) -> tuple[Any, SimulationParams, str, Any, str]:
        """``(rows, params, label, next_step, precision)`` of the current source for ``video``."""
        obs = self._obs(name)
        if obs is None:
            params = replace(
                self.params,
                signal=float(self.signal.value),
                segment_duration=int(self.segment_duration.value),
            )
            return None, params, "simulated", None, "float64"
        params = replace(self.params, segment_duration=int(obs.segment_duration))
        rows = (obs.vsg[video.uid], obs.progress[video.uid])
        return rows, params, obs.label, obs.next_step.get(video.uid), obs.precision

    def recompute(self) -> VideoResult:
        """Recompute the current video and redraw; returns the new :class:`VideoResult`."""
        start, cpu = time.perf_counter(), time.process_time()
        name = self.dataset.value
        video = self._by_uid[self.video.value]
        deps, deps_text = self._deps_for(name)
        rows, params, label, next_step, precision = self._inputs(name, video)
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
            stay=0.0 if precision == PUBLISHED_PRECISION else float(self.stay.value),
        )
        off = self.control_state(video, deps)
        for control in self.controls:
            self._set_enabled(control, control not in off, off.get(control, ""))
        self._draw(name, video, result, self.settings_text(deps))
        self.seconds = time.perf_counter() - start
        self.cpu_seconds = time.process_time() - cpu
        self.status.value = html.escape(
            f"observations: {label}; {deps_text}; {result.beliefs.shape[0]} rows, "
            f"K={video.num_steps}; recomputed in {self.seconds * 1000:.0f} ms "
            f"(CPU {self.cpu_seconds * 1000:.0f} ms)"
        )
        self.result = result
        self.recomputes += 1
        return result

    def _show(self, pixels: np.ndarray) -> None:
        """Send the views' two bands (above the legend, the legend) as PNGs, each only when
        its pixels changed since it was last sent."""
        row = self._plot.legend_row or pixels.shape[0]
        for widget, band in ((self.image, pixels[:row]), (self.legend_image, pixels[row:])):
            sent = self._sent.get(id(widget))
            packed = band.reshape(-1).view(np.uint32)  # whole rows: one element per pixel
            if sent is None or sent.shape != packed.shape or not np.array_equal(sent, packed):
                self._sent[id(widget)] = packed.copy()
                widget.value = png_bytes(band[..., :3], self.png_level) if band.size else b""
        self.legend_image.layout.display = "" if pixels.shape[0] > row else "none"

    def _draw(self, name: str, video: Video, result: VideoResult, settings: str) -> None:
        """Put the result into the belief views (one figure per dataset and view, kept: a
        dataset switch back redraws only the data) and the R@1 line."""
        t_rows = result.beliefs.shape[0]
        plot = self._plots.get((name, self.view.value))
        if plot is None:
            plot = BeliefFigure(
                video,
                t_rows,
                style=self.view.value,
                width=self.width,
                dpi=self.dpi,
                blit=True,
                title_lines=0,
            )
            self._plots[(name, self.view.value)] = plot
        elif (getattr(plot.video, "uid", None), plot.num_rows) != (video.uid, t_rows):
            plot.set_video(video, t_rows)
        self._plot = plot
        what = with_stay(f"{DATASET_NAMES.get(name, name)} {video.uid}: {video.goal}", result.stay)
        self.title_text = title_for(what, result.label) + "\n" + settings
        lines = (html.escape(line) for line in self.title_text.split("\n"))
        self.title.value = (
            '<div style="text-align:center;font-weight:bold">' + "<br>".join(lines) + "</div>"
        )
        self._plot.update(result.beliefs, result.scores)
        self._show(self._plot.render())
        self.recall.value = (
            "<b>R@1 on this video</b> \u2014 "
            + html.escape(format_recall("BaGLM", result.recall_baglm))
            + " \u00b7 "
            + html.escape(format_recall("off-the-shelf LMM", result.recall_off_the_shelf))
        )
