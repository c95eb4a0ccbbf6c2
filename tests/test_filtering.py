"""The filter against the published cross-check vectors, closed forms and a slow reference."""

from __future__ import annotations

import numpy as np
import pytest

from baglm_nb.core.filtering import (
    FilterState,
    column_weights,
    expected_progress,
    normalize,
    run_filter,
    static_transition,
)

# reference-protocol §5.5
D55 = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0]], dtype=float)
V55 = np.array([[0.60, 0.10, 0.05, 0.20], [0.20, 0.50, 0.20, 0.05], [0.05, 0.15, 0.70, 0.05]])
DIGITS55 = [[5, 0, 0], [9, 5, 0], [9, 9, 5]]
BELIEFS55 = np.array(
    [
        [0.707525, 0.041893, 0.014740, 0.235842],
        [0.696377, 0.056989, 0.014508, 0.232126],
        [0.192032, 0.564728, 0.179230, 0.064011],
        [0.218490, 0.504757, 0.203924, 0.072830],
        [0.020092, 0.069093, 0.843844, 0.066972],
        [0.021307, 0.012769, 0.894900, 0.071024],
    ]
)


def progress55() -> np.ndarray:
    p = np.zeros((3, 3, 10))
    for s, row in enumerate(DIGITS55):
        for k, digit in enumerate(row):
            p[s, k, digit] = 0.9  # 0.1 of the mass is off the digits
    return p


def slow_published_filter(vsg, progress, dep, transition="both", prior="uniform", nxt=None):
    """Reference-protocol §5.2-5.3 written out literally, one row at a time."""
    t_len, k1 = vsg.shape
    k = k1 - 1
    m = dep.T.copy()
    for i in range(k):
        if dep[i].sum() == 0:
            m[:, i] = 1.0
    for i in range(k):
        m[i, i] = 1.0
    static = np.ones((k1, k1))
    static[:k, :k] = m
    for r in range(k1):
        static[r] /= static[r].sum()
    belief = np.full(k1, 1.0 / k1)
    state_prior = np.full(k1, 1.0 / k1)
    mono = np.zeros(k)
    out = []
    for t in range(t_len):
        e = np.array([sum(j * progress[t, s, j] for j in range(10)) / 9 for s in range(k)])
        mono = np.maximum(mono, e)
        r = np.ones(k)
        v = np.ones(k)
        for i in range(k):
            den = sum(dep[i, j] for j in range(k))
            if den != 0:
                r[i] = sum(dep[i, j] * mono[j] for j in range(k)) / den
            den = sum(dep[j, i] for j in range(k))
            if den != 0:
                v[i] = sum(dep[j, i] * (1 - mono[j]) for j in range(k)) / den
        tt = static.copy()
        for j in range(k):
            scale = {"static": 1.0, "readiness": r[j], "validity": v[j], "both": r[j] * v[j]}
            tt[:, j] *= scale[transition]
        for row in range(k1):
            s = tt[row].sum()
            if s != 0:
                tt[row] /= s
        pred = np.array([sum(belief[j] * tt[j, i] for j in range(k1)) for i in range(k1)])
        post = pred * vsg[t]
        if prior == "propagated":
            state_prior = np.array(
                [sum(state_prior[j] * tt[j, i] for j in range(k1)) for i in range(k1)]
            )
            post = np.divide(post, state_prior, out=np.zeros(k1), where=state_prior != 0)
        elif prior == "next_step":
            post = post / nxt[t]
        if post.sum() != 0:
            post = post / post.sum()
        belief = post
        out.append(post)
    return np.array(out)


def random_inputs(rng, t_len=23, k=5, binary=False):
    vsg = rng.random((t_len, k + 1))
    progress = rng.dirichlet(np.ones(11), size=(t_len, k))[..., :10]  # off-digit mass too
    dep = rng.random((k, k))
    if binary:
        dep = (dep > 0.6).astype(float)
        dep[1] = 0.0  # a step with no prerequisites
    return vsg, progress, dep


def test_static_matrix_matches_published_example():
    expected = np.array(
        [[0.25] * 4, [0.25] * 4, [1 / 3, 0.0, 1 / 3, 1 / 3], [0.25] * 4],
    )
    np.testing.assert_allclose(static_transition(D55), expected, atol=1e-12)


def test_published_vectors_per_second_rows():
    beliefs = run_filter(np.repeat(V55, 2, axis=0), np.repeat(progress55(), 2, axis=0), D55)
    assert beliefs.dtype == np.float64 and beliefs.shape == (6, 4)
    np.testing.assert_allclose(beliefs, BELIEFS55, atol=1e-6)
    assert beliefs.argmax(axis=0).tolist() == [0, 2, 5, 0]


def test_published_vectors_per_segment_stepping():
    beliefs = run_filter(
        np.repeat(V55, 2, axis=0),
        np.repeat(progress55(), 2, axis=0),
        D55,
        stepping="segment",
        segment_duration=2,
    )
    np.testing.assert_allclose(beliefs[2], [0.192067, 0.564649, 0.179262, 0.064022], atol=1e-6)
    np.testing.assert_allclose(beliefs[4], [0.020042, 0.071402, 0.841751, 0.066806], atol=1e-6)
    np.testing.assert_array_equal(beliefs[::2], beliefs[1::2])
    # stepping per segment on duplicated rows equals stepping per row on the segment rows
    np.testing.assert_allclose(beliefs[::2], run_filter(V55, progress55(), D55), atol=1e-12)


def test_zero_dependency_gives_normalised_scores():
    rng = np.random.default_rng(1)
    vsg, progress, _ = random_inputs(rng)
    for transition in ("static", "readiness", "validity", "both"):
        beliefs = run_filter(vsg, progress, np.zeros((5, 5)), transition=transition)
        np.testing.assert_allclose(beliefs, normalize(vsg, axis=1), atol=1e-12)


def test_static_transition_is_an_hmm_forward_pass():
    rng = np.random.default_rng(2)
    vsg, progress, dep = random_inputs(rng, t_len=40, k=6)
    a = static_transition(dep)
    alpha = np.full(7, 1 / 7)
    expected = []
    for t in range(40):  # textbook forward recursion with per-step normalisation
        alpha = (alpha @ a) * vsg[t]
        alpha = alpha / alpha.sum()
        expected.append(alpha)
    np.testing.assert_allclose(run_filter(vsg, progress, dep, transition="static"), expected)


@pytest.mark.parametrize("transition", ["static", "readiness", "validity", "both"])
@pytest.mark.parametrize("binary", [False, True])
def test_fast_filter_equals_slow_reference(transition, binary):
    rng = np.random.default_rng(3)
    vsg, progress, dep = random_inputs(rng, binary=binary)
    fast = run_filter(vsg, progress, dep, transition=transition)
    slow = slow_published_filter(vsg, progress, dep, transition)
    np.testing.assert_allclose(fast, slow, rtol=1e-10, atol=1e-12)


def test_propagated_prior_equals_slow_reference():
    rng = np.random.default_rng(4)
    vsg, progress, dep = random_inputs(rng, binary=True)
    fast = run_filter(vsg, progress, dep, prior="propagated")
    np.testing.assert_allclose(
        fast, slow_published_filter(vsg, progress, dep, "both", "propagated")
    )
    assert not np.allclose(fast, run_filter(vsg, progress, dep))


def test_next_step_prior_divides_out_the_scores():
    rng = np.random.default_rng(5)
    vsg, progress, dep = random_inputs(rng)
    nxt = rng.random(vsg.shape) * 0.9 + 0.05  # probabilities in [0.05, 0.95]
    fast = run_filter(vsg, progress, dep, prior="next_step", next_step=nxt)
    slow = slow_published_filter(vsg, progress, dep, "both", "next_step", nxt)
    np.testing.assert_allclose(fast, slow, rtol=1e-10)
    # a next-step prior equal to the scores cancels the observation: beliefs follow the model
    flat = run_filter(vsg, progress, np.zeros((5, 5)), prior="next_step", next_step=vsg)
    np.testing.assert_allclose(flat, np.full_like(vsg, 1 / 6))


def test_column_weights_and_expected_progress():
    p = progress55()
    np.testing.assert_allclose(expected_progress(p)[1], [0.9, 0.5, 0.0])
    w = column_weights(D55, p, "readiness")
    # step1 needs step0 (progress 0.9*5/9 = 0.5 at row 0), step2 needs step0 and step1
    np.testing.assert_allclose(w[0], [1.0, 0.5, 0.25, 1.0])
    w = column_weights(D55, p, "validity")
    # step0 is a prerequisite of steps 1 and 2, both at progress 0 at row 0
    np.testing.assert_allclose(w[0], [1.0, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(w[2, 0], ((1 - 0.9) + (1 - 0.5)) / 2)


def test_progress_max_includes_current_row():
    p = np.zeros((2, 2, 10))
    p[:, :, 0] = 1.0
    p[1, 0] = 0.0
    p[1, 0, 9] = 1.0  # step 0 completes at row 1
    dep = np.array([[0.0, 0.0], [1.0, 0.0]])
    w = column_weights(dep, p, "readiness")
    assert w[0, 1] == 0.0 and w[1, 1] == 1.0


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"vsg": np.ones((4, 3, 1))}, "vsg"),
        ({"progress": np.ones((4, 2, 9))}, "progress"),
        ({"progress": np.ones((5, 2, 10))}, "progress"),
        ({"dependency": np.ones((3, 3))}, "dependency"),
        ({"dependency": np.ones(2)}, "dependency"),
        ({"vsg": np.full((4, 3), np.nan)}, "vsg"),
        ({"progress": -np.ones((4, 2, 10))}, "progress"),
        ({"dependency": np.array([[0.0, np.inf], [0.0, 0.0]])}, "dependency"),
        ({"vsg": -np.ones((4, 3))}, "vsg"),
        ({"prior": "next_step"}, "next_step"),
        ({"prior": "next_step", "next_step": np.ones((3, 3))}, "next_step"),
        ({"transition": "dynamic"}, "transition"),
        ({"prior": "flat"}, "prior"),
        ({"stepping": "segment", "segment_duration": 3}, "segment_duration"),
    ],
)
def test_bad_input_names_the_argument(kwargs, name):
    args = {"vsg": np.ones((4, 3)), "progress": np.ones((4, 2, 10)), "dependency": np.eye(2)}
    args.update(kwargs)
    vsg, progress, dep = args.pop("vsg"), args.pop("progress"), args.pop("dependency")
    with pytest.raises(ValueError, match=name):
        run_filter(vsg, progress, dep, **args)


@pytest.mark.parametrize("prior", ["uniform", "propagated"])
@pytest.mark.parametrize("transition", ["static", "readiness", "validity", "both"])
def test_online_state_step_by_step_equals_batch(transition, prior):
    rng = np.random.default_rng(6)
    vsg, progress, dep = random_inputs(rng, t_len=40, k=7, binary=True)
    state = FilterState(dep, transition=transition, prior=prior)
    online = np.array([state.step(vsg[t], progress[t]) for t in range(40)])
    batch = run_filter(vsg, progress, dep, transition=transition, prior=prior)
    np.testing.assert_allclose(online, batch, rtol=0, atol=1e-14)
    state.reset()
    np.testing.assert_allclose(state.step(vsg[0], progress[0]), batch[0], atol=1e-14)
    with pytest.raises(ValueError, match="progress"):
        state.step(vsg[0], progress[0, :3])
