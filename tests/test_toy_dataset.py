"""A new dataset is one DatasetSpec entry plus its annotation file (and paper values to calibrate).

The toy dataset below is added the documented way (docs/architecture.md, "dataset"): a spec in
``DATASETS``, an annotation file in ``$BAGLM_DATA_DIR/annotations``, a paper value for the
calibration. No other code changes, and it runs through loading, statistics, the CLI's and the
notebooks' choices, simulation, the filter, evaluation (both recall protocols), the online
metrics, calibration, every table the notebooks build (with no paper numbers: those cells stay
empty) and the explorer.
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
        {"clip_start_sec": a, "clip_end_sec": b, "query": text, "step": f"{task}-{k}"}
        for k, ((a, b), text) in enumerate(zip(INTERVALS, steps, strict=True))
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


def test_toy_dataset_is_a_choice_of_the_cli_and_the_notebooks(toy, capsys):
    """The CLI's choices, the Makefile's list and the notebooks' parameter check read DATASETS."""
    from baglm_nb.apps.cli.main import main
    from baglm_nb.apps.parameters import check_parameters

    assert main(["stats", "--names"]) == 0
    assert "toy" in capsys.readouterr().out.split()
    assert main(["stats", "--dataset", "toy"]) == 0
    assert json.loads(capsys.readouterr().out)["videos"] == 5
    assert check_parameters({"dataset": "toy", "datasets": ["htstep", "toy"]})["dataset"] == "toy"


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


# ------------------------------------------------------------------------------------------
# every notebook's tables and the explorer's computation


def _paper_is_empty(frame, columns=("paper",)) -> bool:
    """No paper value in ``columns`` (those present): the toy has none."""
    present = [c for c in frame.columns if c in columns]
    return bool(frame[present].isna().all().all())


def test_toy_dataset_passes_through_every_notebooks_tables(toy):
    """Each table builder the notebooks call (00, 02-06, 08, 09), with the layouts that show
    them, on the toy dataset: rows named by its spec, the paper's columns empty.

    Notebooks 01 and 07 score and time video files (the sample clips), not a dataset's tables.
    """
    import matplotlib.pyplot as plt

    from baglm_nb.analyses import ablations, assistance, breakdowns, layouts, plots, stay
    from baglm_nb.analyses.alerts import alert_table
    from baglm_nb.analyses.display import MISSING, format_cells
    from baglm_nb.analyses.localization import localization_table, windowed_recall_table
    from baglm_nb.analyses.qualitative import qualitative_case
    from baglm_nb.analyses.results import (
        comparison_table,
        dataset_table,
        dataset_view,
        main_results_table,
        oracle_table,
        transition_table,
    )
    from baglm_nb.analyses.simulation_check import simulation_check, twin_check, twin_errors
    from baglm_nb.analyses.violations import answer_table, violation_report

    deps, name = "simulated-llm:llama", "Toy"
    stats = dataset_stats("toy")
    # 00: the statistics, with no paper figure to show beside them
    table = dataset_table(["toy"]).frame
    assert set(table["dataset"]) == {name} and table["paper"].isna().all()
    assert all(stats[k] == v for k, v in zip(table["statistic"], table["workbench"], strict=True))
    assert set(format_cells(dataset_view(table))["paper"]) == {MISSING}
    # 02: dependencies
    violations, long = violation_report("toy", [deps, "oracle"], thresholds=(0.0, 0.5))
    assert set(long.frame["tasks"]) == {stats["groups"]} and len(violations.frame) == 4
    answers = answer_table("toy", [deps, "oracle"]).frame
    assert set(answers["matrices"]) == {stats["groups"]}
    # 03: main results and the paper-form layouts
    observations = sources.observations_for(["toy"], {})
    main = main_results_table(observations, deps)
    comparison = comparison_table(main).frame
    assert list(comparison["method"]) == ["off-the-shelf LMM", "BaGLM"]  # no paper-only rows
    [(part, layout)] = layouts.comparison_layouts(comparison)
    assert part == name and layout[name].notna().all()
    transition = transition_table(observations, deps).frame
    assert len(layouts.transition_layout(transition)) == 4
    oracles = oracle_table(observations, deps).frame
    assert len(layouts.oracle_layout(oracles)) == 4
    # 04: ablations
    llm = ablations.llm_table(observations, {"LLaMA-3.3-70B": deps}).frame
    assert list(layouts.llm_layout(llm)["dataset"]) == [name]
    tables = {
        "main": main.frame,
        "transition": transition,
        "oracles": oracles,
        "prior": ablations.prior_table(observations, deps).frame,
        "prompt": ablations.prompt_table(observations, {}).frame,
        "stepping": ablations.stepping_table(observations, deps).frame,
        "duration": ablations.segment_duration_table(["toy"], [1, 2], deps=deps).frame,
    }
    for key, frame in tables.items():
        assert set(frame["dataset"]) == {name} and _paper_is_empty(frame), key
        assert len(layouts.paper_layout(frame)) > 0, key
    # 05: the out-of-sample check has nothing to check against; sweeps and breakdowns
    gains, patterns = simulation_check(["toy"], deps=deps, transition_datasets=["toy"])
    assert _paper_is_empty(gains.frame, ("paper_baglm", "paper_gain"))
    assert _paper_is_empty(patterns.frame, ("paper_both", "paper_static"))
    assert [view for _, view, _ in layouts.gain_layouts(gains.frame)]
    assert [view for _, view, _ in layouts.pattern_layouts(patterns.frame)]
    twins = twin_check(["toy"], deps=deps).frame
    assert set(twins["dataset"]) == {name} and twins["paper"].isna().all()
    assert len(twin_errors(twins)) == 2
    sensitivity = ablations.sensitivity_table("toy", [0.0, 1.0], deps=deps).frame
    assert len(layouts.sensitivity_layout(sensitivity)[0]) > 0
    quality = ablations.dependency_quality_table("toy", [0.0, 1.0]).frame
    assert set(quality["dataset"]) == {name} and quality["paper_gain"].isna().all()
    position, steps = breakdowns.breakdown_tables(observations[0], deps)
    assert position.frame["paper"].isna().all() and set(steps.frame["num_steps"]) == {3}
    # 06: localization (the toy's annotations carry step ids) and the windowed recall
    obs = observations[0]
    found = localization_table(obs, deps).frame
    assert len(found) == 2 and found["paper @0.5"].isna().all()
    assert len(layouts.localization_layout(found)) == 2
    assert len(windowed_recall_table(obs, deps).frame) == 2
    # 08: one video's beliefs
    _, row = qualitative_case("toy", "t1", deps=deps)
    assert list(row.frame["dataset"]) == [name]
    # 09: assistance
    lags = assistance.lag_table(observations, deps, [0, None]).frame
    assert set(lags["dataset"]) == {name} and len(assistance.lag_view(lags)) == 4
    timeline = assistance.timeline_data(obs, deps, "b1", 2)
    assert timeline["video"].uid == "b1"
    correlated = assistance.correlated_observations(["toy"], 0.8)
    assert len(assistance.lag_table(correlated, deps, [0]).frame) == 2
    alerts = alert_table(["toy"]).frame
    assert set(alerts["dataset"]) == {name} and set(alerts["mistake"]) == {"skip", "swap"}
    sweep = stay.stay_table(["simulated:iid"], ["toy"], deps, [0.0, 0.5]).frame
    assert set(sweep["dataset"]) == {name} and len(stay.stay_view(sweep)) == len(sweep)
    grid = stay.announcement_grid(obs, deps, thresholds=(0.3, 0.5), patiences=(1,), lags=(0,))
    settings = {"previous": stay.PREVIOUS_ANNOUNCEMENT, "chosen": stay.choose_announcement(grid)}
    assert len(stay.announcement_table(observations, deps, settings).frame) == 2
    # the notebooks' figures of these tables draw the toy too
    duration = tables["duration"]
    figures = [
        plots.results_bars(main.frame, "main"),
        plots.results_bars(position.frame, "position", group="bin"),
        plots.violation_lines(long.frame, "violations"),
        plots.duration_lines(duration, "duration"),
        plots.sensitivity_lines(sensitivity, "sensitivity"),
        plots.dependency_quality_lines(quality, "quality"),
        plots.steps_lines(steps.frame, "steps"),
        plots.localization_bars(found, "localization"),
        assistance.lag_lines(lags, "lags"),
        assistance.timeline(timeline, "timeline"),
        stay.stay_lines(sweep, "stay"),
    ]
    for fig in figures:
        assert fig.axes and any(ax.has_data() for ax in fig.axes)
        plt.close(fig)


def test_toy_dataset_in_the_explorer(toy):
    """The explorer's computation on each toy video is the pipeline's, and the widget names it."""
    from baglm_nb.apps.explorer_compute import compute_video, video_recall
    from baglm_nb.apps.widgets import Explorer
    from baglm_nb.core.observations import from_simulation

    videos = load_dataset("toy")
    params = default_params("toy")
    obs = from_simulation("toy", params, videos=videos)
    beliefs = run_baglm(obs, "simulated-llm:llama")
    for video in videos:
        result = compute_video(video, params=params)
        np.testing.assert_array_equal(result.scores, obs.vsg[video.uid])
        np.testing.assert_allclose(result.beliefs, beliefs[video.uid], atol=1e-12)
        assert result.recall_baglm == video_recall(video, beliefs[video.uid])
    explorer = Explorer(["toy"])
    assert explorer.dataset.options == (("Toy", "toy"),)
    assert explorer.video.value == "t1" and "R@1 on this video" in explorer.recall.value
