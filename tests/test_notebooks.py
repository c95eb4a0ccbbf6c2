"""Every notebook runs headlessly with papermill on small parameters and writes its files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

papermill = pytest.importorskip("papermill")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))

#: Small parameters per notebook, and the files each must write into its working folder.
SMALL = {
    "00_dataset_statistics": ({"datasets": ["coin"]}, ["dataset_statistics.csv"]),
    "03_main_results": (
        {"datasets": ["htstep", "crosstask"], "limit": 6},
        ["main_results.csv", "main_results.md", "main_results.png", "transition_ablation.csv",
         "oracles.csv", "oracles.png"],
    ),
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
