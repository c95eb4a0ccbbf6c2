"""The filter as pure steps: transition specs, the one weights function, predict and update.

The weights function is checked against a literal loop, ``predict`` / ``update`` against the
dense transition matrix, the batch filter against a loop of ``predict`` + ``update``, and the
kernels against specs whose flags disagree with their names (the flags, not the name or its
position in the vocabulary, decide).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest

from baglm_nb.analyses import layouts, palette
from baglm_nb.core import published_numerics
from baglm_nb.core.filtering import (
    FilterState,
    TransitionModel,
    column_weights,
    normalize,
    predict,
    run_filter,
    static_transition,
    transition_model,
    transition_weights,
    update,
)
from baglm_nb.inputs.variants import (
    TRANSITION_SPECS,
    TRANSITIONS,
    TransitionSpec,
    transition_spec,
)

PACKAGE = Path(__file__).resolve().parents[1] / "baglm_nb"


def _inputs(rng, t_len=30, k=6):
    """Scores, progress and a sparse D with an all-zero row and an all-zero column."""
    vsg = rng.random((t_len, k + 1))
    progress = rng.dirichlet(np.full(10, 0.4), size=(t_len, k))
    dep = rng.random((k, k)) * (rng.random((k, k)) < 0.5)
    dep[0] = 0.0
    dep[:, 1] = 0.0
    return vsg, progress, dep


def _literal_weights(dep, done, readiness_on, validity_on):
    """Paper eq. 4-5, one loop per sum: r_i over i's prerequisites, v_i over the steps that
    need i; 1 where the denominator is 0; none keeps 1."""
    t_len, k = done.shape
    w = np.ones((t_len, k + 1))
    for t in range(t_len):
        for i in range(k):
            r = v = 1.0
            row = sum(dep[i, j] for j in range(k))
            col = sum(dep[j, i] for j in range(k))
            if readiness_on and row != 0:
                r = sum(dep[i, j] * done[t, j] for j in range(k)) / row
            if validity_on and col != 0:
                v = sum(dep[j, i] * (1.0 - done[t, j]) for j in range(k)) / col
            w[t, i] = r * v
    return w


def test_specs_are_the_vocabulary_with_their_flags():
    assert tuple(TRANSITION_SPECS) == TRANSITIONS
    flags = {n: (s.uses_readiness, s.uses_validity) for n, s in TRANSITION_SPECS.items()}
    assert flags == {
        "static": (False, False),
        "readiness": (True, False),
        "validity": (False, True),
        "both": (True, True),
    }
    assert [s.name for s in TRANSITION_SPECS.values() if s.is_full] == ["both"]
    spec = TransitionSpec("mine", uses_readiness=True, uses_validity=False)
    assert transition_spec(spec) is spec and transition_spec("both") is TRANSITION_SPECS["both"]
    for bad in ("Both", "", None, 3):
        with pytest.raises(ValueError, match="transition must be one of"):
            transition_spec(bad)


@pytest.mark.parametrize("name", TRANSITIONS)
def test_weights_against_a_literal_loop(name):
    rng = np.random.default_rng(11)
    _, progress, dep = _inputs(rng)
    done = np.maximum.accumulate(progress @ (np.arange(10) / 9.0), axis=0)
    spec = TRANSITION_SPECS[name]
    expected = _literal_weights(dep, done, spec.uses_readiness, spec.uses_validity)
    np.testing.assert_allclose(transition_weights(dep, done, name), expected, rtol=1e-12)
    np.testing.assert_array_equal(
        column_weights(dep, progress, spec), transition_weights(dep, done, spec)
    )
    assert (expected[:, -1] == 1.0).all()  # none
    if not spec.uses_validity:  # step 0 has no prerequisite: readiness 1
        assert (expected[:, 0] == 1.0).all()
    if not spec.uses_readiness:  # no step needs step 1: validity 1
        assert (expected[:, 1] == 1.0).all()


@pytest.mark.parametrize("name", TRANSITIONS)
def test_published_float32_weights_are_the_same_formula(name):
    """The float32 kernel computes the one formula in torch's order: equal to float32 rounding."""
    rng = np.random.default_rng(12)
    _, progress, dep = _inputs(rng, t_len=5, k=9)
    done = np.maximum.accumulate(progress @ (np.arange(10) / 9.0), axis=0)
    spec = TRANSITION_SPECS[name]
    d32 = dep.astype(np.float32)
    row_sum, col_sum = d32.sum(axis=1), d32.sum(axis=0)
    prod = np.empty(9 * 9, np.float32)
    for t in range(done.shape[0]):
        w = np.ones(10, np.float32)
        mono = done[t].astype(np.float32)
        flags = (spec.uses_readiness, spec.uses_validity)
        published_numerics._weights(d32, row_sum, col_sum, mono, *flags, prod, w, 8)
        np.testing.assert_allclose(w, transition_weights(dep, done[t : t + 1], spec)[0], atol=1e-6)


@pytest.mark.parametrize("stay", [0.0, 0.35])
def test_predict_and_update_against_the_dense_matrix(stay):
    rng = np.random.default_rng(13)
    vsg, progress, dep = _inputs(rng, t_len=4)
    model = transition_model(dep, progress, "both", stay)
    assert isinstance(model, TransitionModel) and model.weights.shape == vsg.shape
    belief = normalize(rng.random(vsg.shape[1]))
    for t in range(4):
        dense = normalize(model.static * model.weights[t], axis=1)
        dense = (1 - stay) * dense + stay * np.eye(len(dense))
        np.testing.assert_allclose(model.matrix(t), dense, rtol=1e-14)
        np.testing.assert_allclose(dense.sum(axis=1), 1.0, rtol=1e-14)
        prior = predict(belief, model, t)
        np.testing.assert_allclose(prior, belief @ dense, rtol=1e-13)
        divisor = rng.random(len(prior)) + 0.1
        divisor[2] = 0.0
        expected = prior * vsg[t] / np.where(divisor == 0, np.inf, divisor)
        np.testing.assert_allclose(update(prior, vsg[t], divisor), normalize(expected), 1e-14)
        np.testing.assert_allclose(update(prior, vsg[t]), normalize(prior * vsg[t]), 1e-14)
        belief = update(prior, vsg[t])
    assert (update(prior, np.zeros_like(prior)) == 0).all()


@pytest.mark.parametrize("stay", [0.0, 0.2])
@pytest.mark.parametrize("prior", ["uniform", "propagated", "next_step"])
def test_run_filter_is_predict_then_update_row_by_row(prior, stay):
    """The batch filter is the composition of the two pure steps, bit for bit."""
    rng = np.random.default_rng(14)
    vsg, progress, dep = _inputs(rng)
    nxt = rng.random(vsg.shape) * 0.9 + 0.05 if prior == "next_step" else None
    model = transition_model(dep, progress, "both", stay)
    n = vsg.shape[1]
    belief, state_prior, rows = np.full(n, 1 / n), np.full(n, 1 / n), []
    for t in range(len(vsg)):
        divisor = None if nxt is None else nxt[t]
        if prior == "propagated":
            state_prior = divisor = predict(state_prior, model, t)
        belief = update(predict(belief, model, t), vsg[t], divisor)
        rows.append(belief)
    out = run_filter(vsg, progress, dep, prior=prior, next_step=nxt, stay=stay)
    np.testing.assert_array_equal(out, np.array(rows))


def test_spec_flags_drive_the_kernels_not_names():
    """A spec named ``static`` that uses both factors runs as ``both``, in float64, float32 and
    online; a spec with no flags reduces to the static filter."""
    rng = np.random.default_rng(15)
    vsg, progress, dep = _inputs(rng, t_len=20)
    liar = TransitionSpec("static", uses_readiness=True, uses_validity=True)
    plain = TransitionSpec("both", uses_readiness=False, uses_validity=False)
    for precision in ("float64", "float32-published"):

        def run(t, precision=precision):
            return run_filter(vsg, progress, dep, transition=t, precision=precision)

        np.testing.assert_array_equal(run(liar), run("both"))
        np.testing.assert_array_equal(run(plain), run("static"))
        assert not np.array_equal(run("both"), run("static"))
    for spec, same in ((liar, "both"), (plain, "static")):
        state = FilterState(dep, transition=spec)
        online = np.array([state.step(vsg[t], progress[t]) for t in range(20)])
        np.testing.assert_allclose(
            online, run_filter(vsg, progress, dep, transition=same), 0, 1e-14
        )


def test_without_dependencies_every_transition_is_the_static_one():
    """D = 0: readiness and validity are 1 everywhere, so all four variants are one filter."""
    rng = np.random.default_rng(16)
    vsg, progress, dep = _inputs(rng, t_len=12)
    dep[:] = 0.0
    static = run_filter(vsg, progress, dep, transition="static")
    for name in TRANSITIONS:
        np.testing.assert_array_equal(run_filter(vsg, progress, dep, transition=name), static)
    np.testing.assert_array_equal(static_transition(dep), np.full((7, 7), 1 / 7))


def test_online_state_weights_come_from_the_one_function():
    rng = np.random.default_rng(17)
    vsg, progress, dep = _inputs(rng, t_len=10)
    state = FilterState(dep, transition="both")
    batch = column_weights(dep, progress, "both")
    for t in range(10):
        state.step(vsg[t], progress[t])
        np.testing.assert_allclose(state.weights, batch[t], rtol=1e-14)


def _int_mode_comparisons(tree: ast.AST) -> list[int]:
    """Lines comparing a name with "mode" in it to an integer constant."""
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = (node.left, *node.comparators)
            named = any("mode" in getattr(s, "id", getattr(s, "attr", "")).lower() for s in sides)
            numbered = any(isinstance(s, ast.Constant) and type(s.value) is int for s in sides)
            if named and numbered:
                hits.append(node.lineno)
    return hits


def test_no_integer_transition_modes():
    """No kernel compares a mode to an integer, and nothing numbers the transitions by their
    position in the vocabulary (``_MODES``, ``enumerate(TRANSITIONS)``, ``TRANSITIONS.index``)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        found += [f"{path.name}:{n}" for n in _int_mode_comparisons(ast.parse(text))]
        for pattern in (r"\b_MODES\b", r"enumerate\(TRANSITIONS\)", r"TRANSITIONS\.index"):
            if re.search(pattern, text):
                found.append(f"{path.name}: {pattern}")
    assert not found, found
    assert _int_mode_comparisons(ast.parse("if mode == 1 or mode == 3: pass")) == [1, 1]
    assert _int_mode_comparisons(ast.parse("if use_readiness and k == 1: pass")) == []


def test_table_marks_and_hues_follow_the_specs():
    assert layouts.TRANSITION_MARKS == {
        n: (s.uses_readiness, s.uses_validity) for n, s in TRANSITION_SPECS.items()
    }
    keys = {n: palette.key_of(n) for n in TRANSITIONS}
    assert all(keys[n] == "baglm" for n, s in TRANSITION_SPECS.items() if s.is_full)
    parts = [keys[n] for n, s in TRANSITION_SPECS.items() if not s.is_full]
    hues = {palette.COLOURS[k] for k in parts}
    assert len(hues) == len(parts) and palette.COLOURS["baglm"] not in hues
