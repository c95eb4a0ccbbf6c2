"""A new dataset is one DatasetSpec entry plus its annotation file (and paper values to calibrate).

The toy dataset below is added the documented way (docs/architecture.md, "dataset"): a spec in
``DATASETS``, an annotation file in ``$BAGLM_DATA_DIR/annotations``, a paper value for the
calibration. No other code changes, and it runs through loading, statistics, simulation, the
filter, evaluation (both recall protocols), the online metrics and calibration.
"""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

from baglm_nb.core import sources
from baglm_nb.core.evaluation import evaluate
from baglm_nb.core.pipeline import compare, run_baglm
from baglm_nb.core.simulate import calibrate, default_params, offline_recall
from baglm_nb.inputs.datasets import DATASETS, DatasetSpec, Recall, dataset_stats, load_dataset
from baglm_nb.inputs.grid import ground_truth
from baglm_nb.inputs.paper import PAPER

FPS = 30.0
FRAMES = 1800  # 60 s: 120 samples at 2 fps, 30 two-second segments, 60 rows
#: (start, end) of the three steps of every toy video, in seconds.
INTERVALS = ((2.0, 14.5), (18.0, 33.2), (38.0, 56.0))


def _record(uid: str, task: str, steps: list[str]) -> dict:
    queries = [
        {"clip_start_sec": a, "clip_end_sec": b, "query": text}
        for (a, b), text in zip(INTERVALS, steps, strict=True)
    ]
    return {
        "video_uid": uid,
        "task": task,
        "goal": f"do {task}",
        "steps": steps,
        "video_num_frames": FRAMES,
        "video_fps": FPS,
        "clips": [{"annotations": [{"language_queries": queries}]}],
    }


def _records() -> list[dict]:
    tea, toast = ["boil water", "steep tea", "pour milk"], ["slice bread", "toast", "butter"]
    return [
        _record("t1", "tea", tea),
        _record("t2", "tea", tea),
        _record("b1", "toast", toast),
        _record("b2", "toast", toast),
        _record("b3", "toast", toast),
    ]


def _spec(**overrides) -> DatasetSpec:
    fields = {
        "goal_field": "goal",
        "steps_field": "steps",
        "group_fields": ("task",),
        "task_field": "task",
        "llm_goal_field": "goal",
        "display_name": "Toy",
        "calibrated_signal": 2.0,
        "pinned_signal": 2.0,
    }
    return DatasetSpec("toy", "toy_video_annots.json", **{**fields, **overrides})


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The toy dataset registered the documented way; returns its annotation file."""
    path = tmp_path / "annotations" / "toy_video_annots.json"
    path.parent.mkdir()
    path.write_text(json.dumps(_records()))
    monkeypatch.setenv("BAGLM_DATA_DIR", str(tmp_path))
    monkeypatch.setitem(DATASETS, "toy", _spec())
    return path


def _literal_recall(videos, beliefs) -> float:
    """The flat R@1 as a literal loop: each annotated step's earliest best row in its truth."""
    hits = pairs = 0
    for video in videos:
        b = beliefs[video.uid]
        y = ground_truth(video, b.shape[0])
        for k in range(video.num_steps):
            if y[:, k].any():
                pairs += 1
                hits += bool(y[int(np.argmax(b[:, k])), k])
    return 100.0 * hits / pairs


def test_toy_dataset_loads_with_its_grid_and_statistics(toy):
    videos = load_dataset("toy")
    assert [v.uid for v in videos] == ["t1", "t2", "b1", "b2", "b3"]
    assert [v.group for v in videos] == ["tea", "tea", "toast", "toast", "toast"]
    v = videos[0]
    assert v.dataset == "toy" and v.goal == v.llm_goal == "do tea" and v.num_steps == 3
    assert v.num_rows() == 60
    y = v.ground_truth()
    # rows floor(start) .. ceil(end) inclusive: 2..15, 18..34, 38..56
    assert [int(y[:, k].sum()) for k in range(4)] == [14, 17, 19, 0]
    stats = dataset_stats("toy")
    assert (stats["videos"], stats["tasks"], stats["groups"]) == (5, 2, 2)
    assert stats["mean_steps"] == 3.0 and stats["evaluable_pairs"] == 15
    assert stats["mean_segment_s"] == pytest.approx(np.mean([12.5, 15.2, 18.0]), abs=0.005)


def test_toy_dataset_is_reread_when_its_file_changes(toy):
    assert len(load_dataset("toy")) == 5
    toy.write_text(json.dumps(_records()[:2]))  # another size: the cache key changes
    assert [v.uid for v in load_dataset("toy")] == ["t1", "t2"]


def test_toy_dataset_is_simulated_filtered_and_evaluated(toy):
    videos = load_dataset("toy")
    obs = sources.observations("toy", "simulated")
    assert obs.label == "simulated" and obs.uids() == [v.uid for v in videos]
    assert default_params("toy").signal == 2.0
    for deps in ("oracle", "simulated-llm:llama"):
        beliefs = run_baglm(obs, deps)
        value = evaluate("toy", beliefs, videos)
        assert value == pytest.approx(_literal_recall(videos, beliefs), abs=1e-9)
        result = compare(obs, deps, online={"threshold": 0.5, "patience": 2})
        assert result["baglm"] == pytest.approx(value, abs=1e-9)
        raw = {u: obs.vsg[u] for u in beliefs}
        assert result["off_the_shelf"] == pytest.approx(_literal_recall(videos, raw), abs=1e-9)
        assert 0.0 <= result["online"]["baglm"]["announce_recall"] <= 1.0


def test_toy_dataset_per_task_recall_follows_its_spec(toy, monkeypatch):
    """With a per-task Recall the number is the mean over subsets of the per-task means."""
    monkeypatch.setitem(DATASETS, "toy", _spec(recall=Recall("avg_r_at_1", 3, 4)))
    videos = load_dataset("toy")
    beliefs = run_baglm(sources.observations("toy", "simulated"), "oracle")

    per_subset = []
    for seed in range(3):
        random.seed(seed)
        chosen = set(random.sample([v.uid for v in videos], 4))
        by_task = {}
        for video in videos:
            if video.uid in chosen:
                by_task.setdefault(video.task, []).append(video)
        per_subset.append(np.mean([_literal_recall(vs, beliefs) for vs in by_task.values()]))
    assert evaluate("toy", beliefs, videos) == pytest.approx(float(np.mean(per_subset)), abs=1e-9)


def test_toy_dataset_calibrates_against_its_paper_value(toy, monkeypatch):
    monkeypatch.setitem(DATASETS, "toy", _spec(calibrated_signal=None, pinned_signal=None))
    with pytest.raises(ValueError, match="no .* twin signal.*calibrate --twin .* --dataset toy"):
        default_params("toy")
    with pytest.raises(ValueError, match="no paper off-the-shelf R@1"):
        calibrate("toy")
    monkeypatch.setitem(PAPER["off_the_shelf"], "toy", 60.0)
    result = calibrate("toy", tol=2.0)
    assert abs(result.achieved - 60.0) <= 2.0 and not math.isnan(result.signal)
    # the value found is the off-the-shelf R@1 of the simulation at that signal
    assert offline_recall("toy", result.params) == pytest.approx(result.achieved, abs=1e-9)
