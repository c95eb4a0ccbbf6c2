"""Notebook 09's tables and figures: accuracy against latency, and one video's timeline."""

from __future__ import annotations

import math

import numpy as np
import pytest

from baglm_nb.analyses import assistance
from baglm_nb.analyses.tables import title_for
from baglm_nb.core import sources
from baglm_nb.core.evaluation import evaluate
from baglm_nb.core.online_metrics import measure
from baglm_nb.core.pipeline import compare, run_baglm


@pytest.fixture(scope="module")
def observations():
    return sources.observations_for(["htstep", "coin"], {}, limit=5)


@pytest.fixture(scope="module")
def result(observations):
    return assistance.lag_table(observations, "simulated-llm:llama", [0, 1, 4, None])


@pytest.fixture(scope="module")
def table(result):
    return result.frame


def test_lag_table_rows_are_compare_and_measure(observations, result, table):
    assert list(table["lag"].unique()) == ["0", "1", "4", "inf"]
    assert len(table) == 2 * 2 * 4
    for obs in observations:
        name = {"htstep": "HT-Step", "coin": "COIN"}[obs.dataset]
        sub = table[table["dataset"] == name]
        base = compare(obs, "simulated-llm:llama", online={"threshold": 0.5, "patience": 2})
        row0 = sub[(sub["method"] == "BaGLM") & (sub["lag"] == "0")].iloc[0]
        assert row0["workbench"] == round(base["baglm"], 1)
        assert row0["frame_accuracy"] == round(base["online"]["baglm"]["frame_accuracy"], 3)
        assert row0["D"] == "simulated-llm:llama" and row0["source"] == "simulated"
        # lag 4 segments = 8 s of the batch smoother, its delays include the 8 s
        smoothed = run_baglm(obs, "simulated-llm:llama", smoothing_lag_s=8)
        row4 = sub[(sub["method"] == "BaGLM") & (sub["lag"] == "4")].iloc[0]
        assert row4["lag_s"] == 8
        assert row4["workbench"] == round(evaluate(obs.dataset, smoothed, obs.videos), 1)
        m = measure(obs.dataset, obs.videos, smoothed, lag_s=8)
        assert row4["announce_f1"] == round(m["announce_f1"], 3)
        assert row4["delay_median_s"] == round(m["delay_median_s"], 3)
        inf = sub[(sub["method"] == "BaGLM") & (sub["lag"] == "inf")].iloc[0]
        assert math.isnan(inf["lag_s"])
        # the off-the-shelf model is not smoothed: one measurement at every lag
        ots = sub[sub["method"] == "off-the-shelf LMM"]
        assert ots["frame_accuracy"].nunique() == 1 and ots["workbench"].nunique() == 1
        assert ots["workbench"].iloc[0] == round(base["off_the_shelf"], 1)
    items = result.items
    assert set(items["lag"]) == {"0", "1", "4", "inf"} and items["hit"].dtype == bool
    assert result.sources.observations == ("simulated",)


def test_lag_lines_draw_each_metric_per_dataset(table):
    title = title_for("Accuracy against latency", "simulated", table)
    fig = assistance.lag_lines(table, title)
    axes = np.array(fig.axes).reshape(len(assistance.CURVE_METRICS), 2)
    for row, metric in enumerate(assistance.CURVE_METRICS):
        for col, name in enumerate(["HT-Step", "COIN"]):
            ax = axes[row, col]
            baglm, ots = ax.get_lines()
            sub = table[(table["dataset"] == name) & (table["method"] == "BaGLM")]
            percent = 1.0 if metric == "workbench" else 100.0  # one unit: % (R@1 is stored so)
            assert list(baglm.get_ydata()) == pytest.approx(list(sub[metric] * percent))
            assert len(set(ots.get_ydata())) == 1
            assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1", "4", "inf"]
        # one y axis per metric row, its unit stated
        assert axes[row, 0].get_ylim() == axes[row, 1].get_ylim()
        assert axes[row, 0].get_ylabel().endswith("(%)")
    assert "simulated" in fig._suptitle.get_text()


def test_timeline_shows_filter_and_smoothed(observations):
    obs = observations[0]
    uid = obs.videos[0].uid
    data = assistance.timeline_data(obs, "simulated-llm:llama", uid, 2)
    t_len = obs.vsg[uid].shape[0]
    filtered = run_baglm(obs, "simulated-llm:llama", videos=[obs.videos[0]])
    assert np.array_equal(data["filter"]["beliefs"], filtered[uid])
    smoothed = run_baglm(obs, "simulated-llm:llama", videos=[obs.videos[0]], smoothing_lag_s=4)
    assert np.array_equal(data["smoothed"]["beliefs"], smoothed[uid])
    assert data["filter"]["said"].shape == (t_len,)
    fig = assistance.timeline(data, "one video (simulated observations, not a real model)")
    images = [ax.get_images()[0].get_array() for ax in fig.axes if ax.get_images()]
    assert images[0].shape == (obs.videos[0].num_steps + 1, t_len)
    assert "lag 2 segments" in fig.axes[1].get_title(loc="left")
    truth_numbers = {t.get_text() for t in fig.axes[2].texts}
    annotated = {str(seg.step_index + 1) for seg in obs.videos[0].segments}
    assert truth_numbers and truth_numbers <= annotated
    with pytest.raises(ValueError, match="not in the htstep observations"):
        assistance.timeline_data(obs, "simulated-llm:llama", "no-such-video", 2)


def test_timeline_draws_the_alerts_follow_raises(observations):
    from baglm_nb.analyses.alerts import video_alerts

    obs = observations[0]
    uid = "-25-1nbOki0"  # Make Nigerian Style Jollof Rice: alerts with the simulated LLaMA's D
    video = next(v for v in obs.videos if v.uid == uid)
    data = assistance.timeline_data(obs, "simulated-llm:llama", uid, 1)
    d = obs.segment_duration
    dep = sources.dependencies("htstep", "simulated-llm:llama").matrix(video)
    expected = video_alerts(video, obs.vsg[uid][::d], obs.progress[uid][::d], dep)
    assert expected and [a.to_json() for a in data["alerts"]] == [a.to_json() for a in expected]
    fig = assistance.timeline(data, "t")
    strip = fig.axes[4]  # the alerts' own strip, under the filter's announcements
    assert strip.get_yticklabels()[0].get_text() == "alerts" and not fig.axes[3].get_lines()
    drawn = [line for line in strip.get_lines() if line.get_marker() in ("v", "s")]
    assert sorted(float(line.get_xdata()[0]) for line in drawn) == sorted(a.t for a in expected)
    assert {t.get_text() for t in strip.texts} >= {str(a.missing + 1) for a in expected}
    # legible: markers closer than the room they take sit on separate rows; none is cut off
    t_len = len(data["filter"]["beliefs"])
    rows = assistance.alert_levels(sorted(a.t for a in expected), t_len / 45)
    assert len({(t, r) for t, r in zip(sorted(a.t for a in expected), rows, strict=True)}) == len(
        expected
    )
    assert strip.get_xlim() == (0, t_len) and all(not line.get_clip_on() for line in drawn)
    fig.canvas.draw()
    box = fig.get_window_extent()
    for text in strip.texts:
        extent = text.get_window_extent()
        assert box.x0 <= extent.x0 and extent.x1 <= box.x1, text.get_text()


def test_alert_levels_stack_only_what_would_overlap():
    assert assistance.alert_levels([0, 100, 200], gap=10) == [0, 0, 0]
    assert assistance.alert_levels([0, 0, 0, 5, 20], gap=10) == [0, 1, 2, 3, 0]
    assert assistance.alert_levels([], gap=10) == []


def test_as_shown_holds_each_segments_last_row():
    rows = np.arange(10.0)[:, None] * np.ones((1, 3))
    shown = assistance.as_shown(rows, 2)
    assert list(shown[:, 0]) == [1, 1, 3, 3, 5, 5, 7, 7, 9, 9]
    assert list(assistance.as_shown(rows[:9], 2)[:, 0]) == [1, 1, 3, 3, 5, 5, 7, 7, 8]
    assert np.array_equal(assistance.as_shown(rows, 1), rows)


def test_quality_text_marks_a_missing_value():
    metrics = {"frame_accuracy": 0.5904, "announce_f1": 0.8, "delay_median_s": float("nan"),
               "flicker_per_min": 12.75}  # fmt: skip
    text = assistance.quality_text(metrics)
    assert text == (
        "per-second accuracy 0.590 (step rows \u2013), announcement F1 0.800, "
        "median delay \u2013 s, flicker 12.8/min"
    )
    full = assistance.quality_text({**metrics, "frame_accuracy_on_steps": 0.3256})
    assert full.startswith("per-second accuracy 0.590 (step rows 0.326), ")
    assert "nan" not in text


def test_correlated_observations_keep_the_signal_and_correlate_the_noise():
    from baglm_nb.core.simulate import ILLUSTRATIVE_NOISE_CORR, PINNED_NOISE_CORR

    (plain,) = sources.observations_for(["coin"], {}, limit=3)
    (corr,) = assistance.correlated_observations(["coin"], ILLUSTRATIVE_NOISE_CORR, limit=3)
    assert [v.uid for v in corr.videos] == [v.uid for v in plain.videos]
    assert corr.label == plain.label == "simulated"
    uid = plain.videos[0].uid
    assert corr.vsg[uid].shape == plain.vsg[uid].shape
    assert not np.array_equal(corr.vsg[uid], plain.vsg[uid])
    # the default twin is the pinned one: its own correlation gives its own observations
    (same,) = assistance.correlated_observations(["coin"], PINNED_NOISE_CORR, limit=3)
    assert np.array_equal(same.vsg[uid], plain.vsg[uid])


def test_lag_lines_take_the_palette_hues(table):
    from baglm_nb.analyses.palette import COLOURS

    fig = assistance.lag_lines(table, "t (simulated)")
    baglm, ots = fig.axes[0].get_lines()
    assert (baglm.get_color(), ots.get_color()) == (COLOURS["baglm"], COLOURS["off_the_shelf"])
    assert baglm.get_linestyle() == ots.get_linestyle() == "-"


def test_lag_view_keeps_the_compared_columns(table):
    view = assistance.lag_view(table)
    assert list(view.columns) == list(assistance.VIEW_COLUMNS)
    assert view["announce_f1"].equals(table["announce_f1"]) and len(view) == len(table)
