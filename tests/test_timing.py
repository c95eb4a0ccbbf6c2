"""Per-segment timings (analyses.timing): summaries by K, the table beside the paper's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from baglm_nb.analyses import timing as T
from baglm_nb.core.simulate import write_simulated_cache
from baglm_nb.inputs.datasets import load_dataset
from baglm_nb.inputs.paper import PAPER_TIMING
from baglm_nb.stores.keys import ScoreKey
from baglm_nb.stores.scores import ScoreCache


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
    summary = T.timing_summary(frame, videos)
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
    table = T.timing_table(frame, videos, source="lmm:m").set_index("stage")
    assert table.loc["decode_s", "workbench"] == pytest.approx(2.0)
    assert table.loc["decode_s", "workbench_example"] == pytest.approx(1.0)
    assert table.loc["progress_s", "paper"] == 0.814 and table.loc["total_s", "segments"] == 6
    with pytest.raises(ValueError, match="not in the dataset"):
        T.timing_summary(frame, videos[:1])


def test_timing_view_leaves_out_empty_columns_and_says_why(tmp_path):
    videos = load_dataset("htstep")
    other = next(v for v in videos if v.num_steps != PAPER_TIMING["example_num_steps"])
    cache = ScoreCache(tmp_path, ScoreKey("htstep", "m", "p"))
    timed = {"decode_s": np.full(2, 1.0), "vsg_s": np.full(2, 0.1), "progress_s": np.full(2, 0.5)}
    cache.write_video(other.uid, np.full((2, other.num_steps + 1), 0.5), timings=timed)
    table = T.timing_table(cache.timings_frame(), videos, source="lmm:m")
    assert table["workbench_k10"].isna().all() and table["workbench_example"].isna().all()
    view, note = T.timing_view(table)
    assert "workbench_k10" not in view.columns and "workbench_example" not in view.columns
    assert list(view["workbench"]) == list(table["workbench"])
    assert "K = 10" in note and PAPER_TIMING["example_uid"] in note
    full = table.assign(workbench_k10=1.0, workbench_example=2.0)  # values: kept, no line
    assert T.timing_view(full)[0] is full and T.timing_view(full)[1] is None
    assert T.timing_view(T.no_timings_table("none"))[1] is None  # the no-timings table as it is


def test_no_timings_table_never_invents_numbers():
    table = T.no_timings_table("no score cache given")
    assert (table["workbench"] == "no timings available").all()
    assert list(table["paper"]) == [1.201, 0.088, 0.814, 2.1]
    assert (table["note"] == "no score cache given").all()


def test_timing_tables_never_invent_timings(tmp_path):
    assert T.timing_tables(None)["summary"] is None
    sim = T.timing_tables(write_simulated_cache("coin", tmp_path, limit=2))
    assert sim["summary"] is None and "recorded no per-segment timings" in sim["message"]
    assert (sim["table"].frame["workbench"] == "no timings available").all()
    assert sim["table"].items is None  # timings have no (video, step) pairs
    video = load_dataset("coin")[0]
    cache = ScoreCache(tmp_path, ScoreKey("coin", "m", "p"))
    cache.write_video(
        video.uid,
        np.full((2, video.num_steps + 1), 0.5),
        timings={"decode_s": np.ones(2), "vsg_s": np.ones(2)},
    )
    real = T.timing_tables(cache.path)
    assert real["source"] == "lmm:m" and real["dataset"] == "coin"
    assert real["summary"].frame["total_s"].iloc[0] == pytest.approx(2.0)
    assert real["table"].items is None and real["table"].sources.observations == ("lmm:m",)
    assert real["table"].title("t") == "t (observations: lmm:m)"


def test_run_table_names_each_videos_outcome():
    summary = {
        "model": "random-init/m",
        "label": "random-init",
        "scored": ["a", "c"],
        "already_cached": ["b"],
        "rescored_unreadable": ["c"],
        "failed": {"d": "bad"},
    }
    table = T.run_table(summary)
    assert list(table["video"]) == ["b", "a", "c", "d"]
    assert list(table["outcome"]) == [
        "already cached",
        "scored now",
        "rescored (unreadable file)",
        "failed: bad",
    ]
    assert set(table["label"]) == {"random-init"} and set(table["model"]) == {"random-init/m"}


def test_timing_figure_draws_the_run_beside_the_papers_numbers():
    import matplotlib.pyplot as plt

    from baglm_nb.analyses.timing_figure import timing_figure

    summary = pd.DataFrame(
        {
            "num_steps": [3, 5],
            "videos": [2, 1],
            "segments": [11, 4],
            "decode_s": [0.2, 0.3],
            "vsg_s": [0.5, 0.6],
            "progress_s": [0.7, 1.1],
            "total_s": [1.4, 2.0],
            "realtime_share": [1.0, 0.5],
        }
    )
    fig = timing_figure(summary, "lmm:random-init/m", "title", 2.0)
    run, paper = fig.axes
    heights = [p.get_height() for p in run.patches]
    assert heights == pytest.approx([0.2, 0.3, 0.5, 0.6, 0.7, 1.1])  # stage by stage, by K
    bottoms = [p.get_y() for p in run.patches]
    assert bottoms == pytest.approx([0, 0, 0.2, 0.3, 0.7, 0.9])  # stacked
    expected = [PAPER_TIMING[s] for s in ("decode_s", "vsg_s", "progress_s")]
    assert [p.get_height() for p in paper.patches] == pytest.approx(expected)
    assert all(p.get_hatch() == "//" for p in paper.patches)  # paper only: hatched
    assert "paper only (not run here)" in paper.get_title()
    assert "random-init" in run.get_title() and "not a real LMM" in run.get_title()
    assert [t.get_text() for t in run.get_xticklabels()] == ["K = 3", "K = 5"]
    plt.close(fig)
