"""The headline tables (analyses.results): dataset statistics, main results, transition, oracles."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from reference import reference_recall

from baglm_nb.analyses import tables
from baglm_nb.analyses.results import (
    comparison_table,
    dataset_table,
    main_results_table,
    oracle_table,
    transition_table,
)
from baglm_nb.analyses.tables import title_for
from baglm_nb.core.evaluation import evaluate
from baglm_nb.core.observations import from_simulation
from baglm_nb.core.oracles import oracle_dependency
from baglm_nb.core.pipeline import run_baglm
from baglm_nb.inputs.datasets import load_dataset
from baglm_nb.inputs.paper import PAPER, PAPER_STATS


@pytest.fixture(scope="module")
def observations():
    return [from_simulation("htstep", limit=5), from_simulation("coin", limit=5)]


@pytest.fixture
def scored_calls(monkeypatch):
    """Every evaluation the tables make, as ``(dataset, number of videos)``."""
    calls = []
    score = tables.score

    def counted(dataset, beliefs, videos):
        calls.append((dataset, len(beliefs)))
        return score(dataset, beliefs, videos)

    monkeypatch.setattr(tables, "score", counted)
    return calls


def test_tables_name_the_source_and_write_atomically(observations, tmp_path):
    result = main_results_table(observations[:1])
    table = result.frame
    assert set(table["source"]) == {"simulated"}
    assert table.loc[table["method"] == "BaGLM", "paper"].item() == 57.4
    title = title_for("Main results", "simulated")
    assert "simulated" in title
    result.write(tmp_path / "main", title)
    assert pd.read_csv(tmp_path / "main.csv").shape == table.shape
    md = (tmp_path / "main.md").read_text()
    assert md.startswith(f"**{title}**") and md.count("\n|") == len(table) + 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "main.csv",
        "main.items.parquet",
        "main.md",
        "main.summary.json",
    ]


def test_main_results_beside_the_paper(observations):
    table = main_results_table(observations).frame
    assert list(table.columns) == [
        "dataset",
        "method",
        "workbench",
        "paper",
        "videos",
        "source",
        "D",
    ]
    assert list(table["dataset"]) == ["HT-Step", "HT-Step", "COIN", "COIN"]
    assert list(table["paper"]) == [57.4, 52.0, 51.0, 47.9]
    # like with like: BaGLM with the simulated LLaMA's D (the paper's LLM), named in ``D``
    assert list(table["D"]) == ["simulated-llm:llama", "not used"] * 2
    for obs, (bag, off) in zip(observations, [(0, 1), (2, 3)], strict=True):
        beliefs = run_baglm(obs, "simulated-llm:llama")
        assert table["workbench"][bag] == round(
            reference_recall(obs.dataset, beliefs, obs.videos), 1
        )
        assert table["workbench"][off] == round(
            reference_recall(obs.dataset, obs.vsg, obs.videos), 1
        )
    assert (table["videos"] == 5).all()
    with pytest.raises(KeyError, match="no dependency source for htstep"):
        main_results_table(observations, {"coin": "oracle"})
    oracle = main_results_table(observations, "oracle").frame
    assert list(oracle["D"]) == ["oracle", "not used"] * 2


def test_transition_table_computes_the_baseline_once_per_dataset(observations, scored_calls):
    result = transition_table(observations)
    table = result.frame
    # per dataset: one off-the-shelf evaluation, then one per variant
    assert scored_calls == [("htstep", 5)] * 5 + [("coin", 5)] * 5
    assert list(table.columns) == [
        "dataset",
        "method",
        "workbench",
        "paper",
        "off_the_shelf",
        "videos",
        "source",
        "D",
    ]
    assert (table["D"] == "simulated-llm:llama").all()
    assert list(table["method"]) == ["static", "readiness", "validity", "both"] * 2
    assert list(table["paper"][:4]) == [55.9, 57.0, 56.4, 57.4]
    assert table["paper"][4:].isna().all()  # the paper has no transition ablation on COIN
    for i, obs in enumerate(observations):
        part = table.iloc[4 * i : 4 * i + 4]
        off = reference_recall(obs.dataset, obs.vsg, obs.videos)
        assert (part["off_the_shelf"] == round(off, 1)).all()
        for _, row in part.iterrows():
            beliefs = run_baglm(obs, "simulated-llm:llama", transition=row["method"])
            expected = evaluate(obs.dataset, beliefs, obs.videos)
            assert row["workbench"] == round(expected, 1)
            items = result.items
            mine = items[(items["dataset"] == row["dataset"]) & (items["method"] == row["method"])]
            assert round(mine["hit"].mean() * 100, 1) == row["workbench"]


def test_oracle_table_crosses_llm_or_oracle_d_with_lmm_or_oracle_progress(
    observations, scored_calls
):
    """The paper's four rows, each naming its D and progress; the LLM rows use the LLM's D."""
    htstep = observations[0]
    table = oracle_table([htstep]).frame
    assert len(scored_calls) == 5  # the baseline once, then the four variants
    assert list(table["method"]) == [
        "LLM D, LMM progress",
        "LLM D, oracle progress",
        "oracle D, LMM progress",
        "oracle D, oracle progress",
    ]
    assert list(table["D"]) == ["simulated-llm:llama"] * 2 + ["oracle"] * 2
    assert list(table["progress"]) == ["simulated", "oracle"] * 2
    keys = ["both", "oracle_progress", "oracle_dependency", "oracle_both"]
    assert list(table["paper"]) == [PAPER[k]["htstep"] for k in keys]
    for row in table.itertuples():
        progress = "oracle" if row.progress == "oracle" else "scores"
        beliefs = run_baglm(htstep, row.D, progress=progress)
        assert row.workbench == round(evaluate("htstep", beliefs, htstep.videos), 1)
    # the first row is BaGLM of the main table, not the off-the-shelf model
    main = main_results_table([htstep]).frame
    assert table["workbench"].iloc[0] == main["workbench"].iloc[0]


@pytest.mark.parametrize("deps", ["oracle", "none", {"coin": "oracle"}])
def test_oracle_table_slots_the_llm_rows_without_an_llm(observations, deps):
    """Without an LLM's D the LLM rows are slots: never another D under the paper's label."""
    table = oracle_table([observations[0]], deps).frame
    llm, oracle = table.iloc[:2], table.iloc[2:]
    assert llm["workbench"].isna().all() and llm["note"].str.startswith("slot:").all()
    assert llm["note"].str.contains("simulated-llm:llama").all()
    assert list(llm["paper"]) == [57.4, 44.9] and llm["D"].isna().all()
    assert oracle["workbench"].notna().all() and (oracle["D"] == "oracle").all()
    matrices = {v.uid: oracle_dependency(v) for v in load_dataset("htstep")[:5]}
    given = oracle_table([observations[0]], {"htstep": matrices}).frame  # caller's: filled
    assert list(given["D"][:2]) == ["matrices"] * 2 and given["workbench"].notna().all()


def test_dataset_view_names_each_statistic_in_words():
    from baglm_nb.analyses.display import show_table
    from baglm_nb.analyses.results import STATISTIC_NAMES, dataset_view

    table = dataset_table(["coin"]).frame
    view = dataset_view(table)
    assert list(view["statistic"]) == [STATISTIC_NAMES[k] for k in table["statistic"]]
    assert list(view["annotation files"]) == list(table["workbench"])  # values untouched
    page = show_table(view, "t")._repr_html_()
    assert "_s<" not in page and "mean_" not in page and "video duration (s, mean)" in page


def test_dataset_table_beside_the_paper():
    result = dataset_table(["coin"])
    table = result.frame
    assert list(table["statistic"]) == list(PAPER_STATS["coin"])
    assert list(table["paper"]) == [v or None for v in PAPER_STATS["coin"].values()]
    stats = table.set_index("statistic")["workbench"]
    assert stats["videos"] == len(load_dataset("coin"))
    assert type(stats["videos"]) is int and type(stats["tasks"]) is int  # counts, not 2354.0
    assert stats["tasks"] == len({v.task for v in load_dataset("coin")})
    assert result.items is None and not math.isnan(stats["mean_steps"])


def test_comparison_table_has_every_row_of_the_papers_tables(observations):
    """Tab. comparison (HT-Step) and Tab. COIN in full: the paper's values, as in its LaTeX."""
    main = main_results_table(observations)
    result = comparison_table(main)
    table = result.frame
    assert list(table.columns) == [
        "dataset",
        "method",
        "setting",
        "workbench",
        "paper",
        "videos",
        "source",
        "D",
        "note",
    ]
    ht = table[table["dataset"] == "HT-Step"]
    assert list(zip(ht["setting"], ht["method"], ht["paper"], strict=True)) == [
        ("offline", "TAN*", 30.7),
        ("offline", "VINA", 39.1),
        ("offline", "NaSVA", 53.1),
        ("online", "NaSVA (online)", 46.1),
        ("online", "off-the-shelf LMM", 52.0),
        ("online", "BaGLM", 57.4),
    ]
    coin = table[table["dataset"] == "COIN"]
    assert list(zip(coin["method"], coin["paper"], strict=True)) == [
        ("NaSVA", 36.8),
        ("NaSVA (online)", 32.1),
        ("off-the-shelf LMM", 47.9),
        ("BaGLM", 51.0),
    ]
    paper_only = table[table["source"] == "paper"]
    assert paper_only["workbench"].isna().all() and (paper_only["videos"] == 0).all()
    assert paper_only["note"].str.startswith("paper only").all()
    daggers = paper_only[paper_only["note"].str.contains("\u2020")]
    assert list(daggers["method"]) == ["NaSVA", "NaSVA (online)"]  # HT-Step's; COIN's are not
    # the computed rows are main's, unchanged, and so are the items
    ours = pd.DataFrame(table[table["source"] != "paper"]).drop(columns=["setting", "note"])
    key = ["dataset", "method"]
    ours, theirs = ours.sort_values(key).reset_index(drop=True), main.frame
    pd.testing.assert_frame_equal(ours, theirs.sort_values(key).reset_index(drop=True))
    assert result.items.equals(main.items) and result.sources == main.sources


def test_comparison_layouts_group_offline_and_online_as_the_paper():
    from baglm_nb.analyses.layouts import PAPER_ONLY, comparison_layouts

    obs = [from_simulation(n, limit=2) for n in ("htstep", "crosstask", "ego4d_goalstep")]
    parts = dict(comparison_layouts(comparison_table(main_results_table(obs, "oracle")).frame))
    assert list(parts) == ["HT-Step and Ego4D", "CrossTask"]
    both = parts["HT-Step and Ego4D"]
    assert list(both.columns) == [
        "setting",
        "method",
        "HT-Step",
        "HT-Step paper",
        "Ego4D",
        "Ego4D paper",
    ]
    assert list(both["method"]) == [
        "VSLNet",
        "TAN*",
        "VINA",
        "NaSVA",
        "NaSVA (online)",
        "off-the-shelf LMM",
        "BaGLM",
    ]
    assert list(both["setting"]) == ["offline"] * 4 + ["online"] * 3
    vslnet = both.iloc[0].to_dict()
    assert vslnet["HT-Step"] is None and vslnet["Ego4D"] == PAPER_ONLY
    assert vslnet["Ego4D paper"] == "24.3\u2020"  # the paper's dagger
    cross = parts["CrossTask"]
    assert len(cross) == 13 and cross["CrossTask paper"].tolist()[:2] == ["22.4", "33.6"]
    assert cross["method"].tolist()[-3:] == ["MPTVA", "off-the-shelf LMM", "BaGLM"]
    assert cross.iloc[-1]["CrossTask paper"] == "59.8" and cross.iloc[-1]["CrossTask"] != PAPER_ONLY


def test_transition_and_oracle_layouts_have_the_papers_check_marks(observations):
    from baglm_nb.analyses.layouts import CHECK, oracle_layout, transition_layout

    transition = transition_table(observations[:1]).frame
    layout = transition_layout(transition)
    assert list(layout.columns) == ["Readiness", "Validity", "method", "HT-Step", "HT-Step paper"]
    marks = [(r["Readiness"], r["Validity"]) for r in layout.to_dict("records")]
    assert marks == [("", ""), (CHECK, ""), ("", CHECK), (CHECK, CHECK)]
    assert layout["HT-Step paper"].tolist() == ["55.9", "57.0", "56.4", "57.4"]
    assert layout["HT-Step"].tolist() == [f"{v:.1f}" for v in transition["workbench"]]
    oracles = oracle_layout(oracle_table(observations[:1]).frame)
    assert list(oracles.columns)[:2] == ["Progress oracle", "Dep. matrix oracle"]
    marks = [(r["Progress oracle"], r["Dep. matrix oracle"]) for r in oracles.to_dict("records")]
    assert marks == [("", ""), (CHECK, ""), ("", CHECK), (CHECK, CHECK)]
    assert oracles["HT-Step paper"].tolist() == ["57.4", "44.9", "54.6", "62.6"]
    slots = oracle_layout(oracle_table(observations[:1], "oracle").frame)
    assert slots["HT-Step"].tolist()[:2] == ["slot", "slot"]  # no LLM: the LLM rows are slots


def test_notebook_05s_wide_tables_have_narrow_views_with_every_column_kept():
    from baglm_nb.analyses.ablations import sensitivity_table
    from baglm_nb.analyses.layouts import gain_layouts, pattern_layouts, sensitivity_layout
    from baglm_nb.analyses.simulation_check import simulation_check

    gains, patterns = (t.frame for t in simulation_check(["htstep"], limit=3))
    views = gain_layouts(gains)
    assert [p for p, _, _ in views] == ["R@1 and gain", "diagnostic"]
    kept = {c for _, v, _ in views for c in v.columns}
    assert kept == set(gains.columns)  # every column is in one of the views
    assert all(len(v.columns) <= 9 for _, v, _ in views)
    assert "agrees by construction" in views[0][2] and views[1][2] is None
    order = pattern_layouts(patterns)
    kept = {c for _, v, _ in order for c in v.columns}
    assert kept == set(patterns.columns) - {"source"} and all(
        len(v.columns) <= 11 for _, v, _ in order
    )
    table = sensitivity_table("htstep", [1.0], limit=2).frame
    view, note = sensitivity_layout(table)
    assert "paper_gain" not in view and "HT-Step: off-the-shelf 52.0, BaGLM 57.4, gain 5.4" in note
