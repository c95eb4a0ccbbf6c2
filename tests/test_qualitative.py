"""One video's belief plot and per-video R@1 row (analyses.qualitative)."""

from __future__ import annotations

from pathlib import Path

import pytest
from reference import reference_recall

from baglm_nb.analyses.qualitative import qualitative_case
from baglm_nb.analyses.result_table import ResultTable
from baglm_nb.core.observations import from_simulation
from baglm_nb.core.pipeline import run_baglm
from baglm_nb.inputs.datasets import load_dataset

ROOT = Path(__file__).resolve().parent.parent


def test_qualitative_case_with_keyframes(tmp_path):
    video = load_dataset("coin")[0]
    (tmp_path / f"{video.uid}.mp4").symlink_to(ROOT / "tests" / "data" / "videos" / "cup.mp4")
    fig, case = qualitative_case("coin", video.uid, video_dir=tmp_path, keyframes=2)
    row = case.frame.iloc[0]
    assert row["keyframes"] == 2 and row["source"] == "simulated" and row["task"] == video.goal
    assert "simulated observations, not a real model" in fig.title_text
    # D is the tables' (the simulated LLaMA) and named; heatmaps even for a few steps
    assert row["D"] == "simulated-llm:llama" and "; D: simulated-llm:llama" in fig.title_text
    assert video.num_steps <= 5 and fig.style == "heatmap"
    assert fig.figure.axes[-2].get_images()[0].get_array().ndim == 3  # the keyframes (RGB)
    assert fig._repr_png_()[:4] == b"\x89PNG"  # display(fig) shows an image, not "<Figure ...>"
    lines, plain = qualitative_case("coin", video.uid, deps="oracle", style="lines")
    assert plain.frame["keyframes"].iloc[0] == 0 and plain.frame["D"].iloc[0] == "oracle"
    assert plain.sources.dependencies == ("oracle",)
    assert lines.style == "lines" and "; D: oracle" in lines.title_text
    with pytest.raises(KeyError):
        qualitative_case("coin", "no-such-video")


def test_qualitative_rows_keep_their_items():
    videos = load_dataset("coin")[:2]
    cases = [qualitative_case("coin", v.uid, deps="oracle")[1] for v in videos]
    result = ResultTable.concat(cases)
    table = result.frame
    assert list(table["video"]) == [v.uid for v in videos] and len(table) == 2
    items = result.items
    for video, row in zip(videos, table.itertuples(), strict=True):
        obs = from_simulation("coin", videos=[video])
        beliefs = run_baglm(obs, "oracle")
        assert row.baglm == round(reference_recall("coin", beliefs, [video]), 1)
        assert row.off_the_shelf == round(reference_recall("coin", obs.vsg, [video]), 1)
        mine = items[items["video_uid"] == video.uid]
        for method, value in (("BaGLM", row.baglm), ("off-the-shelf LMM", row.off_the_shelf)):
            assert round(mine[mine["method"] == method]["hit"].mean() * 100, 1) == value
