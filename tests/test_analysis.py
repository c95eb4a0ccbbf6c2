"""Ablation tables, breakdowns, timing summaries and their figures (analyses.analysis, plots)."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

from baglm_nb.analyses import analysis as A
from baglm_nb.analyses import plots
from baglm_nb.analyses.paper import PAPER, PAPER_TIMING
from baglm_nb.analyses.reports import slot_row
from baglm_nb.core.observations import Observations, from_simulation
from baglm_nb.core.oracles import oracle_dependency
from baglm_nb.core.pipeline import compare
from baglm_nb.core.simulate import SimulationParams, write_simulated_cache
from baglm_nb.inputs.datasets import load_dataset
from baglm_nb.inputs.video import find_video_file, frames_at
from baglm_nb.stores.keys import ScoreKey
from baglm_nb.stores.scores import ScoreCache

ROOT = Path(__file__).resolve().parent.parent
N = 8


@pytest.fixture(scope="module")
def obs() -> Observations:
    return from_simulation("htstep", limit=N)


def _is_slot(row) -> bool:
    return str(row["note"]).startswith("slot:") and math.isnan(row["workbench"])


# -- ablation tables ---------------------------------------------------------------------------


def test_prior_table_slot_without_next_step_and_uniform_matches_compare(obs):
    table = A.prior_table([obs])
    assert list(table["method"]) == [
        "1) next-step scores (pi_next)",
        "2) propagated",
        "3) uniform 1/(K+1)",
    ]
    slot = table.iloc[0]
    assert _is_slot(slot) and "next-step" in slot["note"]
    assert slot["paper"] == PAPER["prior_next_step"]["htstep"]
    uniform = table.iloc[2]
    assert uniform["workbench"] == round(compare(obs, "oracle")["baglm"], 1)
    assert uniform["paper"] == 57.4 and uniform["source"] == "simulated"
    assert uniform["videos"] == N


def test_prior_table_uses_next_step_scores_when_present(obs):
    with_next = Observations(
        obs.dataset,
        obs.label,
        obs.segment_duration,
        obs.vsg,
        obs.progress,
        {u: v + 0.01 for u, v in obs.vsg.items()},
    )
    row = A.prior_table([with_next]).iloc[0]
    assert not math.isnan(row["workbench"]) and row["paper"] == 50.5


def test_llm_table_fills_given_caches_and_slots_the_rest(obs):
    videos = load_dataset("htstep")[:N]
    matrices = {v.uid: oracle_dependency(v) for v in videos}
    table = A.llm_table([obs], {"LLaMA-3.3-70B": {}, "GPT-4.1-mini": {"htstep": matrices}})
    llama, gpt = table.iloc[0], table.iloc[1]
    assert _is_slot(llama) and llama["paper"] == 57.4
    assert gpt["paper"] == 57.1 and gpt["workbench"] == round(compare(obs, "oracle")["baglm"], 1)


def test_prompt_table(obs):
    table = A.prompt_table([obs])
    mc, binary = table.iloc[0], table.iloc[1]
    assert mc["paper"] == 52.0 and mc["queries_per_segment"] == "1"
    assert mc["workbench"] == round(compare(obs, "none")["off_the_shelf"], 1)
    assert _is_slot(binary) and binary["paper"] == 52.5 and binary["queries_per_segment"] == "K"
    same = A.prompt_table([obs], {"htstep": dict(obs.vsg)})
    assert same.iloc[0]["workbench"] == same.iloc[1]["workbench"]


def test_prompt_table_reads_a_score_cache_without_progress(obs, tmp_path):
    cache = ScoreCache(tmp_path, ScoreKey("htstep", "binary-model", "vsg-bin-v1"))
    for uid, rows in list(obs.vsg.items())[:4]:
        cache.write_video(uid, rows[::2])
    table = A.prompt_table([obs], {"htstep": cache.path})
    assert table.iloc[1]["source"] == "lmm:binary-model"
    assert (table["videos"] == 4).all()


def test_stepping_table(obs):
    table = A.stepping_table([obs])
    assert list(table["paper"].isna()) == [False, True]
    assert "not reported" in table.iloc[1]["note"]
    assert table.iloc[0]["workbench"] == round(compare(obs, "oracle")["baglm"], 1)


def test_results_bars_draw_values_paper_ticks_and_slots():
    df = pd.DataFrame(
        {
            "dataset": ["HT-Step", "HT-Step", "COIN", "COIN"],
            "method": ["BaGLM", "LMM", "BaGLM", "LMM"],
            "workbench": [62.8, 52.0, np.nan, 40.0],
            "paper": [43.5, 37.9, 50.1, np.nan],
        }
    )
    fig = plots.results_bars(df, "t")
    ax = fig.axes[0]
    heights = sorted(round(p.get_height(), 1) for p in ax.patches)
    # 4 bars (the slot drawn as 0) + the dashed slot bar at the paper's height 50.1
    assert heights == [0.0, 40.0, 50.1, 52.0, 62.8]
    assert [t.get_text() for t in ax.texts] == ["slot"]
    ticks = np.concatenate([c.get_offsets()[:, 1] for c in ax.collections])
    np.testing.assert_allclose(np.sort(ticks[np.isfinite(ticks)]), [37.9, 43.5, 50.1])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["HT-Step", "COIN"]


def test_segment_duration_table_rebuilds_the_simulation():
    table = A.segment_duration_table(["htstep"], (1, 2), limit=4)
    assert len(table) == 4 and set(table["segment_duration"]) == {1, 2}
    assert table[table["segment_duration"] == 1]["paper"].isna().all()
    two = table[table["segment_duration"] == 2].set_index("method")["paper"]
    assert two["BaGLM"] == 57.4 and two["off-the-shelf LMM"] == 52.0
    fig = plots.duration_lines(table, "t")
    assert isinstance(fig, matplotlib.figure.Figure)


def test_sensitivity_table_tracks_the_signal():
    table = A.sensitivity_table("htstep", [0.0, 4.0], limit=6)
    assert table["off_the_shelf"].iloc[1] > table["off_the_shelf"].iloc[0]
    np.testing.assert_allclose(table["gain"], table["baglm"] - table["off_the_shelf"], atol=0.11)
    assert (table["paper_gain"] == 5.4).all() and (table["source"] == "simulated").all()
    assert isinstance(
        plots.sensitivity_lines(table, "t", calibrated=1.244), matplotlib.figure.Figure
    )


# -- breakdowns --------------------------------------------------------------------------------


def _hits() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "method": ["BaGLM"] * 5 + ["off-the-shelf LMM"] * 5,
            "video_uid": ["a", "a", "b", "b", "c"] * 2,
            "task": ["t"] * 10,
            "step_index": [0, 1, 0, 1, 0] * 2,
            "hit": [True, False, True, True, False, False, False, True, True, True],
            "num_steps": [2, 2, 2, 2, 5] * 2,
            "position": [0.0, 0.19, 0.2, 1.0, 0.99] * 2,
        }
    )


def test_position_table_bins():
    table = A.position_table("htstep", _hits())
    bag = table[table["method"] == "BaGLM"].set_index("bin")
    assert list(bag["pairs"]) == [2, 1, 0, 0, 2]
    assert bag.loc["bin 0", "workbench"] == 50.0 and bag.loc["bin 4", "workbench"] == 50.0
    assert math.isnan(bag.loc["bin 2", "workbench"])
    assert list(bag["paper"]) == [56.1, 57.2, 60.2, 56.8, 56.6]
    off = table[table["method"] == "off-the-shelf LMM"]
    assert list(off["paper"]) == [53.6, 52.7, 54.6, 49.7, 49.3]
    assert table[table["dataset"] == "HT-Step"].shape[0] == 10
    other = A.position_table("crosstask", _hits())
    assert other["paper"].isna().all()


def test_candidate_steps_table():
    table = A.candidate_steps_table("htstep", _hits())
    bag = table[table["method"] == "BaGLM"].set_index("num_steps")
    assert bag.loc[2, "videos"] == 2 and bag.loc[2, "pairs"] == 4
    assert bag.loc[2, "workbench"] == 75.0 and bag.loc[5, "workbench"] == 0.0
    assert table["paper"].isna().all() and list(table["method"].unique())[0] == "BaGLM"
    assert isinstance(plots.steps_lines(table, "t"), matplotlib.figure.Figure)


def test_breakdown_hits_on_real_beliefs(obs):
    videos = load_dataset("htstep")[:N]
    hits = A.breakdown_hits("htstep", {"off_the_shelf": obs.vsg}, videos)
    assert set(hits["method"]) == {"off-the-shelf LMM"}
    table = A.position_table("htstep", hits)
    total = (table["workbench"].fillna(0) * table["pairs"]).sum() / table["pairs"].sum()
    assert total == pytest.approx(compare(obs, "none")["off_the_shelf"], abs=0.2)


# -- timings -----------------------------------------------------------------------------------


def test_timing_summary_and_table_from_a_score_cache(tmp_path):
    videos = load_dataset("htstep")
    example = next(v for v in videos if v.uid == PAPER_TIMING["example_uid"])
    other = next(v for v in videos if v.num_steps != example.num_steps)
    cache = ScoreCache(tmp_path, ScoreKey("htstep", "m", "p"))
    for video, decode in ((example, 1.0), (other, 3.0)):
        s = 3
        cache.write_video(
            video.uid,
            np.full((s, video.num_steps + 1), 0.5),
            timings={
                "decode_s": np.full(s, decode),
                "vsg_s": np.full(s, 0.1),
                "progress_s": np.full(s, 0.5),
            },
        )
    frame = cache.timings_frame()
    summary = A.timing_summary(frame, videos)
    assert list(summary.columns[:6]) == [
        "num_steps",
        "videos",
        "segments",
        "decode_s",
        "vsg_s",
        "progress_s",
    ]
    row = summary.set_index("num_steps").loc[example.num_steps]
    assert row["total_s"] == pytest.approx(1.6) and row["realtime_share"] == 1.0
    assert summary.set_index("num_steps").loc[other.num_steps, "realtime_share"] == 0.0
    table = A.timing_table(frame, videos, source="lmm:m").set_index("stage")
    assert table.loc["decode_s", "workbench"] == pytest.approx(2.0)
    assert table.loc["decode_s", "workbench_example"] == pytest.approx(1.0)
    assert table.loc["progress_s", "paper"] == 0.814 and table.loc["total_s", "segments"] == 6
    assert isinstance(plots.timing_bars(summary, "t"), matplotlib.figure.Figure)
    with pytest.raises(ValueError, match="not in the dataset"):
        A.timing_summary(frame, videos[:1])


def test_no_timings_table_never_invents_numbers():
    table = A.no_timings_table("no score cache given")
    assert (table["workbench"] == "no timings available").all()
    assert list(table["paper"]) == [1.201, 0.088, 0.814, 2.1]
    row = slot_row("htstep", "m", 1.0, "why")
    assert row["dataset"] == "HT-Step" and row["note"] == "slot: why"


# -- belief plots ------------------------------------------------------------------------------


@pytest.mark.parametrize("style", ["lines", "heatmap"])
def test_belief_figure_updates_in_place(obs, style):
    video = load_dataset("htstep")[0]
    t = obs.vsg[video.uid].shape[0]
    fig = plots.BeliefFigure(video, t, style=style, blit=True)
    fig.update(obs.vsg[video.uid], obs.vsg[video.uid], "a")
    first = fig.png()
    fig.update(np.zeros_like(obs.vsg[video.uid]), obs.vsg[video.uid], "a")
    assert first[:8] == b"\x89PNG\r\n\x1a\n" and fig.png() != first
    with pytest.raises(ValueError, match="must be"):
        fig.update(obs.vsg[video.uid][:-1], obs.vsg[video.uid])
    other = load_dataset("htstep")[1]
    fig.set_video(other, obs.vsg[other.uid].shape[0])
    fig.update(obs.vsg[other.uid], obs.vsg[other.uid], "b")
    assert fig.png() != first


def test_keyframes_from_a_video_file(obs, tmp_path):
    video = load_dataset("htstep")[0]
    rows = obs.vsg[video.uid]
    times = plots.keyframe_times(rows, np.roll(rows, 1, axis=1), 3)
    assert len(times) == 3 and times == sorted(times)
    assert plots.keyframe_times(rows, rows, 2) == [
        rows.shape[0] // 4 + 0.5,
        3 * rows.shape[0] // 4 + 0.5,
    ]
    clip = ROOT / "tests" / "data" / "videos" / "cup.mp4"
    (tmp_path / f"{video.uid}.mp4").symlink_to(clip)
    path = find_video_file(tmp_path, video.uid)
    assert path is not None and find_video_file(None, video.uid) is None
    frames = frames_at(path, [0.5, 1e6], width=64)
    assert len(frames) == 2 and frames[0][1].ndim == 3 and frames[0][1].dtype == np.uint8
    fig = plots.belief_figure(video, rows, rows, title="t", keyframes=frames)
    out = plots.save_figure(fig, tmp_path / "q")
    assert all(p.stat().st_size > 0 for p in out)


def test_simulation_params_default_is_the_calibrated_one():
    assert SimulationParams().signal == pytest.approx(1.244)


def test_timing_tables_never_invent_timings(tmp_path):
    assert A.timing_tables(None)["summary"] is None
    sim = A.timing_tables(write_simulated_cache("coin", tmp_path, limit=2))
    assert sim["summary"] is None and "recorded no per-segment timings" in sim["message"]
    assert (sim["table"]["workbench"] == "no timings available").all()
    video = load_dataset("coin")[0]
    cache = ScoreCache(tmp_path, ScoreKey("coin", "m", "p"))
    cache.write_video(
        video.uid,
        np.full((2, video.num_steps + 1), 0.5),
        timings={"decode_s": np.ones(2), "vsg_s": np.ones(2)},
    )
    real = A.timing_tables(cache.path)
    assert real["source"] == "lmm:m" and real["dataset"] == "coin"
    assert real["summary"]["total_s"].iloc[0] == pytest.approx(2.0)


def test_breakdown_tables(obs):
    position, steps = A.breakdown_tables(obs, "oracle", bins=5)
    assert set(position["method"]) == set(steps["method"]) == {"BaGLM", "off-the-shelf LMM"}
    assert position["pairs"].sum() == steps["pairs"].sum() > 0
    with pytest.raises(KeyError, match="no dependency source"):
        A.breakdown_tables(obs, {})


def test_qualitative_case_with_keyframes(tmp_path):
    video = load_dataset("coin")[0]
    (tmp_path / f"{video.uid}.mp4").symlink_to(ROOT / "tests" / "data" / "videos" / "cup.mp4")
    fig, row = A.qualitative_case("coin", video.uid, video_dir=tmp_path, keyframes=2)
    assert row["keyframes"] == 2 and row["source"] == "simulated" and row["task"] == video.goal
    assert "simulated observations" in fig.texts[0].get_text()
    _, plain = A.qualitative_case("coin", video.uid)
    assert plain["keyframes"] == 0 and plain["baglm"] == row["baglm"]
    with pytest.raises(KeyError):
        A.qualitative_case("coin", "no-such-video")
