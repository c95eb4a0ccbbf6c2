"""The out-of-sample check of the simulation (analyses.simulation_check) and its CLI verbs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from baglm_nb.analyses.simulation_check import (
    gain_bars,
    held_out_of,
    order_of,
    simulation_check,
)
from baglm_nb.core import sources
from baglm_nb.core.pipeline import compare
from baglm_nb.inputs.paper import paper_value

DATASETS = ["htstep", "crosstask", "ego4d_goalstep", "coin"]
LIMIT = 8


@pytest.fixture(scope="module")
def check():
    return simulation_check(DATASETS, limit=LIMIT)


def test_gains_beside_the_papers_on_a_subset(check):
    result, _ = check
    gains = result.frame
    assert list(gains["dataset"]) == ["HT-Step", "CrossTask", "Ego4D", "COIN"]
    assert list(gains["paper_gain"]) == [5.4, 5.5, -1.9, 3.1]  # with LLaMA's D
    assert (gains["D"] == "simulated-llm:llama").all()
    assert (gains["D_diagnostic"] == "simulated-llm:llama:held-out").all()
    assert (gains["source"] == "simulated").all() and (gains["videos"] == LIMIT).all()
    for row, name in zip(gains.itertuples(), DATASETS, strict=True):
        obs = sources.observations(name, limit=LIMIT)
        default = compare(obs, "simulated-llm:llama")
        held = compare(obs, "simulated-llm:llama:held-out")
        assert row.off_the_shelf == round(default["off_the_shelf"], 1)
        assert row.baglm == round(default["baglm"], 1)
        assert row.baglm_diagnostic == round(held["baglm"], 1)
        assert row.gain == round(row.baglm - row.off_the_shelf, 1)
        assert row.gain_diagnostic == round(row.baglm_diagnostic - row.off_the_shelf, 1)
        assert row.paper_baglm == paper_value("baglm", name)
        assert row.gain_difference == round(row.gain - row.paper_gain, 1)
    items = result.items
    assert set(items["D"]) == {"simulated-llm:llama", "simulated-llm:llama:held-out", "not used"}
    bars = gain_bars(gains)
    assert list(bars["workbench"][:2]) == [gains["gain"][0], gains["gain_diagnostic"][0]]
    assert (bars["paper"][:2] == 5.4).all()
    held_out = ("simulated-llm:llama", "simulated-llm:llama:held-out")
    assert result.sources.dependencies == held_out


def test_transition_pattern_beside_the_papers(check):
    patterns = check[1].frame
    default = patterns[patterns["D"] == "simulated-llm:llama"]
    assert list(default["dataset"]) == ["HT-Step", "CrossTask", "Ego4D"]  # not COIN: no paper row
    assert list(default["paper_order"]) == [
        "static < validity < readiness < both",
        "static < readiness = validity < both",
        "readiness < static < validity < both",
    ]
    assert list(default["paper_pattern"]) == [True, True, False]
    for row in patterns.itertuples():
        values = {v: getattr(row, v) for v in ("static", "readiness", "validity", "both")}
        assert row.order == order_of(values)
        assert row.pattern == (
            values["static"] < min(values["readiness"], values["validity"])
            and max(values["readiness"], values["validity"]) < values["both"]
        )
    assert set(patterns["D"]) == {"simulated-llm:llama", "simulated-llm:llama:held-out"}


def test_order_of_and_held_out_of():
    assert order_of({"static": 1, "readiness": 3, "validity": 2, "both": 4}) == (
        "static < validity < readiness < both"
    )
    assert order_of({"static": 1, "readiness": 2, "validity": 2, "both": 0}) == (
        "both < static < readiness = validity"
    )
    assert held_out_of("simulated-llm:gpt") == "simulated-llm:gpt:held-out"
    assert held_out_of("simulated-llm") == "simulated-llm:llama:held-out"
    assert held_out_of("simulated-llm:gpt:held-out") is None and held_out_of("oracle") is None


def _cli(*args: str) -> str:
    cmd = [sys.executable, "-m", "baglm_nb", *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def test_calibrate_prints_the_stored_default_and_its_recall():
    """The calibration finds the stored signal again and the stored signal's R@1 is within the
    calibration's tolerance of the paper's; computed values are read from the output and
    compared with tolerances (their last digits may differ between CPUs), the stored and the
    paper's values exactly."""
    import re

    from baglm_nb.inputs.datasets import dataset_spec

    out = _cli("calibrate", "--dataset", "coin")
    stored, target = dataset_spec("coin").calibrated_signal, paper_value("off_the_shelf", "coin")
    found = re.search(r"\[simulated\] calibration on coin: signal = ([\d.]+) gives", out)
    assert found and abs(float(found.group(1)) - stored) < 0.02, out
    line = re.search(
        r"stored default for coin: signal = ([\d.]+), off-the-shelf R@1 ([\d.]+)% "
        r"\(target ([\d.]+)%, ([+-][\d.]+)\)",
        out,
    )
    assert line and line.group(1) == f"{stored:.4f}" and line.group(3) == f"{target:.2f}", out
    recall, diff = float(line.group(2)), float(line.group(4))
    assert abs(recall - target) <= 0.25 + 0.01 and abs(recall - target - diff) <= 0.011


def test_sim_check_prints_both_tables():
    out = _cli("sim-check", "--dataset", "htstep", "coin", "--limit", "4")
    assert "**BaGLM's gain beside the paper's (simulated observations, not a real model)**" in out
    assert "| HT-Step | simulated-llm:llama |" in out and "| COIN | simulated-llm:llama |" in out
    assert "simulated-llm:llama:held-out" in out
    assert "**Transition ablation: order and pattern" in out  # HT-Step only: COIN has no row
