"""The widget explorer, driven in Python: change values and check that the outputs change.

Only correctness is asserted here; the recompute latency is measured by
``benchmarks/widget_latency.py`` (timings on shared CI machines are too noisy for a test).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

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


def test_dependency_threshold(explorer):
    assert explorer.threshold.disabled
    base = explorer.result.beliefs
    explorer.binarise.value = True
    assert not explorer.threshold.disabled
    np.testing.assert_array_equal(explorer.result.beliefs, base)  # oracle D is already 0/1
    explorer.threshold.value = 0.0  # D >= 0 everywhere: every step depends on every step
    assert not np.array_equal(explorer.result.beliefs, base)
    explorer.binarise.value = False
    explorer.threshold.value = 0.5
    np.testing.assert_array_equal(explorer.result.beliefs, base)


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
    assert "D = matrices" in ex.status.value
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
