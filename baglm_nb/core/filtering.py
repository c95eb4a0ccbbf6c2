"""The BaGLM Bayesian filter and its ablation variants (numpy steps + numba kernels).

Axis conventions, used everywhere in this module:

- ``vsg``: (T, K+1) observation scores, columns = K steps in list order then ``none`` last;
- ``progress``: (T, K, 10) probabilities of the digits 0..9 per step;
- ``dependency``: (K, K), ``D[i, j] = P(step j is a prerequisite of step i)`` (row = target);
- beliefs: (T, K+1) float64 (float32 with ``precision="float32-published"``), none last.

Pure steps, as filterpy's ``discrete_bayes``: :func:`transition_weights` (the one place
readiness and validity are computed, from a :class:`~baglm_nb.inputs.variants.TransitionSpec`'s
flags) and :func:`static_transition` make the :class:`TransitionModel` (with ``stay``);
:func:`predict` pushes a belief through it and :func:`update` weighs the prior by the scores,
dividing a state prior out. :func:`run_filter` (batch) and :class:`FilterState` (online) compose
them; their compiled kernels take arrays and flags, never a variant's name or position.

The published implementation (reference-protocol §5.2-5.3) steps once per *second row*,
applying each 2-s segment's observation twice; the paper's equations step once per segment.
Both are available through ``stepping``.

Two precisions: ``"float64"`` (the default) and ``"float32-published"``, the published code's
torch float32 arithmetic and order of operations (:mod:`baglm_nb.core.published_numerics`). On
confident observations float32 beliefs saturate at exactly 1.0 on several rows of a step and the
argmax takes the first of them, as the published code does; float64 separates those rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from baglm_nb.core.published_numerics import forward32
from baglm_nb.core.smoothing import likelihoods, smooth
from baglm_nb.inputs import grid
from baglm_nb.inputs.variants import (
    PRECISIONS,
    PRIORS,
    PUBLISHED_PRECISION,
    SEGMENT_DURATION,
    STEPPINGS,
    TRANSITIONS,
    Precision,
    Prior,
    Stepping,
    Transition,
    TransitionSpec,
    transition_spec,
)

__all__ = [
    "PRECISIONS",
    "PRIORS",
    "PUBLISHED_PRECISION",
    "STEPPINGS",
    "TRANSITIONS",
    "FilterState",
    "TransitionModel",
    "check_stay",
    "column_weights",
    "expected_progress",
    "normalize",
    "predict",
    "readiness",
    "run_filter",
    "static_transition",
    "transition_model",
    "transition_weights",
    "update",
    "validity",
]


def normalize(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Divide by the sum along ``axis``; slices that sum to zero are left at zero."""
    x = np.asarray(x, dtype=np.float64)
    total = x.sum(axis=axis, keepdims=True)
    return np.divide(x, total, out=np.zeros_like(x), where=total != 0)


def check_stay(stay: float, precision: str = "float64") -> float:
    """``stay`` as a float in [0, 1), else ``ValueError``; a non-zero stay needs float64.

    ``stay`` (beyond the paper) mixes every row of the transition with staying:
    ``T'_t = (1 - stay) T_t + stay I``. 0, the default, is the paper's filter.
    """
    if isinstance(stay, bool) or not isinstance(stay, int | float | np.floating | np.integer):
        raise ValueError(f"stay must be a number in [0, 1), got {stay!r}")
    value = float(stay)
    if not 0.0 <= value < 1.0:  # NaN fails too
        raise ValueError(f"stay must be in [0, 1), got {stay!r}")
    if value != 0.0 and precision == PUBLISHED_PRECISION:
        raise ValueError(
            f"stay {value:g} runs in float64 only, not in precision {PUBLISHED_PRECISION!r}"
        )
    return value


def static_transition(dependency: np.ndarray) -> np.ndarray:
    """The static (K+1, K+1) transition matrix built from D, none last (reference §5.2).

    ``M = D.T`` (from prerequisite j to target i); a step whose row of D is all exactly zero gets
    a column of ones (every state may move to it), checked *before* the diagonal is set to 1;
    an all-ones none row and column are appended; rows are normalised.
    """
    d = np.asarray(dependency, dtype=np.float64)
    k = d.shape[0]
    m = np.ones((k + 1, k + 1))
    m[:k, :k] = d.T
    no_prereq = d.sum(axis=1) == 0
    m[:k, :k][:, no_prereq] = 1.0
    m[np.arange(k), np.arange(k)] = 1.0
    return normalize(m, axis=1)


def expected_progress(progress: np.ndarray) -> np.ndarray:
    """Expected progress in [0, 1]: ``sum_j j * p[..., j] / 9``; shape (T, K)."""
    return np.asarray(progress, dtype=np.float64) @ (np.arange(10) / 9.0)


def readiness(dependency: np.ndarray, done: np.ndarray) -> np.ndarray:
    """Readiness ``r[t, i] = sum_j D[i, j] done[t, j] / sum_j D[i, j]`` (1 where the sum is 0).

    ``done`` is (T, K) running-max progress; the raw D with its diagonal is used.
    """
    d = np.asarray(dependency, dtype=np.float64)
    den = d.sum(axis=1)
    num = done @ d.T
    return np.divide(num, den, out=np.ones_like(num), where=den != 0)


def validity(dependency: np.ndarray, done: np.ndarray) -> np.ndarray:
    """Validity ``v[t, i] = sum_j D[j, i] (1 - done[t, j]) / sum_j D[j, i]`` (1 where 0)."""
    d = np.asarray(dependency, dtype=np.float64)
    den = d.sum(axis=0)
    num = (1.0 - done) @ d
    return np.divide(num, den, out=np.ones_like(num), where=den != 0)


def transition_weights(
    dependency: np.ndarray, done: np.ndarray, transition: Transition | TransitionSpec = "both"
) -> np.ndarray:
    """The destination-column weights (T, K+1) of the transition into each row; the one place
    they are computed (the batch filter, :class:`FilterState` and the smoothers use it).

    ``done`` (T, K) is the running-max progress. Step columns get :func:`readiness` times
    :func:`validity`, each only where the variant's :class:`TransitionSpec` uses it (1 for
    ``static``); the none column keeps weight 1. The published float32 path computes the same
    formula in torch's float32 order (:mod:`baglm_nb.core.published_numerics`).
    """
    spec = transition_spec(transition)
    t, k = done.shape
    w = np.ones((t, k + 1))
    if spec.uses_readiness:
        w[:, :k] *= readiness(dependency, done)
    if spec.uses_validity:
        w[:, :k] *= validity(dependency, done)
    return w


def column_weights(
    dependency: np.ndarray, progress: np.ndarray, transition: Transition | TransitionSpec = "both"
) -> np.ndarray:
    """:func:`transition_weights` of every row (T, K+1), from the running maximum of the
    expected progress over rows ``tau <= t``."""
    done = np.maximum.accumulate(expected_progress(progress), axis=0)
    return transition_weights(dependency, done, transition)


@dataclass(frozen=True)
class TransitionModel:
    """The transition into each row, as :func:`predict` takes it (filterpy's ``kernel``).

    ``A_t[j, i] = static[j, i] w_t[i] / sum_m static[j, m] w_t[m]`` with ``w_t = weights[t]``
    (:func:`static_transition`, :func:`transition_weights`), mixed with staying: ``(1 - stay)
    A_t + stay I`` (beyond the paper; 0 skips the mixing). The kernels never build ``A_t``.
    """

    static: np.ndarray
    weights: np.ndarray
    stay: float = 0.0

    def matrix(self, t: int) -> np.ndarray:
        """The dense (K+1, K+1) transition into row ``t`` (for reading and tests)."""
        a = normalize(self.static * self.weights[t], axis=1)
        return (1.0 - self.stay) * a + self.stay * np.eye(len(a))


def transition_model(
    dependency: np.ndarray,
    progress: np.ndarray,
    transition: Transition | TransitionSpec = "both",
    stay: float = 0.0,
) -> TransitionModel:
    """The :class:`TransitionModel` of every row of one video (progress (T, K, 10))."""
    weights = column_weights(dependency, progress, transition)
    return TransitionModel(static_transition(dependency), weights, check_stay(stay))


def predict(belief: np.ndarray, model: TransitionModel, t: int = 0) -> np.ndarray:
    """The prior of row ``t``: ``belief @ A_t`` (K+1,), the transition passed in."""
    b = np.asarray(belief, dtype=np.float64)
    return _predict(model.static, model.weights[t], b, model.stay)


def update(prior: np.ndarray, scores: np.ndarray, divisor: np.ndarray | None = None) -> np.ndarray:
    """The posterior ``prior * scores / divisor``, normalised (K+1,).

    ``divisor`` is the state prior divided out (zero where it is zero), none for the uniform
    prior; a posterior that sums to zero stays zero.
    """
    pred = np.asarray(prior, dtype=np.float64)
    obs = np.asarray(scores, dtype=np.float64)
    div = obs if divisor is None else np.asarray(divisor, dtype=np.float64)
    out = np.empty_like(pred)
    _update(pred, obs, div, divisor is not None, out)
    return out


class FilterState:
    """The filter's O(K) state for online use: one :meth:`step` per observation row.

    Stepping a sequence of rows one at a time gives :func:`run_filter`'s beliefs on the same
    rows (same weights function, same kernel); ``stay`` as in :func:`run_filter`.
    """

    def __init__(
        self,
        dependency: np.ndarray,
        *,
        transition: Transition | TransitionSpec = "both",
        prior: Prior = "uniform",
        stay: float = 0.0,
    ) -> None:
        d = _check_array("dependency", dependency, 2)
        if d.shape[0] != d.shape[1]:
            raise ValueError(f"dependency must be square (K, K), got {d.shape}")
        spec = transition_spec(transition)
        if prior not in PRIORS:
            raise ValueError(f"prior must be one of {PRIORS}, got {prior!r}")
        self.dependency, self.transition, self.prior = d, spec.name, prior
        self.spec = spec
        self.stay = check_stay(stay)
        self.static = static_transition(d)
        self.num_steps = d.shape[0]
        k = d.shape[0]
        self._vshape, self._pshape = (k + 1,), (k, 10)
        self.reset()

    def reset(self) -> None:
        """Back to the initial state: uniform belief, no progress seen."""
        n = self.num_steps + 1
        self._belief = np.full(n, 1.0 / n)
        self._state_prior = np.full(n, 1.0 / n)
        self._done = np.zeros(n - 1)
        self._weights = np.ones(n)
        self.top = 0
        self.rows = 0

    @property
    def belief(self) -> np.ndarray:
        """The current belief (K+1,), none last (a view: copy it to keep it)."""
        return self._belief

    @property
    def done(self) -> np.ndarray:
        """Running maximum of each step's expected progress (K,) (a view)."""
        return self._done

    @property
    def weights(self) -> np.ndarray:
        """The destination-column weights (K+1,) of the last :meth:`step` (a view)."""
        return self._weights

    def step(
        self,
        vsg: np.ndarray,
        progress: np.ndarray,
        next_step: np.ndarray | None = None,
        *,
        repeats: int = 1,
    ) -> np.ndarray:
        """Apply one observation row ``repeats`` times; returns the belief (K+1,).

        ``vsg`` is (K+1,), ``progress`` (K, 10); ``repeats=segment_duration`` applies a
        segment's observation once per second row, as the published code does.
        """
        v = np.asarray(vsg, dtype=np.float64)
        p = np.asarray(progress, dtype=np.float64)
        div = _online_divisor(v, p, next_step, self._vshape, self._pshape)
        if (self.prior == "next_step") != (next_step is not None):
            raise ValueError("next_step scores are required with prior='next_step', and only then")
        np.maximum(self._done, expected_progress(p), out=self._done)
        self._weights[:] = transition_weights(self.dependency, self._done[None], self.spec)[0]
        model = (self.static, self._weights, v, div, next_step is not None)
        propagate = self.prior == "propagated"
        for _ in range(repeats):
            _step(*model, propagate, self._belief, self._state_prior, self.stay)
        self.top = int(np.argmax(self._belief))
        self.rows += repeats
        return self.belief.copy()


def _online_divisor(v, p, next_step, vshape, pshape) -> np.ndarray:
    """Check one online row's shapes and values; the divisor row (``vsg`` itself when none)."""
    if v.shape != vshape or p.shape != pshape:
        raise ValueError(f"vsg must be {vshape} and progress {pshape}; got {v.shape}, {p.shape}")
    div = v if next_step is None else np.asarray(next_step, dtype=np.float64)
    if div.shape != v.shape:
        raise ValueError(f"next_step must have the shape of vsg {v.shape}, got {div.shape}")
    if next_step is not None and not (np.isfinite(div).all() and (div > 0).all()):
        raise ValueError("next_step contains NaN, infinite or negative values")
    for name, x in (("vsg", v), ("progress", p)):
        if not (np.isfinite(x).all() and (x >= 0).all()):
            raise ValueError(f"{name} contains NaN, infinite or negative values")
    return div


@numba.njit(cache=True, nogil=True)
def _predict(static, weights, belief, stay):  # pragma: no cover - compiled
    """``belief @ A`` with ``A`` the row-normalised ``static * weights`` mixed with ``stay``.

    At ``stay`` 0 the mixing is skipped, so the arithmetic is the paper filter's, operation
    for operation.
    """
    n = belief.shape[0]
    scale = np.empty(n)
    pred = np.zeros(n)
    for j in range(n):  # row normaliser of the weighted transition matrix
        s = 0.0
        for i in range(n):
            s += static[j, i] * weights[i]
        scale[j] = 0.0 if s == 0.0 else 1.0 / s
    for j in range(n):
        bj = belief[j] * scale[j]
        for i in range(n):
            pred[i] += bj * (static[j, i] * weights[i])
    if stay != 0.0:
        move = 1.0 - stay
        for i in range(n):
            pred[i] = move * pred[i] + stay * belief[i]
    return pred


@numba.njit(cache=True, nogil=True)
def _update(pred, obs, divisor, use_divisor, belief):  # pragma: no cover - compiled
    """``belief = pred * obs / divisor`` normalised (0 where the divisor is 0; a zero sum stays
    zero); ``use_divisor`` False: no division."""
    n = pred.shape[0]
    post = np.empty(n)
    total = 0.0
    for i in range(n):
        v = pred[i] * obs[i]
        if use_divisor:
            v = 0.0 if divisor[i] == 0.0 else v / divisor[i]
        post[i] = v
        total += v
    for i in range(n):
        belief[i] = post[i] / total if total != 0.0 else post[i]


@numba.njit(cache=True, nogil=True)
def _step(
    static, weights, obs, divisor, use_divisor, propagate, belief, state_prior, stay
):  # pragma: no cover - compiled
    """One predict + update in place on ``belief`` (and ``state_prior`` when propagating: the
    prior pushed through the same transition is the divisor)."""
    pred = _predict(static, weights, belief, stay)
    if propagate:
        state_prior[:] = _predict(static, weights, state_prior, stay)
        _update(pred, obs, state_prior, True, belief)
    else:
        _update(pred, obs, divisor, use_divisor, belief)


@numba.njit(cache=True, nogil=True)
def _forward(static, weights, obs, divisor, propagate, stay):  # pragma: no cover - compiled
    """Filter recursion over rows; see :func:`run_filter` for the semantics."""
    t_len, n = obs.shape
    out = np.empty((t_len, n))
    belief = np.full(n, 1.0 / n)
    state_prior = np.full(n, 1.0 / n)
    use_divisor = divisor.shape[0] > 0
    for t in range(t_len):
        div = divisor[t] if use_divisor else obs[t]
        _step(static, weights[t], obs[t], div, use_divisor, propagate, belief, state_prior, stay)
        out[t] = belief
    return out


#: How far above 1 an input probability may be from float rounding.
PROBABILITY_TOL = 1e-5


def _check_array(name: str, x, ndim: int) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {a.shape}")
    if not a.size:
        return a
    low, high = a.min(), a.max()  # NaN propagates into both, an infinity into one of them
    if not (np.isfinite(low) and np.isfinite(high)):
        raise ValueError(f"{name} contains NaN or infinite values")
    if low < 0:
        raise ValueError(f"{name} contains negative values")
    if high > 1 + PROBABILITY_TOL:
        where = tuple(int(i) for i in np.unravel_index(int(a.argmax()), a.shape))
        raise ValueError(
            f"{name} holds values above 1 (max {a.max():.6g} at {where}): probabilities must lie "
            f"in [0, 1] (tolerance {PROBABILITY_TOL:g})"
        )
    return a


def _validate(vsg, progress, dependency, next_step):
    v = _check_array("vsg", vsg, 2)
    p = _check_array("progress", progress, 3)
    d = _check_array("dependency", dependency, 2)
    t, k1 = v.shape
    k = k1 - 1
    if k < 1:
        raise ValueError(f"vsg must have K+1 >= 2 columns (steps then none), got shape {v.shape}")
    if d.shape != (k, k):
        raise ValueError(f"dependency must be (K, K) = ({k}, {k}) for vsg {v.shape}, got {d.shape}")
    if p.shape != (t, k, 10):
        raise ValueError(f"progress must be (T, K, 10) = ({t}, {k}, 10), got {p.shape}")
    n = None
    if next_step is not None:
        n = _check_array("next_step", next_step, 2)
        if n.shape != v.shape:
            raise ValueError(f"next_step must have the shape of vsg {v.shape}, got {n.shape}")
        if (n == 0).any():
            raise ValueError("next_step contains zeros; the prior it defines is divided out")
    return v, p, d, n


def _check_options(
    transition, prior, stepping, precision, next_step, smoothing_lag_s
) -> TransitionSpec:
    """Refuse unknown variants and combinations :func:`run_filter` does not run; the spec of
    ``transition``."""
    if prior not in PRIORS:
        raise ValueError(f"prior must be one of {PRIORS}, got {prior!r}")
    if stepping not in STEPPINGS:
        raise ValueError(f"stepping must be one of {STEPPINGS}, got {stepping!r}")
    spec = transition_spec(transition)
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if (prior == "next_step") != (next_step is not None):
        raise ValueError("next_step scores are required with prior='next_step', and only then")
    if smoothing_lag_s is not None and (
        isinstance(smoothing_lag_s, bool)
        or int(smoothing_lag_s) != smoothing_lag_s
        or smoothing_lag_s < 0
    ):
        raise ValueError(
            f"smoothing_lag_s must be a whole number of seconds >= 0 or None (inf), "
            f"got {smoothing_lag_s!r}"
        )
    if smoothing_lag_s != 0 and precision == PUBLISHED_PRECISION:
        raise ValueError(
            f"smoothing (smoothing_lag_s={smoothing_lag_s!r}) runs in float64 only, not "
            f"in precision {PUBLISHED_PRECISION!r}"
        )
    return spec


def _at_stepping(v, p, n, lag, stepping, segment_duration):
    """The rows the filter steps on (``stepping="segment"``: each segment's first row) and the
    smoothing lag in those rows."""
    if stepping != "segment":
        return v, p, n, lag
    t_len = v.shape[0]
    if segment_duration < 1 or t_len % segment_duration:
        raise ValueError(
            f"stepping='segment' needs T ({t_len}) to be a multiple of segment_duration "
            f"({segment_duration})"
        )
    if lag is not None and lag % segment_duration:
        raise ValueError(
            f"with stepping='segment', smoothing_lag_s ({lag}) must be a multiple of "
            f"segment_duration ({segment_duration})"
        )
    rows = slice(0, t_len, segment_duration)
    n = None if n is None else n[rows]
    return v[rows], p[rows], n, None if lag is None else lag // segment_duration


def _filter64(v, p, d, n, spec, propagate, lag, stay) -> np.ndarray:
    """The float64 filter (and its fixed-lag smoother with ``lag`` rows) on checked inputs."""
    model = transition_model(d, p, spec, stay)
    static, weights = model.static, model.weights
    divisor = n if n is not None else np.empty((0, v.shape[1]))
    out = _forward(static, weights, v, divisor, propagate, model.stay)
    if lag != 0:
        lik = likelihoods(static, weights, v, n, propagate=propagate, stay=model.stay)
        out = smooth(out, static, weights, lik, lag, stay=model.stay)
    return out


def run_filter(
    vsg: np.ndarray,
    progress: np.ndarray,
    dependency: np.ndarray,
    *,
    transition: Transition | TransitionSpec = "both",
    prior: Prior = "uniform",
    next_step: np.ndarray | None = None,
    stepping: Stepping = "second",
    segment_duration: int = SEGMENT_DURATION,
    precision: Precision = "float64",
    smoothing_lag_s: int | None = 0,
    stay: float = 0.0,
) -> np.ndarray:
    """Run BaGLM's Bayesian filter (or its fixed-lag smoother) over one video: beliefs (T, K+1).

    Parameters
    ----------
    vsg : (T, K+1) array
        Step-grounding scores per row, none last (raw LMM probabilities need no renormalising:
        the posterior is normalised at every row).
    progress : (T, K, 10) array
        Digit probabilities 0..9 per step; expected progress is ``sum_j j p_j / 9``.
    dependency : (K, K) array
        ``D[i, j] = P(step j is a prerequisite of step i)``.
    transition : {"static", "readiness", "validity", "both"} or TransitionSpec
        Which of readiness and validity weight the static transition matrix (the spec's flags,
        :data:`~baglm_nb.inputs.variants.TRANSITION_SPECS`).
    prior : {"uniform", "propagated", "next_step"}
        The state prior divided out in the update: uniform (published), the uniform prior
        pushed through the transition model at every row, or the LMM's next-step scores
        (``next_step``, shaped like ``vsg``).
    stepping : {"second", "segment"}
        ``"second"`` steps once per row as the published code does; ``"segment"`` takes the
        first row of each ``segment_duration``-row segment, steps once per segment as the
        paper's equations do, and repeats each segment's belief over its rows.
    segment_duration : int
        Rows per segment, used with ``stepping="segment"``.
    precision : {"float64", "float32-published"}
        ``"float64"`` (default), or the published code's torch float32 arithmetic and order of
        operations, whose saturated beliefs (exactly 1.0) tie on several rows so that the
        argmax takes the first of them, as in the published code; inputs are rounded to
        float32 (:mod:`baglm_nb.core.published_numerics`).
    smoothing_lag_s : int or None, default 0
        Seconds of look-ahead ``L``: the belief of second ``t`` given the observations up to
        second ``t + L`` (:mod:`baglm_nb.core.smoothing`: forward-backward with the filter's
        own transitions). 0 is the filter, None the offline smoother (``L = inf``). With
        ``stepping="segment"`` it must be a multiple of ``segment_duration``. float64 only.
    stay : float in [0, 1), default 0
        Beyond the paper: each transition row mixed with staying, ``T'_t = (1 - stay) T_t +
        stay I``, once per filter step (the propagated prior and the smoother use it too). 0 is
        the paper's filter, operation for operation (the mixing is skipped). float64 only.

    Returns
    -------
    (T, K+1) array of posterior beliefs, float64 (float32 with ``"float32-published"``); each
    row sums to 1 (or is zero if every state had zero likelihood).
    """
    spec = _check_options(transition, prior, stepping, precision, next_step, smoothing_lag_s)
    stay = check_stay(stay, precision)
    v, p, d, n = _validate(vsg, progress, dependency, next_step)
    v, p, n, lag = _at_stepping(v, p, n, smoothing_lag_s, stepping, segment_duration)
    propagate = prior == "propagated"
    if precision == PUBLISHED_PRECISION:
        out = forward32(v, p, d, transition=spec, next_step=n, propagate=propagate)
    else:
        out = _filter64(v, p, d, n, spec, propagate, lag, stay)
    return grid.per_second(out, segment_duration) if stepping == "segment" else out
