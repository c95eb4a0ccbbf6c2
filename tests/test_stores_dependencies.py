"""baglm_nb.stores.dependencies: the dependency cache."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from baglm_nb.stores.dependencies import DependencyCache
from baglm_nb.stores.keys import DependencyKey
from baglm_nb.stores.scores import ScoreCache

LLM = "llama-3.3-70b-instruct"


def test_dependency_round_trip_and_orientation(tmp_path: Path) -> None:
    deps = DependencyCache(tmp_path, DependencyKey("htstep", LLM, "v1"))
    steps = ["gather", "cut", "fry"]
    m = np.zeros((3, 3))
    m[2, 1] = 0.9  # "cut" (column 1) is a prerequisite of target "fry" (row 2)
    m[1, 0] = 1.0
    m[0, 0] = 0.25
    path = deps.write("Make Milanesa_B", steps, m)
    assert path.name == "Make%20Milanesa_B.parquet"
    assert json.loads((deps.path / "config.json").read_text())["key"] == deps.key.to_dict()

    np.testing.assert_array_equal(deps.read("Make Milanesa_B"), m)
    assert deps.steps("Make Milanesa_B") == steps
    assert deps.groups() == ["Make Milanesa_B"] and deps.has("Make Milanesa_B")
    assert len(deps) == 1 and list(deps.read_all()) == ["Make Milanesa_B"]

    df = pq.read_table(path).to_pandas()
    assert list(df.columns) == [
        "group",
        "target_index",
        "prereq_index",
        "target_step",
        "prereq_step",
        "p_yes",
    ]
    assert len(df) == 9  # every ordered pair, diagonal included
    row = df[(df.target_step == "fry") & (df.prereq_step == "cut")].iloc[0]
    assert (row.target_index, row.prereq_index, row.p_yes) == (2, 1, 0.9)
    assert df[(df.target_step == "cut") & (df.prereq_step == "fry")].p_yes.item() == 0.0

    with pytest.raises(KeyError, match="'other'"):
        deps.read("other")
    other = {"dataset": "x", "model": "y", "prompt_version": "z"}
    (deps.path / "config.json").write_text(json.dumps({"key": other}))
    with pytest.raises(ValueError, match="config.json"):
        DependencyCache(tmp_path, DependencyKey("htstep", LLM, "v1"))


@pytest.mark.parametrize(
    ("steps", "matrix", "match"),
    [
        (["a", "b"], np.zeros((3, 3)), "matrix has shape \\(3, 3\\), expected \\(2, 2\\)"),
        (["a", "b"], np.array([[0.0, np.nan], [0.0, 0.0]]), "matrix contains NaN"),
        (["a", "b"], np.array([[0.0, 1.5], [0.0, 0.0]]), "matrix has values outside"),
        (["a", "b"], np.array([[0.0, -0.1], [0.0, 0.0]]), "matrix has values outside"),
        ([], np.zeros((0, 0)), "steps is empty"),
        ("ab", np.zeros((2, 2)), "steps must be a sequence"),
    ],
)
def test_dependency_validation(tmp_path: Path, steps, matrix, match: str) -> None:
    deps = DependencyCache(tmp_path, DependencyKey("htstep", "oracle", "v1"))
    with pytest.raises(ValueError, match=match) as info:
        deps.write("task 1", steps, matrix)
    assert "'task 1'" in str(info.value)
    assert deps.groups() == []


def test_open_checks_kind_and_follows_a_moved_folder(tmp_path: Path) -> None:
    deps = DependencyCache(tmp_path, DependencyKey("htstep", LLM, "v1"))
    deps.write("g", ["a", "b"], np.eye(2))
    same = DependencyCache.open(deps.path)
    assert same.root == tmp_path and same.path == deps.path and same.groups() == ["g"]
    with pytest.raises(ValueError, match="holds a 'dependencies' cache, not 'scores'"):
        ScoreCache.open(deps.path)
    with pytest.raises(ValueError, match="no config.json"):
        DependencyCache.open(tmp_path)

    moved = tmp_path / "moved"
    deps.path.rename(moved)
    again = DependencyCache.open(moved)
    assert again.path == moved and again.groups_dir == moved / "groups"
    np.testing.assert_array_equal(again.read("g"), np.eye(2))
    assert repr(again) == f"DependencyCache({str(moved)!r}, groups=1)"
