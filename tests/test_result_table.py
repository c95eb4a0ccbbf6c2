"""ResultTable: a table's rows, items and sources together; its title, its files, its summary."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from baglm_nb.analyses.ablations import prior_table
from baglm_nb.analyses.display import show_table
from baglm_nb.analyses.result_table import (
    NOT_USED,
    ResultTable,
    Sources,
    current_commit,
    sources_label,
    title_for,
    write_table,
)
from baglm_nb.analyses.results import main_results_table, oracle_table
from baglm_nb.core.observations import from_simulation

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def observations():
    return [from_simulation("htstep", limit=3), from_simulation("coin", limit=3)]


@pytest.fixture(scope="module")
def main(observations):
    return main_results_table(observations)


def test_a_builder_names_the_sources_its_rows_used(observations, main):
    assert main.sources == Sources(("simulated",), ("simulated-llm:llama",))
    assert main.title("Main results") == (
        "Main results; D: simulated-llm:llama (simulated observations, not a real model)"
    )
    oracles = oracle_table(observations)  # LLM D rows and oracle D rows
    assert oracles.sources.dependencies == ("simulated-llm:llama", "oracle")
    assert oracles.title("T", dependencies=False) == "T (simulated observations, not a real model)"
    # only slot rows (no dependency source): the observations are still named, no D
    slots = prior_table(observations[:1], deps={})
    assert set(slots.frame["source"]) == {"none"}
    assert slots.sources == Sources(("simulated",), ())
    assert slots.title("T") == "T (simulated observations, not a real model)"


def test_title_is_title_for_with_the_d_column():
    frame = pd.DataFrame({"source": ["lmm:a", "lmm:a", "lmm:a"], "D": ["x", NOT_USED, None]})
    table = ResultTable.of(frame, observations=["lmm:a"])
    assert table.sources.dependencies == ("x",)
    assert (
        table.title("R@1")
        == title_for("R@1", "lmm:a", frame)
        == ("R@1; D: x (observations: lmm:a)")
    )
    assert title_for("R@1", "lmm:a", table) == table.title("R@1")


def test_sources_label_joins_sorted_distinct_labels():
    assert sources_label(["simulated", "lmm:b, float64", "simulated"]) == (
        "lmm:b, float64 + simulated"
    )
    assert sources_label(iter(["simulated"])) == "simulated"
    assert sources_label([]) == "none"
    a = ResultTable.of(pd.DataFrame({"D": ["p"]}), observations=["simulated"])
    b = ResultTable.of(pd.DataFrame({"D": ["q", "p"]}), observations=["lmm:m"])
    both = ResultTable.concat([a, b])
    assert both.sources == Sources(("simulated", "lmm:m"), ("p", "q"))
    assert both.sources_label() == "lmm:m + simulated"
    assert both.items is None and list(both.frame["D"]) == ["p", "q", "p"]


def test_concat_keeps_the_items_of_the_tables_that_have_them(main):
    plain = ResultTable.of(pd.DataFrame({"dataset": ["x"]}))
    both = ResultTable.concat([main, plain])
    assert len(both) == len(main) + 1
    pd.testing.assert_frame_equal(both.items, main.items)
    assert len(ResultTable.concat([])) == 0


def test_write_keeps_the_csv_of_the_frame_and_records_commit_and_parameters(main, tmp_path):
    scores = {"coin": Path("/x/y"), "htstep": ROOT / "data" / "cache" / "h"}
    params = {"datasets": ("htstep", "coin"), "limit": 3, "scores": scores}
    main.write(tmp_path / "main", "T", params=params)
    assert (tmp_path / "main.csv").read_bytes() == main.frame.to_csv(index=False).encode()
    stored = pq.read_table(tmp_path / "main.items.parquet").to_pandas()
    pd.testing.assert_frame_equal(stored, main.items)
    summary = json.loads((tmp_path / "main.summary.json").read_text())
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert summary["commit"] == head and len(head) == 40
    assert summary["parameters"] == {
        "datasets": ["htstep", "coin"],
        "limit": 3,
        "scores": {"coin": "/x/y", "htstep": "data/cache/h"},  # inside the checkout: relative
    }
    assert summary["observation_sources"] == ["simulated"]
    assert summary["dependency_sources"] == ["simulated-llm:llama"]
    assert summary["title"] == "T" and summary["rows"] == 4
    write_table(main.frame, tmp_path / "frame")  # a plain frame: no items, no parameters
    assert (tmp_path / "frame.csv").read_bytes() == (tmp_path / "main.csv").read_bytes()
    assert not (tmp_path / "frame.items.parquet").exists()
    plain = json.loads((tmp_path / "frame.summary.json").read_text())
    assert plain["parameters"] is None and plain["items"] is None


def test_outside_a_git_checkout_the_commit_is_null(main, tmp_path, monkeypatch):
    assert current_commit(tmp_path) is None  # /tmp is no checkout
    monkeypatch.setenv("PATH", str(tmp_path))  # no git at all
    assert current_commit() is None
    main.write(tmp_path / "main")
    assert json.loads((tmp_path / "main.summary.json").read_text())["commit"] is None


def test_show_table_shows_a_result_tables_rows(main):
    shown = show_table(main, "T", note="n")
    assert repr(shown) == repr(show_table(main.frame, "T", note="n"))
    assert "simulated-llm:llama" in repr(shown) and ">BaGLM<" in shown._repr_html_()
