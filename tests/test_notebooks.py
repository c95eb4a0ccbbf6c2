"""Every notebook runs headlessly with papermill on small parameters and writes its files."""

from __future__ import annotations

import json
from pathlib import Path

import papermill
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))

#: Small parameters per notebook, and the files each must write into its working folder.
SMALL = {
    "00_dataset_statistics": (
        {"datasets": ["coin"]},
        ["dataset_statistics.csv", "dataset_statistics.summary.json"],
    ),
    "01_score_segments": (
        {"dataset": "coin", "video_dir": str(ROOT / "tests" / "data" / "videos"),
         "annotations": str(ROOT / "tests" / "data" / "annotations"),
         "model": "random-init:internvl", "limit": 1, "cache_root": "cache"},
        ["score_summary.json", "timings_per_video.csv"],
    ),
    "02_dependencies": (
        {"limit": 5, "thresholds": [0.0, 0.5, 1.0]},
        ["dependency_violations.csv", "dependency_violations.md",
         "dependency_violations_long.csv"],
    ),
    "03_main_results": (
        {"datasets": ["htstep", "crosstask"], "limit": 6},
        ["main_results.csv", "main_results.md", "main_results.png", "transition_ablation.csv",
         "oracles.csv", "oracles.png", "main_results.items.parquet", "main_results.summary.json",
         "transition_ablation.items.parquet", "oracles.items.parquet"],
    ),
    "04_ablations": (
        {"datasets": ["htstep", "crosstask"], "limit": 5, "durations": [1, 2],
         "duration_datasets": ["htstep"]},
        ["prior_ablation.csv", "prior_ablation.md", "prior_ablation.png", "llm_ablation.csv",
         "prompt_ablation.csv", "stepping_ablation.csv", "stepping_ablation.png",
         "segment_duration.csv", "segment_duration.png", "prior_ablation.items.parquet",
         "prior_ablation.summary.json", "segment_duration.items.parquet"],
    ),
    "05_analysis": (
        {"limit": 6, "signals": [0.5, 2.0], "sensitivity_datasets": ["htstep"],
         "breakdown_datasets": ["htstep"]},
        ["sensitivity.csv", "sensitivity.md", "sensitivity.png", "position.csv", "position.md",
         "position_htstep.png", "candidate_steps.csv", "candidate_steps_htstep.png",
         "sensitivity.items.parquet", "position.items.parquet", "candidate_steps.items.parquet"],
    ),
    "06_localization": (
        {"limit": 4},
        ["localization.csv", "localization.md", "ego4d_windowed_recall.csv",
         "ego4d_windowed_recall.md"],
    ),
    "07_timing": ({}, ["timing.csv", "timing.md"]),
    "08_qualitative": (
        {"videos": {"coin": ["xZecGPPhbHE"]}},
        ["qualitative.csv", "qualitative.md", "qualitative_coin_xZecGPPhbHE.png",
         "qualitative.items.parquet", "qualitative.summary.json"],
    ),
}  # fmt: skip


#: Markdown tables that must say they come from simulated observations (the CPU default).
SIMULATED_TITLES = {
    "04_ablations": ["prior_ablation.md", "llm_ablation.md", "prompt_ablation.md",
                     "stepping_ablation.md", "segment_duration.md"],
    "05_analysis": ["sensitivity.md", "position.md", "candidate_steps.md"],
    "06_localization": ["localization.md", "ego4d_windowed_recall.md"],
    "08_qualitative": ["qualitative.md"],
}  # fmt: skip


def test_every_notebook_has_small_parameters():
    assert NOTEBOOKS, "no notebooks found"
    missing = [nb.stem for nb in NOTEBOOKS if nb.stem not in SMALL]
    assert not missing, f"add small test parameters for {missing}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_committed_clean_with_parameters_cell(notebook):
    nb = json.loads(notebook.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert not any(c.get("outputs") or c.get("execution_count") for c in code)
    assert sum("parameters" in c.get("metadata", {}).get("tags", []) for c in code) == 1


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_on_small_parameters(notebook, tmp_path):
    params, outputs = SMALL.get(notebook.stem, ({}, []))
    papermill.execute_notebook(
        str(notebook),
        str(tmp_path / notebook.name),
        parameters=params,
        cwd=str(tmp_path),
        kernel_name="python3",
        progress_bar=False,
    )
    for name in outputs:
        assert (tmp_path / name).stat().st_size > 0, name
    if notebook.stem == "03_main_results":
        text = (tmp_path / "main_results.md").read_text()
        assert "simulated observations, not a real model" in text
    for name in SIMULATED_TITLES.get(notebook.stem, []):
        assert "simulated observations, not a real model" in (tmp_path / name).read_text(), name
    if notebook.stem == "04_ablations":
        text = (tmp_path / "prior_ablation.md").read_text()
        assert "slot:" in text and "next-step" in text  # simulated: no next-step scores
    if notebook.stem == "07_timing":
        assert "no timings available" in (tmp_path / "timing.md").read_text()
