"""Prepared data (``make data``): computed once, read by the figure notebooks, same numbers."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from cli_runs import run_main
from test_notebooks import SMALL, rendered

from baglm_nb.inputs.datasets import DATASETS

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "03_main_results.ipynb"


def _run(tmp: Path, params: dict) -> pd.DataFrame:
    import papermill

    tmp.mkdir()
    papermill.execute_notebook(
        str(NOTEBOOK),
        str(tmp / NOTEBOOK.name),
        parameters=params,
        cwd=str(tmp),
        kernel_name="python3",
        progress_bar=False,
    )
    return pd.read_csv(tmp / "main_results.csv")


def test_notebook_from_prepared_caches_equals_the_in_memory_simulation(tmp_path, tmp_path_factory):
    """Notebook 03 on prepared caches makes the rows of its run on the in-memory simulation:
    the run that ``tests/test_notebooks.py`` checks (the same small parameters, every dataset;
    :func:`test_notebooks.rendered`: one run per test session), here on two of its datasets."""
    small = SMALL[NOTEBOOK.stem][0]
    manifest = tmp_path / "prepared.json"
    cache = str(tmp_path / "cache")
    # the verb in this process (what it writes is checked here, not the process boundary)
    argv = ["simulate", "--dataset", "htstep", "crosstask", "--limit", str(small["limit"])]
    out = run_main(*argv, "--cache-root", cache, "--manifest", str(manifest))
    assert out.returncode == 0, out.stderr[-2000:]
    scores = json.loads(manifest.read_text())["scores"]
    assert sorted(scores) == ["crosstask", "htstep"]
    assert all(
        Path(p).is_absolute() and (Path(p) / "config.json").is_file() for p in scores.values()
    )
    # two videos per dataset: the prepared caches and the in-memory simulation still go through
    # every table of the notebook, each over more than one video
    datasets = [name for name in DATASETS if name in scores]  # in the full run's order
    prepared = _run(tmp_path / "prepared", {**small, "datasets": datasets, "scores": scores})
    in_memory = pd.read_csv(rendered(NOTEBOOK.stem, tmp_path_factory) / "main_results.csv")
    names = {DATASETS[name].display_name for name in scores}
    assert names < set(in_memory["dataset"])  # the run of every dataset, these two among them
    in_memory = in_memory[in_memory["dataset"].isin(names)].reset_index(drop=True)
    pd.testing.assert_frame_equal(prepared, in_memory)
    computed = prepared[prepared["source"] != "paper"]  # the paper's other methods: no videos
    assert set(computed["source"]) == {"simulated"} and set(computed["videos"]) == {2}
    assert set(computed["dataset"]) == names


@pytest.mark.parametrize("stem", ["03_main_results", "06_localization"])
def test_one_make_rule_per_notebook_reads_the_prepared_file(stem):
    # -W: as if the notebook had changed, so the rule runs whether or not its page is built
    cmd = ["make", "-n", "-W", f"notebooks/{stem}.ipynb", f"figures/{stem}"]
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    line = next(x for x in out.splitlines() if "run_notebooks.sh" in x)
    assert "PARAMS_FILE=data/cache/prepared.json" in line and f"notebooks/{stem}.ipynb" in line


def test_make_data_runs_again_when_the_default_twin_changes():
    """``make data`` writes the default twin's caches and the notebooks read whatever
    ``prepared.json`` names: so the rule depends on every module that decides the default
    parameters (the simulation, the twins with ``DEFAULT_TWIN``, the datasets' fitted signals),
    and a ``prepared.json`` made under another default twin is remade, not read."""
    import inspect

    from baglm_nb.core import simulate, twins
    from baglm_nb.inputs import datasets

    out = subprocess.run(
        ["make", "-pnq", "data"], cwd=ROOT, capture_output=True, text=True, timeout=120
    ).stdout
    rule = next(
        line.split(":", 1)[1].split()
        for line in out.splitlines()
        if line.startswith("data/cache/prepared.json:") and "SHELLSTATUS" not in line
    )
    for module in (simulate, twins, datasets):
        path = Path(inspect.getsourcefile(module)).resolve().relative_to(ROOT).as_posix()
        assert path in rule, path
    assert simulate.DEFAULT_TWIN is twins.DEFAULT_TWIN  # decided in a file of the rule
