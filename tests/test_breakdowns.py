"""R@1 breakdowns (analyses.breakdowns): by temporal position and by number of steps K."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from reference import reference_pairs, reference_recall

from baglm_nb.analyses import breakdowns as B
from baglm_nb.core.observations import Observations, from_simulation
from baglm_nb.core.pipeline import run_baglm
from baglm_nb.inputs.datasets import load_dataset

N = 8


@pytest.fixture(scope="module")
def obs() -> Observations:
    return from_simulation("htstep", limit=N)


def hits_table() -> pd.DataFrame:
    """Ten hand-made pairs: two methods, three videos, positions at the bin edges."""
    return pd.DataFrame(
        {
            "method": ["BaGLM"] * 5 + ["off-the-shelf LMM"] * 5,
            "video_uid": ["a", "a", "b", "b", "c"] * 2,
            "task": ["t"] * 10,
            "step_index": [0, 1, 0, 1, 0] * 2,
            "hit": [True, False, True, True, False, False, False, True, True, True],
            "num_steps": [2, 2, 2, 2, 5] * 2,
            "position": [0.0, 0.19, 0.2, 1.0, 0.99] * 2,
        }
    )


def test_position_table_bins():
    result = B.position_table("htstep", hits_table())
    table = result.frame
    bag = table[table["method"] == "BaGLM"].set_index("bin")
    assert list(bag["pairs"]) == [2, 1, 0, 0, 2]
    assert bag.loc["bin 0", "workbench"] == 50.0 and bag.loc["bin 4", "workbench"] == 50.0
    assert math.isnan(bag.loc["bin 2", "workbench"])
    assert list(bag["paper"]) == [56.1, 57.2, 60.2, 56.8, 56.6]
    off = table[table["method"] == "off-the-shelf LMM"]
    assert list(off["paper"]) == [53.6, 52.7, 54.6, 49.7, 49.3]
    assert table[table["dataset"] == "HT-Step"].shape[0] == 10
    other = B.position_table("crosstask", hits_table()).frame
    assert other["paper"].isna().all()
    items = result.items
    assert list(items["bin"][:5]) == ["bin 0", "bin 0", "bin 1", "bin 4", "bin 4"]
    assert set(items["source"]) == {"simulated"} and len(items) == 10


def test_candidate_steps_table():
    result = B.candidate_steps_table("htstep", hits_table())
    table = result.frame
    bag = table[table["method"] == "BaGLM"].set_index("num_steps")
    assert bag.loc[2, "videos"] == 2 and bag.loc[2, "pairs"] == 4
    assert bag.loc[2, "workbench"] == 75.0 and bag.loc[5, "workbench"] == 0.0
    assert table["paper"].isna().all() and list(table["method"].unique())[0] == "BaGLM"
    off = table[table["method"] == "off-the-shelf LMM"].set_index("num_steps")
    assert off.loc[2, "workbench"] == 50.0 and off.loc[5, "workbench"] == 100.0
    items = result.items
    assert len(items) == 10 and set(items["dataset"]) == {"HT-Step"}


def _explicit_bins(videos, beliefs, bins: int = 5) -> dict[int, list[bool]]:
    """Hits per position bin with plain loops: first start over the video's duration."""
    out: dict[int, list[bool]] = {i: [] for i in range(bins)}
    for v in videos:
        duration = v.num_frames / v.fps
        for step, hit in reference_pairs(v, beliefs[v.uid]):
            first = min(s.start for s in v.segments if s.step_index == step)
            out[min(int(min(first / duration, 1.0) * bins), bins - 1)].append(hit)
    return out


def test_breakdown_hits_on_real_beliefs(obs):
    videos = load_dataset("htstep")[:N]
    hits = B.breakdown_hits("htstep", {"off_the_shelf": obs.vsg}, videos)
    assert set(hits["method"]) == {"off-the-shelf LMM"}
    result = B.position_table("htstep", hits)
    table = result.frame
    explicit = _explicit_bins(videos, obs.vsg)
    assert list(table["pairs"]) == [len(explicit[i]) for i in range(5)]
    for i, row in table.iterrows():
        b = explicit[i]
        if b:
            assert row["workbench"] == round(100 * sum(b) / len(b), 1)
        else:
            assert math.isnan(row["workbench"])
    total = result.items["hit"].mean() * 100
    assert total == pytest.approx(reference_recall("htstep", obs.vsg, videos), abs=1e-9)


def test_breakdown_tables(obs):
    results = B.breakdown_tables(obs, "oracle", bins=5)
    position, steps = (r.frame for r in results)
    assert set(position["method"]) == set(steps["method"]) == {"BaGLM", "off-the-shelf LMM"}
    assert position["pairs"].sum() == steps["pairs"].sum() > 0
    with pytest.raises(KeyError, match="no dependency source"):
        B.breakdown_tables(obs, {})
    explicit = _explicit_bins(obs.videos, run_baglm(obs, "oracle"))
    bag = position[position["method"] == "BaGLM"]
    assert list(bag["pairs"]) == [len(explicit[i]) for i in range(5)]
    assert list(bag["workbench"]) == [round(100 * sum(b) / len(b), 1) for b in explicit.values()]
    for result, group in zip(results, ("bin", "num_steps"), strict=True):
        items = result.items
        for row in result.frame.to_dict("records"):
            mine = items[(items["method"] == row["method"]) & (items[group] == row[group])]
            assert len(mine) == row["pairs"] > 0
            assert round(mine["hit"].mean() * 100, 1) == row["workbench"]
