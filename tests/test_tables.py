"""The shared shape of result tables: rows, slot rows, items, summaries and their files."""

from __future__ import annotations

import json
import math

import pandas as pd
import pyarrow.parquet as pq
import pytest
from reference import reference_pairs, reference_recall

from baglm_nb.analyses.ablations import prior_table
from baglm_nb.analyses.result_table import ResultTable
from baglm_nb.analyses.results import dataset_table, main_results_table
from baglm_nb.analyses.tables import (
    DATASET_NAMES,
    result_row,
    score,
    slot_row,
    table_summary,
    title_for,
    to_markdown,
)
from baglm_nb.core.evaluation import recall_from_hits
from baglm_nb.core.observations import from_simulation
from baglm_nb.core.pipeline import run_baglm

ITEM_COLUMNS = ["dataset", "method", "source", "D", "video_uid", "task", "step_index", "hit"]


@pytest.fixture(scope="module")
def observations():
    """6 simulated HT-Step videos (flat mean) and 8 simulated CrossTask videos (Avg. R@1)."""
    return [from_simulation("htstep", limit=6), from_simulation("crosstask", limit=8)]


@pytest.fixture(scope="module")
def main(observations):
    return main_results_table(observations)


def row_items(table: ResultTable, row: pd.Series) -> pd.DataFrame:
    """The items of one row of a (dataset, method) table."""
    items = table.items
    keep = (items["dataset"] == row["dataset"]) & (items["method"] == row["method"])
    return items[keep & (items["source"] == row["source"])]


def test_result_row_and_slot_row_share_one_shape(observations):
    obs = observations[0]
    scored = score("htstep", obs.vsg, obs.videos)
    row = result_row("htstep", "m", scored, 1.0, source="simulated", note="n")
    assert row["dataset"] == "HT-Step" and row["videos"] == 6
    assert row["workbench"] == round(reference_recall("htstep", obs.vsg, obs.videos), 1)
    slot = slot_row("htstep", "m", 1.0, "why", extra=3)
    assert list(slot) == [*row, "extra"] and slot["source"] == "none"
    assert slot["note"] == "slot: why" and math.isnan(slot["workbench"]) and slot["videos"] == 0


def test_items_hold_one_row_per_evaluated_pair(observations, main):
    items = main.items
    assert list(items.columns[: len(ITEM_COLUMNS)]) == ITEM_COLUMNS
    for obs in observations:
        mine = (items["dataset"] == DATASET_NAMES[obs.dataset]) & (items["source"] == obs.label)
        raw = items[mine & (items["method"] == "off-the-shelf LMM")]
        expected = [
            (v.uid, step, hit)
            for v in obs.videos
            for step, hit in reference_pairs(v, obs.vsg[v.uid])
        ]
        got = list(zip(raw["video_uid"], raw["step_index"], raw["hit"], strict=True))
        assert got == expected
        assert set(raw["task"]) == {v.task for v in obs.videos}
    assert set(items["source"]) == {"simulated"}


def test_row_r1_equals_what_its_items_give(observations, main):
    """HT-Step: the flat mean of the row's items; CrossTask: recall_from_hits over them."""
    by_name = {"HT-Step": observations[0], "CrossTask": observations[1]}
    for _, row in main.frame.iterrows():
        obs = by_name[row["dataset"]]
        items = row_items(main, row)
        assert items["video_uid"].nunique() == row["videos"]
        if obs.dataset == "htstep":
            value = items["hit"].mean() * 100
        else:
            value = recall_from_hits("crosstask", items, obs.uids())
        assert round(value, 1) == row["workbench"]
        beliefs = obs.vsg if row["method"] != "BaGLM" else run_baglm(obs, row["D"])
        assert value == pytest.approx(reference_recall(obs.dataset, beliefs, obs.videos), abs=1e-9)


def test_write_table_saves_items_and_a_summary(observations, main, tmp_path):
    title = title_for("Main results", "simulated")
    main.write(tmp_path / "main", title)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "main.csv",
        "main.items.parquet",
        "main.md",
        "main.summary.json",
    ]
    stored = pq.read_table(tmp_path / "main.items.parquet").to_pandas()
    items = main.items
    assert list(stored.columns) == list(items.columns) and len(stored) == len(items)
    assert list(stored["hit"]) == list(items["hit"])
    assert list(stored["video_uid"]) == list(items["video_uid"])
    summary = json.loads((tmp_path / "main.summary.json").read_text())
    pairs = [
        (obs.dataset, v.uid, step)
        for obs in observations
        for v in obs.videos
        for step, _ in reference_pairs(v, obs.vsg[v.uid])
    ]
    assert summary["title"] == title and summary["sources"] == ["simulated"]
    assert summary["rows"] == 4 and summary["videos"] == len({p[:2] for p in pairs}) == 14
    assert summary["pairs"] == len(pairs) and summary["items"] == 2 * len(pairs)
    assert [sorted(r) for r in summary["values"]] == [sorted(main.frame.columns)] * 4
    assert [r["workbench"] for r in summary["values"]] == list(main.frame["workbench"])
    assert [r["method"] for r in summary["values"]] == ["BaGLM", "off-the-shelf LMM"] * 2


def test_slot_rows_have_no_items(observations, tmp_path):
    table = prior_table(observations[:1], deps={})  # no dependency source: three slot rows
    assert table.frame["note"].str.startswith("slot:").all()
    items = table.items
    assert items is not None and items.empty
    table.write(tmp_path / "slots")
    assert pq.read_table(tmp_path / "slots.items.parquet").num_rows == 0
    summary = table_summary(table)
    assert summary["pairs"] == 0 and summary["videos"] == 0 and summary["sources"] == ["none"]
    assert math.isnan(table.frame["workbench"].iloc[0])


def test_concat_keeps_items_and_sources(observations, main):
    parts = [main_results_table([obs]) for obs in observations]
    both = ResultTable.concat(parts)
    pd.testing.assert_frame_equal(both.frame, main.frame)
    pd.testing.assert_frame_equal(both.items, main.items)
    assert both.sources == main.sources
    plain = ResultTable.concat([dataset_table(["coin"]), dataset_table(["htstep"])])
    assert plain.items is None and len(plain) == 10


def test_a_table_without_items_writes_no_items_file(tmp_path):
    table = dataset_table(["coin"])
    table.write(tmp_path / "stats", "t")
    assert not (tmp_path / "stats.items.parquet").exists()
    summary = json.loads((tmp_path / "stats.summary.json").read_text())
    assert summary["videos"] is None and summary["pairs"] is None and summary["rows"] == 5
    assert summary["sources"] == []


def test_markdown_table():
    assert "| a | b |" in to_markdown(pd.DataFrame({"a": [1], "b": [None]}))
    md = to_markdown(pd.DataFrame({"a": [1.5]}), "T")
    assert md == "**T**\n\n| a |\n|---|\n| 1.5 |\n"
