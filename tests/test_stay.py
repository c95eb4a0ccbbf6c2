"""``stay`` (beyond the paper): transitions mixed with staying, ``T' = (1 - S) T + S I``.

A closed-form two-state case, a literal forward-backward loop against the fast filter and
smoother (L = 0 and L = inf, every prior), the online grounder against the batch filter, S = 0
against the paper's path bit for bit, and the refusals.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from reference import literal_smoother

from baglm_nb.core.filtering import (
    FilterState,
    check_stay,
    run_filter,
)
from baglm_nb.core.online import OnlineGrounder
from baglm_nb.inputs.variants import stay_label


def inputs(seed: int = 0, t_len: int = 30, k: int = 5):
    """Per-second rows (each 2-s segment's scores twice), progress and a 0/1 D."""
    rng = np.random.default_rng(seed)
    vsg = np.repeat(0.01 + 0.98 * rng.random((t_len // 2, k + 1)), 2, axis=0)
    prog = np.repeat(rng.dirichlet(np.ones(10), size=(t_len // 2, k)), 2, axis=0)
    dep = np.tril((rng.random((k, k)) > 0.4).astype(float), -1)
    return vsg, prog, dep


def literal(vsg, prog, dep, stay, lag=0, transition="both", prior="uniform", nxt=None):
    """Filter (lag 0) or fixed-lag smoother written out on explicit mixed matrices."""
    return literal_smoother(vsg, prog, dep, lag, transition, prior, nxt, stay=stay)


def test_two_state_closed_form():
    """One step and none, D = 0, static transition: every row of T is (1/2, 1/2), so T' =
    [[(1+S)/2, (1-S)/2], [(1-S)/2, (1+S)/2]]. With S = 0.5 and observations (0.8, 0.2) then
    (0.3, 0.7): the first belief is (0.8, 0.2); the prediction (0.65, 0.35); the posterior
    (0.195, 0.245) / 0.44. Smoothed first row: beta = T' l_1 = (0.4, 0.6), so (0.32, 0.12) / 0.44.
    """
    vsg = np.array([[0.8, 0.2], [0.3, 0.7]])
    prog = np.full((2, 1, 10), 0.1)
    dep = np.zeros((1, 1))
    out = run_filter(vsg, prog, dep, transition="static", stay=0.5)
    assert out[0] == pytest.approx([0.8, 0.2], abs=1e-15)
    assert out[1] == pytest.approx([0.195 / 0.44, 0.245 / 0.44], abs=1e-15)
    smoothed = run_filter(vsg, prog, dep, transition="static", stay=0.5, smoothing_lag_s=None)
    assert smoothed[0] == pytest.approx([0.32 / 0.44, 0.12 / 0.44], abs=1e-15)
    assert smoothed[1] == pytest.approx(out[1], abs=1e-15)
    # the paper's filter forgets the first row entirely here: T is (1/2, 1/2) from every state
    paper = run_filter(vsg, prog, dep, transition="static")
    assert paper[1] == pytest.approx([0.3, 0.7], abs=1e-15)


@pytest.mark.parametrize("stay", [0.0, 0.5, 0.93])
@pytest.mark.parametrize("transition", ["static", "both"])
@pytest.mark.parametrize("prior", ["uniform", "propagated", "next_step"])
def test_filter_equals_a_literal_loop(stay, transition, prior):
    vsg, prog, dep = inputs(seed=1)
    nxt = 0.1 + 0.9 * np.random.default_rng(5).random(vsg.shape) if prior == "next_step" else None
    kw = {"transition": transition, "prior": prior, "next_step": nxt, "stay": stay}
    fast = run_filter(vsg, prog, dep, **kw)
    assert np.abs(fast - literal(vsg, prog, dep, stay, 0, transition, prior, nxt)).max() < 1e-12


@pytest.mark.parametrize("stay", [0.5, 0.93])
@pytest.mark.parametrize("prior", ["uniform", "propagated", "next_step"])
@pytest.mark.parametrize("lag", [None, 3])
def test_smoother_equals_a_literal_forward_backward(stay, prior, lag):
    vsg, prog, dep = inputs(seed=2)
    nxt = 0.1 + 0.9 * np.random.default_rng(6).random(vsg.shape) if prior == "next_step" else None
    fast = run_filter(vsg, prog, dep, prior=prior, next_step=nxt, smoothing_lag_s=lag, stay=stay)
    slow = literal(vsg, prog, dep, stay, lag, "both", prior, nxt)
    assert np.abs(fast - slow).max() < 1e-10
    # L = 0 is the filter with the same stay, bit for bit
    assert np.array_equal(
        run_filter(vsg, prog, dep, prior=prior, next_step=nxt, smoothing_lag_s=0, stay=stay),
        run_filter(vsg, prog, dep, prior=prior, next_step=nxt, stay=stay),
    )


def test_segment_stepping_mixes_once_per_segment():
    vsg, prog, dep = inputs(seed=3)
    seg = run_filter(vsg, prog, dep, stepping="segment", stay=0.8)
    assert np.abs(seg - np.repeat(literal(vsg[::2], prog[::2], dep, 0.8), 2, axis=0)).max() < 1e-12


def test_stay_zero_is_the_paper_filter_bit_for_bit():
    """S = 0 is the default; and the mixing path itself, run with the smallest positive S (so
    that 1 - S rounds to 1 and S * belief to 0), gives the paper's beliefs bit for bit."""
    vsg, prog, dep = inputs(seed=4)
    nxt = 0.1 + 0.9 * np.random.default_rng(7).random(vsg.shape)
    tiny = float(np.nextafter(0.0, 1.0))
    for kw in (
        {},
        {"prior": "propagated"},
        {"prior": "next_step", "next_step": nxt},
        {"stepping": "segment"},
        {"smoothing_lag_s": None},
        {"smoothing_lag_s": 6},
    ):
        paper = run_filter(vsg, prog, dep, **kw)
        assert np.array_equal(run_filter(vsg, prog, dep, stay=0.0, **kw), paper)
        assert np.array_equal(run_filter(vsg, prog, dep, stay=np.float64(0), **kw), paper)
        assert np.array_equal(run_filter(vsg, prog, dep, stay=tiny, **kw), paper)
        assert not np.array_equal(run_filter(vsg, prog, dep, stay=0.5, **kw), paper)


@pytest.mark.parametrize("lag", [0, 2])
def test_online_grounder_equals_the_batch_filter(lag):
    vsg, prog, dep = inputs(seed=5, t_len=40)
    batch = run_filter(vsg, prog, dep, stay=0.9, smoothing_lag_s=2 * lag)
    g = OnlineGrounder(None, "goal", [f"s{i}" for i in range(5)], dep, lag_segments=lag, stay=0.9)
    got = []
    for s in range(20):
        est = g.push_scores(vsg[2 * s], prog[2 * s])
        got += [est] if lag == 0 else g.take_smoothed()
    got += g.finish()
    assert np.abs(np.stack([e.belief for e in got]) - batch[1::2]).max() < 1e-12
    state = FilterState(dep, stay=0.9)
    rows = np.stack([state.step(vsg[t], prog[t]) for t in range(40)])
    assert np.abs(rows - run_filter(vsg, prog, dep, stay=0.9)).max() < 1e-14
    paper = OnlineGrounder(None, "goal", [f"s{i}" for i in range(5)], dep, stay=0.0)
    plain = OnlineGrounder(None, "goal", [f"s{i}" for i in range(5)], dep)
    for s in range(20):
        a = paper.push_scores(vsg[2 * s], prog[2 * s]).belief
        assert np.array_equal(a, plain.push_scores(vsg[2 * s], prog[2 * s]).belief)


@pytest.mark.parametrize("bad", [-0.1, 1.0, 1.5, float("nan"), float("inf"), "0.5", True, None])
def test_bad_stay_is_refused(bad):
    vsg, prog, dep = inputs()
    with pytest.raises(ValueError, match="stay"):
        run_filter(vsg, prog, dep, stay=bad)
    with pytest.raises(ValueError, match="stay"):
        OnlineGrounder(None, "goal", [f"s{i}" for i in range(5)], dep, stay=bad)


def test_published_precision_refuses_a_stay():
    vsg, prog, dep = inputs()
    with pytest.raises(ValueError, match="float64 only"):
        run_filter(vsg, prog, dep, stay=0.5, precision="float32-published")
    assert check_stay(0.0, "float32-published") == 0.0
    run_filter(vsg, prog, dep, stay=0.0, precision="float32-published")


def test_stay_label():
    assert stay_label(0.0) == ""
    assert stay_label(0.93) == "stay 0.93 (beyond the paper)"


# --------------------------------------------------------------------------------------------
# the command line: evaluate, localize and follow with --stay

UID = "-25-1nbOki0"  # HT-Step, K = 10


def _errors(capsys) -> list[str]:
    captured = capsys.readouterr()
    return [line for line in captured.err.splitlines() if line.strip() and "%|" not in line]


EVALUATE = ["evaluate", "--dataset", "htstep", "--scores", "simulated", "--limit", "3"]
LOCALIZE = ["localize", "--dataset", "htstep", "--scores", "simulated", "--limit", "3"]
FOLLOW = ["follow", "--replay", "simulated", "--dataset", "htstep"]


@pytest.mark.parametrize("verb", [EVALUATE, LOCALIZE, FOLLOW])
@pytest.mark.parametrize("bad", ["1", "-0.1", "1.5", "abc", "nan", "inf", ""])
def test_cli_refuses_a_bad_stay(verb, bad, capsys):
    from baglm_nb.apps.cli.main import EXIT_BAD_INPUT, main

    argv = [*verb, f"--stay={bad}"] + (["--", UID] if verb is FOLLOW else [])
    assert main(argv) == EXIT_BAD_INPUT
    lines = _errors(capsys)
    assert len(lines) == 1 and lines[0].startswith("error: --stay"), lines
    assert "[0, 1)" in lines[0]


def test_cli_refuses_a_stay_in_the_published_precision(capsys):
    from baglm_nb.apps.cli.main import EXIT_BAD_INPUT, main

    argv = [*EVALUATE, "--precision", "float32-published", "--stay", "0.5"]
    assert main(argv) == EXIT_BAD_INPUT
    lines = _errors(capsys)
    assert len(lines) == 1 and "float64 only" in lines[0] and "--precision float64" in lines[0]
    assert main([*EVALUATE, "--precision", "float32-published", "--stay", "0"]) == 0


def test_evaluate_names_the_stay_and_equals_the_paper_at_zero(capsys):
    from baglm_nb.apps.cli.main import main

    assert main([*EVALUATE, "--json"]) == 0
    paper = capsys.readouterr().out
    assert main([*EVALUATE, "--json", "--stay", "0"]) == 0
    assert capsys.readouterr().out == paper
    assert "beyond the paper" not in paper
    assert main([*EVALUATE, "--json", "--stay", "0.93"]) == 0
    out = capsys.readouterr().out
    assert "stay 0.93 (beyond the paper)" in out.splitlines()[0]
    assert "stay=0.93" in out
    a, b = (json.loads(text.splitlines()[-1]) for text in (paper, out))
    assert a["stay"] == 0.0 and b["stay"] == 0.93 and b["precision_agreement"] is None
    assert a["baglm"] != b["baglm"] and a["off_the_shelf"] == b["off_the_shelf"]


def test_localize_names_the_stay(capsys):
    from baglm_nb.apps.cli.main import main

    assert main([*LOCALIZE, "--stay", "0.9"]) == 0
    out = capsys.readouterr().out
    assert "stay 0.9 (beyond the paper)" in out.splitlines()[0]


def test_follow_replay_with_a_stay(tmp_path):
    """The banner, the report's title and banner name the stay; the announcements are the
    online grounder's on the mixed transitions; --stay 0 is the paper's run."""
    from cli_runs import run_main

    def follow(*extra):  # in this process: the verb's output, without a new interpreter
        out = run_main(*FOLLOW, *extra, "--", UID)
        assert out.returncode == 0, out.stderr
        return out.stdout

    report = tmp_path / "report.html"
    stay = follow("--stay", "0.9", "--html", str(report))
    assert "stay 0.9 (beyond the paper)" in stay.splitlines()[0]
    page = report.read_text()
    title = re.search("<h1>(.*?)</h1>", page).group(1)
    assert "stay 0.9 (beyond the paper)" in title and "simulated" in title
    banner = re.search('<p id="source"[^>]*>(.*?)</p>', page).group(1)
    assert "stay 0.9 (beyond the paper)" in banner
    paper = follow()
    assert follow("--stay", "0") == paper and "beyond the paper" not in paper
    said = [line for line in stay.splitlines() if "] step: " in line]
    assert said != [line for line in paper.splitlines() if "] step: " in line]
