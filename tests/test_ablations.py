"""Ablation tables (analyses.ablations): prior, LLM, prompt, stepping, duration, sensitivity."""

from __future__ import annotations

import math

import pytest
from reference import reference_recall

from baglm_nb.analyses import ablations as A
from baglm_nb.core.observations import Observations, from_simulation
from baglm_nb.core.oracles import oracle_dependency
from baglm_nb.core.pipeline import compare, run_baglm
from baglm_nb.core.simulate import SimulationParams, default_params
from baglm_nb.inputs.datasets import load_dataset
from baglm_nb.inputs.paper import PAPER
from baglm_nb.stores.keys import ScoreKey
from baglm_nb.stores.scores import ScoreCache

N = 8

#: The default D of BaGLM's rows on the CPU: the simulated LLaMA-3.3-70B.
LLAMA = "simulated-llm:llama"


@pytest.fixture(scope="module")
def obs() -> Observations:
    return from_simulation("htstep", limit=N)


def _is_slot(row) -> bool:
    return str(row["note"]).startswith("slot:") and math.isnan(row["workbench"])


def _items_r1(result, method, **groups) -> float:
    """The flat-mean R@1 of the items of one method (and group) of a result table."""
    items = result.items
    keep = items["method"] == method
    for key, value in groups.items():
        keep &= items[key] == value
    return round(items[keep]["hit"].mean() * 100, 1)


def test_prior_table_slot_without_next_step_and_uniform_matches_compare(obs):
    result = A.prior_table([obs])
    table = result.frame
    assert list(table["method"]) == [
        "1) next-step scores (pi_next)",
        "2) propagated",
        "3) uniform 1/(K+1)",
    ]
    slot = table.iloc[0]
    assert _is_slot(slot) and "next-step" in slot["note"]
    assert slot["paper"] == PAPER["prior_next_step"]["htstep"]
    uniform = table.iloc[2]
    assert uniform["workbench"] == round(compare(obs, LLAMA)["baglm"], 1)
    assert uniform["paper"] == 57.4 and uniform["source"] == "simulated"
    assert uniform["videos"] == N
    propagated = run_baglm(obs, LLAMA, prior="propagated")
    assert table.iloc[1]["workbench"] == round(
        reference_recall("htstep", propagated, obs.videos), 1
    )
    assert list(table["D"]) == [LLAMA] * 3 and list(table["note"][1:]) == ["", ""]
    assert list(A.prior_table([obs], "oracle").frame["D"]) == ["oracle"] * 3
    for _, row in table.iloc[1:].iterrows():
        assert _items_r1(result, row["method"]) == row["workbench"]
    assert set(result.items["method"]) == {"2) propagated", "3) uniform 1/(K+1)"}


def test_prior_table_uses_next_step_scores_when_present(obs):
    with_next = Observations(
        obs.dataset,
        obs.label,
        obs.segment_duration,
        obs.vsg,
        obs.progress,
        {u: v + 0.01 for u, v in obs.vsg.items()},
    )
    row = A.prior_table([with_next]).frame.iloc[0]
    assert not math.isnan(row["workbench"]) and row["paper"] == 50.5
    beliefs = run_baglm(with_next, LLAMA, prior="next_step")
    assert row["workbench"] == round(reference_recall("htstep", beliefs, obs.videos), 1)


def test_llm_table_fills_given_caches_and_slots_the_rest(obs):
    videos = load_dataset("htstep")[:N]
    matrices = {v.uid: oracle_dependency(v) for v in videos}
    result = A.llm_table([obs], {"LLaMA-3.3-70B": {}, "GPT-4.1-mini": {"htstep": matrices}})
    table = result.frame
    llama, gpt = table.iloc[0], table.iloc[1]
    assert _is_slot(llama) and llama["paper"] == 57.4
    assert gpt["paper"] == 57.1 and gpt["workbench"] == round(compare(obs, "oracle")["baglm"], 1)
    assert gpt["D"] == "matrices" and _items_r1(result, "GPT-4.1-mini") == gpt["workbench"]


def test_llm_table_with_the_simulated_presets(obs):
    """The CPU default: each LLM row filled with its simulated preset, named in ``D``."""
    result = A.llm_table([obs], {"LLaMA-3.3-70B": LLAMA, "GPT-4.1-mini": "simulated-llm:gpt"})
    table = result.frame
    assert list(table["D"]) == [LLAMA, "simulated-llm:gpt"]
    assert list(table["paper"]) == [57.4, 57.1]
    # the simulated presets are named simulated in their own rows and columns, not the title only
    assert list(table["method"]) == ["LLaMA-3.3-70B (simulated)", "GPT-4.1-mini (simulated)"]
    from baglm_nb.analyses.layouts import llm_layout

    columns = list(llm_layout(table).columns)
    assert columns == [
        "dataset",
        "LLaMA-3.3-70B (simulated)",
        "LLaMA-3.3-70B paper",
        "GPT-4.1-mini (simulated)",
        "GPT-4.1-mini paper",
    ]
    for row, setting in zip(table.itertuples(), [LLAMA, "simulated-llm:gpt"], strict=True):
        assert row.workbench == round(compare(obs, setting)["baglm"], 1)


def test_prompt_table(obs):
    result = A.prompt_table([obs])
    table = result.frame
    mc, binary = table.iloc[0], table.iloc[1]
    assert mc["paper"] == 52.0 and mc["queries_per_segment"] == "1"
    assert mc["workbench"] == round(compare(obs, "none")["off_the_shelf"], 1)
    assert _is_slot(binary) and binary["paper"] == 52.5 and binary["queries_per_segment"] == "K"
    same = A.prompt_table([obs], {"htstep": dict(obs.vsg)}).frame
    assert same.iloc[0]["workbench"] == same.iloc[1]["workbench"]
    assert mc["workbench"] == round(reference_recall("htstep", obs.vsg, obs.videos), 1)


def test_prompt_table_reads_a_score_cache_without_progress(obs, tmp_path):
    cache = ScoreCache(tmp_path, ScoreKey("htstep", "binary-model", "vsg-bin-v1"))
    for uid, rows in list(obs.vsg.items())[:4]:
        cache.write_video(uid, rows[::2])
    result = A.prompt_table([obs], {"htstep": cache.path})
    table = result.frame
    assert table.iloc[1]["source"] == "lmm:binary-model"
    assert (table["videos"] == 4).all()
    shared = obs.videos[:4]
    expected = reference_recall("htstep", {v.uid: obs.vsg[v.uid] for v in shared}, shared)
    assert table.iloc[0]["workbench"] == table.iloc[1]["workbench"] == round(expected, 1)
    items = result.items
    assert items.groupby("source")["video_uid"].nunique().to_dict() == {
        "lmm:binary-model": 4,
        "simulated": 4,
    }


def test_stepping_table(obs):
    result = A.stepping_table([obs])
    table = result.frame
    assert list(table["paper"].isna()) == [False, True]
    assert "not reported" in table.iloc[1]["note"] and (table["D"] == LLAMA).all()
    assert table.iloc[0]["workbench"] == round(compare(obs, LLAMA)["baglm"], 1)
    per_segment = run_baglm(obs, LLAMA, stepping="segment")
    assert table.iloc[1]["workbench"] == round(
        reference_recall("htstep", per_segment, obs.videos), 1
    )


def test_segment_duration_table_rebuilds_the_simulation():
    result = A.segment_duration_table(["htstep"], (1, 2), limit=4)
    table = result.frame
    assert len(table) == 4 and set(table["segment_duration"]) == {1, 2}
    assert table[table["segment_duration"] == 1]["paper"].isna().all()
    two = table[table["segment_duration"] == 2].set_index("method")["paper"]
    assert two["BaGLM"] == 57.4 and two["off-the-shelf LMM"] == 52.0
    videos = load_dataset("htstep")[:4]
    assert list(table["D"]) == [LLAMA, "not used"] * 2
    for row in table.itertuples():
        params = default_params("htstep", segment_duration=row.segment_duration)
        sim = from_simulation("htstep", params, videos=videos)
        rows = sim.vsg if row.method == "off-the-shelf LMM" else run_baglm(sim, LLAMA)
        assert row.workbench == round(reference_recall("htstep", rows, videos), 1)
        r1 = _items_r1(result, row.method, segment_duration=row.segment_duration)
        assert r1 == row.workbench


def test_sensitivity_table_tracks_the_signal():
    result = A.sensitivity_table("htstep", [0.0, 4.0], limit=6)
    table = result.frame
    calibrated = default_params("htstep").signal
    assert list(table["signal"]) == [0.0, calibrated, 4.0]  # the calibrated signal is added
    assert list(table["calibrated"]) == [False, True, False]
    assert table["off_the_shelf"].iloc[2] > table["off_the_shelf"].iloc[0]
    assert (table["paper_gain"] == 5.4).all() and (table["source"] == "simulated").all()
    assert (table["D"] == LLAMA).all()
    videos = load_dataset("htstep")[:6]
    for row in table.itertuples():
        sim = from_simulation("htstep", default_params("htstep", signal=row.signal), videos=videos)
        off = reference_recall("htstep", sim.vsg, videos)
        bag = reference_recall("htstep", run_baglm(sim, LLAMA), videos)
        assert (row.off_the_shelf, row.baglm) == (round(off, 1), round(bag, 1))
        assert row.gain == round(bag - off, 1)
        assert _items_r1(result, "BaGLM", signal=row.signal) == row.baglm
        assert _items_r1(result, "off-the-shelf LMM", signal=row.signal) == row.off_the_shelf
    oracle = A.sensitivity_table(
        "htstep", [1.0], deps="oracle", limit=6, with_calibrated=False
    ).frame
    assert list(oracle["signal"]) == [1.0] and list(oracle["D"]) == ["oracle"]


def test_dependency_quality_table_from_the_oracle_chain_to_noise():
    result = A.dependency_quality_table("htstep", [0.0, 1.0], limit=6)
    table = result.frame
    assert list(table["D"]) == [
        "noisy-oracle:0",
        "noisy-oracle:1",
        LLAMA,
        "simulated-llm:gpt",
    ]
    assert list(table["level"][:2]) == [0.0, 1.0] and table["level"][2:].isna().all()
    assert (table["paper_gain"] == 5.4).all() and (table["videos"] == 6).all()
    obs = from_simulation("htstep", limit=6)
    off = reference_recall("htstep", obs.vsg, obs.videos)
    assert (table["off_the_shelf"] == round(off, 1)).all()
    for row, setting in zip(
        table.itertuples(), ["oracle", "noisy-oracle:1", LLAMA, "simulated-llm:gpt"], strict=True
    ):
        bag = reference_recall("htstep", run_baglm(obs, setting), obs.videos)
        assert row.baglm == round(bag, 1) and row.gain == round(bag - off, 1)
    items = result.items
    assert set(items["D"]) == {*table["D"], "not used"}


def test_simulation_params_default_is_the_iid_htstep_twin():
    """The dataclass's defaults are the i.i.d. twin of HT-Step; ``default_params`` gives the
    default twin's fitted values per dataset."""
    from baglm_nb.core.simulate import DEFAULT_TWIN, twin_params

    assert SimulationParams() == twin_params("htstep", "iid")
    assert SimulationParams().signal == pytest.approx(1.2439)
    assert twin_params("coin", "iid").signal == pytest.approx(0.8032)
    assert twin_params("coin", "pinned").signal == pytest.approx(0.8691)
    for name in ("htstep", "coin"):
        assert default_params(name) == twin_params(name, DEFAULT_TWIN)
