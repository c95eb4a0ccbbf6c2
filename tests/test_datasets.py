"""Datasets against the real annotation files and reference-protocol §6.1 / §7.5."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from toys import toy_video

from baglm_nb.inputs.datasets import (
    DATASETS,
    AnnotationError,
    annotation_path,
    dataset_stats,
    load_dataset,
)
from baglm_nb.inputs.grid import ground_truth, num_rows

# reference-protocol §7.5 (these match the paper's text where the paper gives a number), written
# with the precision the reference gives: each value is checked to half a unit of its last digit.
EXPECTED = {
    "htstep": dict(
        videos="600",
        tasks="120",
        groups="150",
        mean_steps="10.13",
        mean_duration_s="382.8",
        mean_segment_s="15.9",
        evaluable_pairs="2387",
        mean_rows="381.3",
    ),
    "crosstask": dict(
        videos="2308",
        tasks="18",
        groups="18",
        mean_steps="7.50",
        mean_duration_s="278.9",
        mean_segment_s="10.65",
        evaluable_pairs="11922",
        mean_rows="277.9",
    ),
    "ego4d_goalstep": dict(
        videos="134",
        tasks="43",
        groups="134",
        mean_steps="16.99",
        mean_duration_s="1688",
        mean_segment_s="52.8",
        evaluable_pairs="2276",
        mean_rows="1687.1",
    ),
    "coin": dict(
        videos="2354",
        tasks="180",
        groups="180",
        mean_steps="4.36",
        mean_duration_s="141.6",
        mean_segment_s="14.8",
        evaluable_pairs="6854",
        mean_rows="140.6",
    ),
}


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_statistics_match_reference(name):
    stats = dataset_stats(name)
    for key, text in EXPECTED[name].items():
        decimals = len(text.partition(".")[2])
        assert stats[key] == pytest.approx(float(text), abs=0.5 * 10**-decimals + 1e-9), key


def test_stats_cli_prints_json():
    out = subprocess.run(
        [sys.executable, "-m", "baglm_nb", "stats", "--dataset", "crosstask"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    stats = json.loads(out)
    assert stats["videos"] == 2308 and stats["tasks"] == 18


def test_stats_names_is_the_makefiles_dataset_list():
    """``stats --names`` prints DATASETS; ``make data`` simulates exactly those (dry run)."""
    out = subprocess.run(
        [sys.executable, "-m", "baglm_nb", "stats", "--names"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert out.split() == list(DATASETS) == ["htstep", "crosstask", "ego4d_goalstep", "coin"]
    root = Path(__file__).resolve().parent.parent
    dry = subprocess.run(
        ["make", "-n", "-B", "-C", str(root), "data"], check=True, capture_output=True, text=True
    ).stdout
    assert f"simulate --dataset {out.strip()} --cache-root" in dry


def test_example_video_grid_and_fields():
    video = load_dataset("htstep")[0]
    assert video.uid == "-25-1nbOki0"
    assert video.goal == "Make Nigerian Style Jollof Rice"
    assert video.group == "Make Nigerian Style Jollof Rice_none"
    assert video.num_steps == 10
    assert video.num_rows() == 566  # 283 two-second segments, as in the paper
    first = video.segments[0]
    assert first.step == "Blend your tomatoes, scotch bonnet and tatashe together."
    assert first.step_id == "507"
    y = video.ground_truth()
    col = y[:, first.step_index]
    assert col[95] and col[112] and not col[94]  # floor(95.99)=95 .. ceil(111.89)=112 inclusive
    assert not y[:, -1].any()  # none never gets ground truth


def test_goal_and_group_fields_per_dataset():
    ct = load_dataset("crosstask")[0]
    assert (ct.goal, ct.group, ct.llm_goal) == ("Make Pancakes", "91515", "91515")
    assert ct.steps[0] == "add flour" and ct.segments[0].step_index == 3
    eg = load_dataset("ego4d_goalstep")[0]
    assert eg.goal == "Makes the bread" and eg.group == eg.uid and eg.task == "COOKING:MAKE_BREAD"
    coin = load_dataset("coin")[0]
    assert coin.goal == "PutOnHairExtensions" and coin.group == "PutOnHairExtensions"


def test_duplicate_step_text_goes_to_last_column():
    videos = [v for v in load_dataset("htstep") if v.steps.count("Serve hot.") == 2]
    assert len(videos) == 5
    last = len(videos[0].steps) - 1 - videos[0].steps[::-1].index("Serve hot.")
    for v in videos:
        for seg in v.segments:
            if seg.step == "Serve hot.":
                assert seg.step_index == last


def _video(segments, frames=300, fps=30.0, k=3):
    steps = [f"s{i}" for i in range(k)]
    return toy_video(segments, steps, fps=fps, num_frames=frames)


def test_ground_truth_clipping_and_inclusive_rows():
    video = _video([(0.2, 1.5, 0), (2.0, 3.0, 1), (8.5, 30.0, 2)])
    t = video.num_rows()
    assert t == 10  # 300 frames at 30 fps, 20 samples, 5 segments of 4 frames
    y = ground_truth(video, t)
    assert y[:, 0].nonzero()[0].tolist() == [0, 1, 2]
    assert y[:, 1].nonzero()[0].tolist() == [2, 3]
    assert y[:, 2].nonzero()[0].tolist() == [8, 9]  # clipped at T


def test_num_rows_rules():
    assert num_rows(16988, 30.000035319090323) == 566
    assert num_rows(16988, 30.000035319090323, segment_duration=4) == 564
    assert num_rows(16988, 30.000035319090323, segment_duration=1) == 566
    with pytest.raises(ValueError, match="segment_duration"):
        num_rows(100, 30.0, segment_duration=1.5)


def test_errors_name_file_record_and_field(tmp_path):
    path = tmp_path / "coin_video_annots.json"
    record = {
        "video_uid": "abc",
        "video_num_frames": 100,
        "video_fps": 25.0,
        "activity": "A",
        "step_headline": ["x"],
        "clips": [
            {
                "annotations": [
                    {
                        "language_queries": [
                            {"clip_start_sec": 1.0, "clip_end_sec": 2.0, "query": "y"}
                        ]
                    }
                ]
            }
        ],
    }
    path.write_text(json.dumps([record]))
    with pytest.raises(AnnotationError, match=r"coin_video_annots.json.*'abc'.*query 'y'"):
        load_dataset("coin", tmp_path)
    del record["video_fps"]
    path.write_text(json.dumps([record]))
    with pytest.raises(AnnotationError, match=r"record 0 .*'video_fps'"):
        load_dataset("coin", tmp_path)
    path.write_text("{not json")
    with pytest.raises(AnnotationError, match="not valid JSON"):
        load_dataset("coin", tmp_path)
    with pytest.raises(AnnotationError, match="not found"):
        load_dataset("htstep", tmp_path)
    with pytest.raises(ValueError, match="unknown dataset"):
        load_dataset("howto100m")


def test_records_keep_file_order():
    raw = json.loads(annotation_path("crosstask").read_text())
    assert [v.uid for v in load_dataset("crosstask")] == [r["video_uid"] for r in raw]


def test_cached_loading_returns_equal_records():
    a, b = load_dataset("htstep"), load_dataset("htstep")
    assert a == b and a is not b
    assert np.mean([v.num_steps for v in a]) == pytest.approx(10.13, abs=0.01)
