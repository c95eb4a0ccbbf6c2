"""Fixed-lag smoothing: the filter at L=0, a literal forward-backward loop at L=inf and at every
finite L, a closed-form two-state case, and the online smoother against the batch one."""

from __future__ import annotations

import numpy as np
import pytest
from reference import literal_smoother

from baglm_nb.core.filtering import run_filter
from baglm_nb.core.online import FixedLagSmoother, OnlineGrounder
from baglm_nb.core.smoothing import smooth


def inputs(seed: int = 0, t_len: int = 40, k: int = 5):
    """Per-second rows (each 2-s segment's scores twice), progress and a 0/1 D."""
    rng = np.random.default_rng(seed)
    vsg = np.repeat(0.01 + 0.98 * rng.random((t_len // 2, k + 1)), 2, axis=0)
    prog = np.repeat(rng.dirichlet(np.ones(10), size=(t_len // 2, k)), 2, axis=0)
    dep = np.tril((rng.random((k, k)) > 0.4).astype(float), -1)
    return vsg, prog, dep


def test_lag_zero_is_the_filter_bit_for_bit():
    vsg, prog, dep = inputs()
    assert np.array_equal(run_filter(vsg, prog, dep, smoothing_lag_s=0), run_filter(vsg, prog, dep))
    assert np.array_equal(
        run_filter(vsg, prog, dep, stepping="segment", smoothing_lag_s=0),
        run_filter(vsg, prog, dep, stepping="segment"),
    )


@pytest.mark.parametrize("transition", ["static", "readiness", "validity", "both"])
@pytest.mark.parametrize("prior", ["uniform", "propagated", "next_step"])
def test_infinite_lag_is_a_literal_forward_backward(transition, prior):
    vsg, prog, dep = inputs(seed=1)
    nxt = 0.1 + 0.9 * np.random.default_rng(5).random(vsg.shape) if prior == "next_step" else None
    fast = run_filter(
        vsg, prog, dep, transition=transition, prior=prior, next_step=nxt, smoothing_lag_s=None
    )
    slow = literal_smoother(vsg, prog, dep, None, transition, prior, nxt)
    assert np.abs(fast - slow).max() < 1e-10
    # the smoother looks ahead: it is not the filter
    assert (
        np.abs(
            fast - run_filter(vsg, prog, dep, transition=transition, prior=prior, next_step=nxt)
        ).max()
        > 1e-3
    )


@pytest.mark.parametrize("lag", [1, 2, 3, 8, 39, 100])
def test_fixed_lag_is_a_literal_loop(lag):
    vsg, prog, dep = inputs(seed=2)
    fast = run_filter(vsg, prog, dep, smoothing_lag_s=lag)
    assert np.abs(fast - literal_smoother(vsg, prog, dep, lag)).max() < 1e-10


def test_segment_stepping_lag_is_in_seconds():
    vsg, prog, dep = inputs(seed=3)
    seg = run_filter(vsg, prog, dep, stepping="segment", smoothing_lag_s=4)
    literal = literal_smoother(vsg[::2], prog[::2], dep, 2)
    assert np.abs(seg - np.repeat(literal, 2, axis=0)).max() < 1e-10
    with pytest.raises(ValueError, match="multiple of segment_duration"):
        run_filter(vsg, prog, dep, stepping="segment", smoothing_lag_s=3)


def test_two_state_closed_form():
    """Stay with 0.9, switch with 0.1; two rows: gamma_0 ~ l_0 * (A l_1)."""
    static = np.array([[0.9, 0.1], [0.1, 0.9]])
    weights = np.ones((2, 2))
    lik = np.array([[0.8, 0.2], [0.1, 0.9]])
    alpha0 = np.array([0.8, 0.2])  # uniform prior through a symmetric A stays uniform
    pred1 = alpha0 @ static
    alpha1 = pred1 * lik[1] / (pred1 * lik[1]).sum()
    out = smooth(np.stack([alpha0, alpha1]), static, weights, lik, None)
    # beta_0 = A l_1 = [0.9*0.1 + 0.1*0.9, 0.1*0.1 + 0.9*0.9] = [0.18, 0.82]
    # gamma_0 ~ [0.8*0.18, 0.2*0.82] = [0.144, 0.164]
    assert out[0] == pytest.approx([0.144 / 0.308, 0.164 / 0.308], abs=1e-12)
    assert out[1] == pytest.approx(alpha1, abs=1e-15)
    assert np.array_equal(smooth(np.stack([alpha0, alpha1]), static, weights, lik, 0)[0], alpha0)


@pytest.mark.parametrize("stepping", ["second", "segment"])
@pytest.mark.parametrize("lag", [0, 1, 2, 4, 16, 25])
def test_online_fixed_lag_equals_batch(lag, stepping):
    vsg, prog, dep = inputs(seed=4, t_len=40)
    d = 2
    batch = run_filter(vsg, prog, dep, stepping=stepping, smoothing_lag_s=lag * d)
    g = OnlineGrounder(
        None,
        "goal",
        [f"s{i}" for i in range(dep.shape[0])],
        dep,
        stepping=stepping,
        lag_segments=lag,
    )
    got = []
    for s in range(vsg.shape[0] // d):
        filtered = g.push_scores(vsg[s * d], prog[s * d])
        assert filtered.lag_s == 0 and (filtered.announced is None or lag == 0)
        got += [filtered] if lag == 0 else g.take_smoothed()
    got += g.finish()
    assert [e.segment for e in got] == list(range(vsg.shape[0] // d))
    assert all(e.lag_s == lag * d for e in got)
    online = np.stack([e.belief for e in got])
    assert np.abs(online - batch[d - 1 :: d]).max() < 1e-12


def test_online_smoothing_announces_on_smoothed_beliefs():
    vsg, prog, dep = inputs(seed=6, t_len=60)
    g = OnlineGrounder(
        None, "goal", [f"s{i}" for i in range(5)], dep, lag_segments=3, threshold=0.3, patience=1
    )
    for s in range(30):
        g.push_scores(vsg[2 * s], prog[2 * s])
    got = g.take_smoothed() + g.finish()
    from baglm_nb.core.online import Hysteresis

    h = Hysteresis(0.3, 1)
    expected = [h.update(int(np.argmax(e.belief)), float(e.belief.max())) for e in got]
    names = [f"s{i}" for i in range(5)] + ["none"]
    assert [e.announced for e in got] == [None if x is None else names[x] for x in expected]
    assert any(e.announced for e in got)


def test_smoother_refuses_bad_lags():
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="smoothing_lag_s"):
            run_filter(*inputs(), smoothing_lag_s=bad)
        with pytest.raises(ValueError, match="lag"):
            FixedLagSmoother(np.eye(2), bad, 1)
    with pytest.raises(ValueError, match="float64 only"):
        run_filter(*inputs(), smoothing_lag_s=2, precision="float32-published")
    with pytest.raises(ValueError, match="prior='uniform'"):
        OnlineGrounder(None, "g", ["a", "b"], np.zeros((2, 2)), prior="propagated", lag_segments=2)


def test_online_smoothing_steps_over_a_gap_as_the_batch_smoother_does():
    """Segments skipped by prediction (a live gap) count as rows of all-ones observations and
    no progress; they are never emitted, and the others equal the batch smoother's."""
    vsg, prog, dep = inputs(seed=7, t_len=40)
    gap = [6, 7, 8]
    rows_v, rows_p = vsg.copy(), prog.copy()
    for s in gap:
        rows_v[2 * s : 2 * s + 2] = 1.0
        rows_p[2 * s : 2 * s + 2] = 0.0
    lag = 3
    batch = run_filter(rows_v, rows_p, dep, smoothing_lag_s=2 * lag)[1::2]
    g = OnlineGrounder(None, "goal", [f"s{i}" for i in range(5)], dep, lag_segments=lag)
    got = []
    for s in range(20):
        if s in gap:
            if s == gap[0]:
                g.skip(len(gap))
            continue
        g.push_scores(vsg[2 * s], prog[2 * s])
        got += g.take_smoothed()
    got += g.finish()
    assert [e.segment for e in got] == [s for s in range(20) if s not in gap]
    online = np.stack([e.belief for e in got])
    assert np.abs(online - batch[[e.segment for e in got]]).max() < 1e-12
