"""The widget explorer, driven in Python: change values and check that the outputs change.

Only correctness is asserted here; the recompute latency is measured by
``benchmarks/widget_latency.py`` (timings on shared CI machines are too noisy for a test).
"""

from __future__ import annotations

import html
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from baglm_nb.analyses.belief_views import BeliefFigure
from baglm_nb.apps.widgets import Explorer, binarise, compute_video, video_recall
from baglm_nb.core.observations import from_simulation
from baglm_nb.core.oracles import oracle_dependency
from baglm_nb.core.simulate import SimulationParams, per_second, simulate_video
from baglm_nb.inputs.datasets import load_dataset

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def explorer() -> Explorer:
    return Explorer(["htstep", "coin"], max_videos=4)


def test_binarise():
    d = np.array([[0.0, 0.3], [0.7, 1.0]])
    np.testing.assert_array_equal(binarise(d, 0.5), [[0, 0], [1, 1]])
    np.testing.assert_array_equal(binarise(d, 0.0), np.ones((2, 2)))
    np.testing.assert_array_equal(binarise(d, None), d)


def test_compute_video_matches_the_pipeline():
    video = load_dataset("htstep")[0]
    result = compute_video(video)
    obs = from_simulation("htstep", videos=[video])
    np.testing.assert_array_equal(result.scores, obs.vsg[video.uid])
    assert result.label == "simulated" and result.beliefs.shape == result.scores.shape
    assert result.recall_off_the_shelf == video_recall(video, obs.vsg[video.uid])
    flat = compute_video(video, deps="none")
    np.testing.assert_allclose(flat.beliefs, result.scores, atol=1e-12)
    rows = per_second(simulate_video(video, SimulationParams(signal=3.0)))
    cached = compute_video(video, rows=rows, label="lmm:x")
    assert cached.label == "lmm:x"
    assert cached.recall_off_the_shelf[0] >= result.recall_off_the_shelf[0]


def test_explorer_builds_and_shows_the_first_video(explorer):
    assert explorer.video.value == load_dataset("htstep")[0].uid
    assert explorer.image.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert "R@1 on this video" in explorer.recall.value
    assert "simulated" in explorer.status.value and explorer.seconds > 0
    assert len(explorer.video.options) == 4


def test_signal_slider_changes_plot_and_recall(explorer):
    explorer.signal.value = 0.0
    low_png, low_text = explorer.image.value, explorer.recall.value
    low = explorer.result.recall_off_the_shelf[0]
    explorer.signal.value = 4.0
    assert explorer.image.value != low_png
    assert explorer.recall.value != low_text
    assert explorer.result.recall_off_the_shelf[0] > low
    explorer.signal.value = 1.25


def test_filter_controls_change_the_beliefs(explorer):
    base = explorer.result.beliefs
    for widget, value, back in (
        (explorer.transition, "static", "both"),
        (explorer.prior, "propagated", "uniform"),
        (explorer.stepping, "segment", "second"),
    ):
        count = explorer.recomputes
        widget.value = value
        assert explorer.recomputes == count + 1
        assert not np.array_equal(explorer.result.beliefs, base), widget.description
        widget.value = back
    np.testing.assert_array_equal(explorer.result.beliefs, base)


def test_binarising_a_0_1_dependency_matrix_is_disabled(explorer):
    """With the oracle D (already 0/1) neither 'binarise D' nor its threshold can change
    anything: both are disabled, with a tooltip that says why."""
    assert not explorer.binarise.disabled  # the simulated LLaMA's D is soft
    explorer.deps.value = "oracle"
    assert explorer.binarise.disabled and explorer.threshold.disabled
    assert "already 0/1" in explorer.binarise.tooltip and "oracle" in explorer.binarise.tooltip
    assert "already 0/1" in explorer._labels["threshold"].value
    video = explorer._by_uid[explorer.video.value]
    base = compute_video(video).beliefs
    base = compute_video(video, deps="oracle").beliefs
    for t in np.arange(0.05, 1.01, 0.05):  # the slider's whole range
        again = compute_video(video, deps="oracle", threshold=float(t)).beliefs
        np.testing.assert_array_equal(again, base)
    explorer.deps.value = "simulated-llm:llama"


@pytest.fixture(scope="module")
def soft_explorer() -> Explorer:
    """HT-Step with a soft D (the oracle chain at 0.8, 0.3 elsewhere below the diagonal)."""
    videos = load_dataset("htstep")[:2]
    soft = {}
    for v in videos:
        d = 0.8 * oracle_dependency(v)
        d[np.tril_indices(v.num_steps, -1)] = np.maximum(d[np.tril_indices(v.num_steps, -1)], 0.3)
        soft[v.uid] = d
    return Explorer(["htstep"], deps={"htstep": soft}, max_videos=2)


def test_dependency_threshold_with_a_soft_matrix(soft_explorer):
    ex = soft_explorer
    assert not ex.binarise.disabled and ex.threshold.disabled
    assert "tick 'binarise D'" in ex.threshold.tooltip
    base = ex.result.beliefs
    ex.binarise.value = True
    assert not ex.threshold.disabled and ex.threshold.tooltip.startswith("The threshold")
    at_half = ex.result.beliefs  # 0.8 -> 1, 0.3 -> 0: the oracle chain
    assert not np.array_equal(at_half, base)
    ex.threshold.value = 0.25  # 0.3 -> 1 as well
    assert not np.array_equal(ex.result.beliefs, at_half)
    ex.threshold.value = 0.9  # nothing reaches 0.9: D = 0, the transition cannot matter
    assert ex.transition.disabled and "D = 0" in ex.transition.tooltip
    assert ex.prior.disabled
    ex.threshold.value = 0.5
    ex.binarise.value = False
    assert not ex.transition.disabled and ex.threshold.disabled
    np.testing.assert_array_equal(ex.result.beliefs, base)


def test_no_dependencies_disable_the_controls_that_need_them():
    ex = Explorer(["coin"], deps="none", max_videos=2)
    for name in ("transition", "prior", "binarise", "threshold"):
        assert ex.controls[name].disabled, name
    assert "D = 0" in ex.transition.tooltip
    video = ex._by_uid[ex.video.value]
    base = compute_video(video, deps="none").beliefs
    for transition in ("static", "readiness", "validity"):
        for prior in ("uniform", "propagated"):
            other = compute_video(video, deps="none", transition=transition, prior=prior)
            np.testing.assert_allclose(other.beliefs, base, atol=1e-12)


def test_one_second_segments_disable_the_stepping(explorer):
    explorer.segment_duration.value = 1
    assert explorer.stepping.disabled and "1-s segments" in explorer.stepping.tooltip
    video = explorer._by_uid[explorer.video.value]
    params = SimulationParams(segment_duration=1)
    a = compute_video(video, params=params, stepping="second").beliefs
    np.testing.assert_array_equal(
        compute_video(video, params=params, stepping="segment").beliefs, a
    )
    explorer.segment_duration.value = 2
    assert not explorer.stepping.disabled


def test_every_control_has_a_tooltip_and_a_label(explorer):
    for name, widget in explorer.controls.items():
        label = explorer._labels[name].value
        assert widget.tooltip and widget.tooltip != "null", name
        assert f'title="{html.escape(widget.tooltip, quote=True)}"' in label, name
        assert "null" not in label
    assert len(set(explorer.controls)) == 13


def test_every_enabled_control_changes_the_plot_or_the_recall(explorer):
    """What the browser test checks, in Python: each enabled control has an effect."""
    alternatives = {
        "transition": "static",
        "prior": "propagated",
        "stepping": "segment",
        "view": "lines",
        "signal": 3.0,
        "segment": 3,
        "deps": "oracle",
        "binarise": True,
        "stay": 0.9,
        "find": explorer.video.options[1][1],  # narrows the menu to another video
    }
    for name, widget in explorer.controls.items():
        if widget.disabled or name in ("dataset", "video"):
            continue
        before = (explorer.image.value, explorer.recall.value)
        old = widget.value
        widget.value = alternatives[name]
        assert (explorer.image.value, explorer.recall.value) != before, name
        widget.value = old
    assert explorer.view.value == "heatmap" and explorer._plot.style == "heatmap"
    assert len(explorer.video.options) == 4  # the search box emptied: every video again


def test_segment_duration_and_dataset_switch(explorer):
    rows = explorer.result.beliefs.shape[0]
    explorer.segment_duration.value = 4
    assert explorer.result.beliefs.shape[0] != rows
    assert explorer.result.beliefs.shape[0] % 4 == 0
    explorer.segment_duration.value = 2
    explorer.dataset.value = "coin"
    coin = load_dataset("coin")[:4]
    assert [v for _, v in explorer.video.options] == [v.uid for v in coin]
    assert explorer.result.uid == coin[0].uid
    png = explorer.image.value
    explorer.video.value = coin[1].uid
    assert explorer.result.uid == coin[1].uid and explorer.image.value != png
    explorer.dataset.value = "htstep"


def test_cached_source_disables_the_simulation_sliders():
    obs = from_simulation("coin", limit=3)
    matrices = {v.uid: oracle_dependency(v) for v in load_dataset("coin")[:3]}
    ex = Explorer(["coin", "htstep"], scores={"coin": obs}, deps={"coin": matrices}, max_videos=3)
    assert ex.signal.disabled and ex.segment_duration.disabled
    assert "cached scores (simulated)" in ex.signal.tooltip
    assert "D = matrices" in ex.status.value
    assert ex.deps.value == "given" and ex.deps.options[0][1] == "given"  # the deps argument
    assert "D: matrices" in ex.title_text
    before = ex.result.beliefs
    ex.signal.value = 3.0  # no effect on cached scores
    np.testing.assert_array_equal(ex.result.beliefs, before)
    ex.dataset.value = "htstep"
    assert not ex.signal.disabled
    assert "D = 0" in ex.status.value  # the deps mapping has no htstep entry
    value, hits, n = ex.result.recall_baglm
    assert n > 0 and (math.isnan(value) or 0 <= value <= 100)


def test_explorer_rejects_unknown_video():
    with pytest.raises(ValueError, match="not among"):
        Explorer(["coin"], video="nope", max_videos=2)


def test_explore_notebook_is_clean_with_one_parameters_cell():
    nb = json.loads((ROOT / "notebooks" / "explore.ipynb").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert not any(c.get("outputs") or c.get("execution_count") for c in code)
    assert sum("parameters" in c.get("metadata", {}).get("tags", []) for c in code) == 1
    assert any("Explorer(" in "".join(c["source"]) for c in code)


def test_explorer_simulates_each_dataset_with_its_calibrated_signal():
    """The default twin's fitted parameters of each dataset (signal and noise_corr)."""
    from baglm_nb.apps.widgets import Explorer
    from baglm_nb.core.simulate import DEFAULT_TWIN, twin_params

    ex = Explorer(datasets=["htstep", "coin"], max_videos=3)
    for name in ("htstep", "coin"):
        ex.dataset.value = name
        fitted = twin_params(name, DEFAULT_TWIN)
        assert ex.params == fitted
        assert ex.signal.value == pytest.approx(round(fitted.signal, 2))
    assert "simulated" in ex.status.value


def test_d_is_the_tables_by_default_and_every_setting_is_in_the_title(explorer):
    assert explorer.deps.value == "simulated-llm:llama"
    assert [v for _, v in explorer.deps.options] == [
        "simulated-llm:llama",
        "simulated-llm:gpt",
        "oracle",
        "none",
    ]
    title = explorer.title_text
    assert "simulated observations, not a real model" in title
    settings = title.split("\n")[1]
    assert settings.startswith("D: simulated-llm:llama \u00b7 transition: both \u00b7 prior:")
    assert "stepping: second" in settings and "2-s segments" in settings
    assert f"signal {explorer.signal.value:.2f}" in settings
    explorer.deps.value = "simulated-llm:gpt"
    explorer.transition.value = "static"
    assert "D: simulated-llm:gpt \u00b7 transition: static" in explorer.title_text
    assert "D = simulated-llm:gpt" in explorer.status.value
    explorer.binarise.value = True
    assert "D: simulated-llm:gpt \u2265 0.50" in explorer.title_text
    explorer.binarise.value = False
    explorer.transition.value = "both"
    explorer.deps.value = "simulated-llm:llama"


def test_the_search_box_narrows_the_video_menu():
    ex = Explorer(["coin", "htstep"], max_videos=4)
    shown = ex.video.value
    ex.find.value = "make"  # COIN's tasks: the menu shows the first 4 that match
    labels = [label for label, _ in ex.video.options]
    assert len(labels) == 4 and all("make" in label.lower() for label in labels)
    wanted = [v for v in load_dataset("coin")[4:] if "make" not in v.uid.lower()][-1]
    ex.find.value = f"{wanted.uid} {wanted.goal.split()[0].upper()}"  # all words, any case
    assert [u for _, u in ex.video.options] == [wanted.uid]  # beyond the first max_videos
    assert ex.result.uid == wanted.uid and ex.video.value != shown
    options = ex.video.options
    ex.find.value = "no such words anywhere"
    assert ex.video.options == options and "no video matches" in ex.status.value
    ex.dataset.value = "htstep"  # a dataset switch empties the search box
    assert ex.find.value == "" and len(ex.video.options) == 4


def test_a_dataset_switch_back_reuses_its_figure(explorer):
    figure = explorer._plot
    explorer.dataset.value = "coin"
    assert explorer._plot is not figure
    explorer.dataset.value = "htstep"
    assert explorer._plot is figure  # kept: only its data are redrawn


def test_stay_slider_mixes_the_transitions_and_says_so(explorer):
    """Beyond the paper: the stay slider's beliefs are run_filter's with that stay, the title
    says so; back at 0 the beliefs are the paper filter's, bit for bit."""
    base, title = explorer.result.beliefs, explorer.title_text
    assert "beyond the paper" not in title
    explorer.stay.value = 0.9
    assert "stay 0.9 (beyond the paper)" in explorer.title_text
    video = explorer._by_uid[explorer.video.value]
    _, params, *_ = explorer._inputs(explorer.dataset.value, video)
    deps = explorer._deps_for(explorer.dataset.value)[0]
    same = compute_video(video, params=params, deps=deps, stay=0.9)
    np.testing.assert_array_equal(explorer.result.beliefs, same.beliefs)
    assert not np.array_equal(explorer.result.beliefs, base)
    explorer.stay.value = 0.0
    np.testing.assert_array_equal(explorer.result.beliefs, base)
    np.testing.assert_array_equal(
        compute_video(video, stay=0.0).beliefs, compute_video(video).beliefs
    )


def test_a_settings_change_redraws_the_same_artists_in_place(explorer):
    """A settings change gives the views new data: the figure, its axes, images, strips, legend
    and cached background are the same objects; the settings title is an HTML widget, not text
    in the image; and the data equal what a fresh computation and a fresh figure give."""
    explorer.signal.value = 1.0
    plot = explorer._plot
    kept = {
        "figure": plot.figure,
        "axes": dict(plot.axes),
        "images": {name: plot.artists[name][0] for name in plot.panels},
        "strips": dict(plot.strips),
        "legend": plot.legend,
        "cells": {c: dict(t) for c, t in plot.legend.cells.items()},
        "background": plot._background,
    }
    assert kept["background"] is not None
    for widget, value in ((explorer.signal, 3.0), (explorer.transition, "static")):
        widget.value = value
        assert explorer._plot is plot and plot.figure is kept["figure"]
        assert all(plot.axes[k] is ax for k, ax in kept["axes"].items())
        assert all(plot.artists[n][0] is im for n, im in kept["images"].items())
        assert all(plot.strips[n] is s for n, s in kept["strips"].items())
        assert plot.legend is kept["legend"]
        assert all(
            plot.legend.cells[c][s] is t for c, ts in kept["cells"].items() for s, t in ts.items()
        )
        assert plot._background is kept["background"]  # nothing static was drawn again
    assert "signal 3.00" in explorer.title.value and "transition: static" in explorer.title.value
    assert not [t for t in plot.figure.texts if "signal" in t.get_text()]
    # the new data: a fresh computation and a fresh figure of the same settings
    name, video = explorer.dataset.value, explorer._by_uid[explorer.video.value]
    rows, params, label, next_step, precision = explorer._inputs(name, video)
    fresh = compute_video(video, params=params, transition="static")
    np.testing.assert_array_equal(explorer.result.beliefs, fresh.beliefs)
    figure = BeliefFigure(
        video, len(fresh.beliefs), style="heatmap", dpi=explorer.dpi, title_lines=0
    )
    figure.update(fresh.beliefs, fresh.scores)
    for name in plot.panels:
        np.testing.assert_array_equal(
            plot.artists[name][0].get_array(), figure.artists[name][0].get_array()
        )
        for a, b in zip(plot.markers[name], figure.markers[name], strict=True):
            np.testing.assert_array_equal(a.get_xydata(), b.get_xydata())
    for key, strip in plot.strips.items():
        np.testing.assert_array_equal(strip.get_array(), figure.strips[key].get_array())
    pixels = np.asarray(Image.open(io.BytesIO(explorer.image.value)).convert("RGB"), dtype=int)
    theirs = np.asarray(figure.render()[: plot.legend_row, :, :3], dtype=int)
    assert pixels.shape == theirs.shape
    assert (np.abs(pixels - theirs).max(axis=2) > 40).mean() < 0.002
    explorer.transition.value = "both"
    explorer.signal.value = 1.25
