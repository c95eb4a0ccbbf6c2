"""The BaGLM Bayesian filter and its ablation variants (pure numpy + a numba kernel).

Axis conventions, used everywhere in this module:

- ``vsg``: (T, K+1) observation scores, columns = K steps in list order then ``none`` last;
- ``progress``: (T, K, 10) probabilities of the digits 0..9 per step;
- ``dependency``: (K, K), ``D[i, j] = P(step j is a prerequisite of step i)`` (row = target);
- beliefs: (T, K+1) float64 (float32 with ``precision="float32-published"``), none last.

The published implementation (reference-protocol §5.2-5.3) steps once per *second row*,
applying each 2-s segment's observation twice; the paper's equations step once per segment.
Both are available through ``stepping``.

Two precisions: ``"float64"`` (the default) and ``"float32-published"``, the published code's
torch float32 arithmetic and order of operations (:mod:`baglm_nb.core.published_numerics`). On
confident observations float32 beliefs saturate at exactly 1.0 on several rows of a step and the
argmax takes the first of them, as the published code does; float64 separates those rows.
"""

from __future__ import annotations

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
    WITH_READINESS,
    WITH_VALIDITY,
    Precision,
    Prior,
    Stepping,
    Transition,
)

__all__ = [
    "PRECISIONS",
    "PRIORS",
    "PUBLISHED_PRECISION",
    "STEPPINGS",
    "TRANSITIONS",
    "FilterState",
    "column_weights",
    "expected_progress",
    "normalize",
    "readiness",
    "check_stay",
    "run_filter",
    "static_transition",
    "validity",
    "weights_from_done",
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


def weights_from_done(
    dependency: np.ndarray, done: np.ndarray, transition: Transition = "both"
) -> np.ndarray:
    """Destination-column weights (T, K+1) from the running-max progress ``done`` (T, K).

    Step columns get ``r * v`` (or one of them, or 1 for ``static``); the none column keeps
    weight 1.
    """
    if transition not in TRANSITIONS:
        raise ValueError(f"transition must be one of {TRANSITIONS}, got {transition!r}")
    t, k = done.shape
    w = np.ones((t, k + 1))
    if transition in WITH_READINESS:
        w[:, :k] *= readiness(dependency, done)
    if transition in WITH_VALIDITY:
        w[:, :k] *= validity(dependency, done)
    return w


def column_weights(
    dependency: np.ndarray, progress: np.ndarray, transition: Transition = "both"
) -> np.ndarray:
    """Per-row weights of the transition matrix's destination columns, shape (T, K+1).

    Computed from the running maximum of the expected progress over rows ``tau <= t``; see
    :func:`weights_from_done`.
    """
    done = np.maximum.accumulate(expected_progress(progress), axis=0)
    return weights_from_done(dependency, done, transition)


class FilterState:
    """The filter's O(K) state for online use: one :meth:`step` per observation row.

    Stepping a sequence of rows one at a time gives :func:`run_filter`'s beliefs on the same
    rows (same kernel, same arithmetic); ``stay`` as in :func:`run_filter`.
    """

    def __init__(
        self,
        dependency: np.ndarray,
        *,
        transition: Transition = "both",
        prior: Prior = "uniform",
        stay: float = 0.0,
    ) -> None:
        d = _check_array("dependency", dependency, 2)
        if d.shape[0] != d.shape[1]:
            raise ValueError(f"dependency must be square (K, K), got {d.shape}")
        if transition not in TRANSITIONS:
            raise ValueError(f"transition must be one of {TRANSITIONS}, got {transition!r}")
        if prior not in PRIORS:
            raise ValueError(f"prior must be one of {PRIORS}, got {prior!r}")
        self.dependency, self.transition, self.prior = d, transition, prior
        self.stay = check_stay(stay)
        self.static = static_transition(d)
        self.num_steps = d.shape[0]
        k = d.shape[0]
        self._depx = np.zeros((k + 1, k + 1))
        self._depx[:k, :k] = d
        self._depx[:k, k] = d.sum(axis=1)
        self._depx[k, :k] = d.sum(axis=0)
        self._flags = 4 * _MODES[transition] + (prior == "propagated")
        self._vshape, self._pshape = (k + 1,), (k, 10)
        self.reset()

    def reset(self) -> None:
        """Back to the initial state: uniform belief, no progress seen."""
        n = self.num_steps + 1
        # belief, state prior, running-max progress (+1 pad), the last step's column weights
        self._state = np.zeros((4, n))
        self._state[:2] = 1.0 / n
        self._state[3] = 1.0
        self.top = 0
        self.rows = 0

    @property
    def belief(self) -> np.ndarray:
        """The current belief (K+1,), none last (a view: copy it to keep it)."""
        return self._state[0]

    @property
    def done(self) -> np.ndarray:
        """Running maximum of each step's expected progress (K,) (a view)."""
        return self._state[2, :-1]

    @property
    def weights(self) -> np.ndarray:
        """The destination-column weights (K+1,) of the last :meth:`step` (a view)."""
        return self._state[3]

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
        if v.shape != self._vshape or p.shape != self._pshape:
            raise ValueError(
                f"vsg must be {self._vshape} and progress {self._pshape}; got {v.shape}, {p.shape}"
            )
        flags = self._flags
        div = v
        if next_step is not None:
            div = np.asarray(next_step, dtype=np.float64)
            if div.shape != v.shape:
                raise ValueError(f"next_step must have the shape of vsg {v.shape}, got {div.shape}")
            flags += 2
        if (self.prior == "next_step") != (next_step is not None):
            raise ValueError("next_step scores are required with prior='next_step', and only then")
        top = _online_rows(
            self.static, self._depx, flags, repeats, v, p, div, self._state, self.stay
        )
        if top < 0:
            bad = "vsg" if not (np.isfinite(v).all() and (v >= 0).all()) else "progress"
            if next_step is not None and not (np.isfinite(div).all() and (div > 0).all()):
                bad = "next_step"
            raise ValueError(f"{bad} contains NaN, infinite or negative values")
        self.top = top
        self.rows += repeats
        return self.belief.copy()


_MODES = {t: i for i, t in enumerate(TRANSITIONS)}


@numba.njit(cache=True, nogil=True)
def _online_rows(static, depx, flags, repeats, obs, prog, div, state, stay):  # pragma: no cover
    """Running-max progress, readiness/validity weights and ``repeats`` filter steps.

    ``depx`` packs D (K, K) with its row sums in column K and column sums in row K; ``state``
    rows are belief, state prior, running-max progress and the weights used (written here);
    ``flags`` = 4 * mode + 2 * use_div + propagate; ``stay`` as in :func:`_step`. Returns the
    most probable state, or -1 for invalid input.
    """
    k = state.shape[1] - 1
    mode, use_div, propagate = flags // 4, (flags // 2) % 2 == 1, flags % 2 == 1
    belief, state_prior, done = state[0], state[1], state[2]
    for i in range(k + 1):
        if not (obs[i] >= 0.0 and obs[i] < np.inf):
            return -1
        if use_div and not (div[i] > 0.0 and div[i] < np.inf):
            return -1
    for i in range(k):
        e = 0.0
        for j in range(10):
            x = prog[i, j]
            if not (x >= 0.0 and x < np.inf):
                return -1
            e += x * (j / 9.0)
        if e > done[i]:
            done[i] = e
    weights = state[3]
    weights[:] = 1.0
    if mode == 1 or mode == 3:
        for i in range(k):
            if depx[i, k] != 0.0:
                acc = 0.0
                for j in range(k):
                    acc += depx[i, j] * done[j]
                weights[i] *= acc / depx[i, k]
    if mode == 2 or mode == 3:
        for i in range(k):
            if depx[k, i] != 0.0:
                acc = 0.0
                for j in range(k):
                    acc += depx[j, i] * (1.0 - done[j])
                weights[i] *= acc / depx[k, i]
    for _ in range(repeats):
        _step(static, weights, obs, div, use_div, propagate, belief, state_prior, stay)
    top = 0
    for i in range(k + 1):
        if belief[i] > belief[top]:
            top = i
    return top


@numba.njit(cache=True, nogil=True)
def _step(
    static, weights, obs, divisor, use_divisor, propagate, belief, state_prior, stay
):  # pragma: no cover
    """One predict + update in place on ``belief`` (and ``state_prior`` when propagating).

    ``stay`` > 0 mixes each transition row with staying, ``(1 - stay) A + stay I``; at 0 the
    mixing is skipped, so the arithmetic is the paper filter's, operation for operation.
    """
    n = obs.shape[0]
    scale = np.empty(n)
    pred = np.zeros(n)
    nxt = np.zeros(n)
    for j in range(n):  # row normaliser of the weighted transition matrix
        s = 0.0
        for i in range(n):
            s += static[j, i] * weights[i]
        scale[j] = 0.0 if s == 0.0 else 1.0 / s
    for j in range(n):
        bj = belief[j] * scale[j]
        pj = state_prior[j] * scale[j]
        for i in range(n):
            tji = static[j, i] * weights[i]
            pred[i] += bj * tji
            nxt[i] += pj * tji
    if stay != 0.0:
        move = 1.0 - stay
        for i in range(n):
            pred[i] = move * pred[i] + stay * belief[i]
            nxt[i] = move * nxt[i] + stay * state_prior[i]
    total = 0.0
    for i in range(n):
        v = pred[i] * obs[i]
        if propagate:
            state_prior[i] = nxt[i]
            v = 0.0 if nxt[i] == 0.0 else v / nxt[i]
        elif use_divisor:
            v = v / divisor[i]
        pred[i] = v
        total += v
    for i in range(n):
        belief[i] = pred[i] / total if total != 0.0 else pred[i]


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
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    if (a < 0).any():
        raise ValueError(f"{name} contains negative values")
    if a.size and a.max() > 1 + PROBABILITY_TOL:
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


def _check_options(transition, prior, stepping, precision, next_step, smoothing_lag_s) -> None:
    """Refuse unknown variants and combinations :func:`run_filter` does not run."""
    if prior not in PRIORS:
        raise ValueError(f"prior must be one of {PRIORS}, got {prior!r}")
    if stepping not in STEPPINGS:
        raise ValueError(f"stepping must be one of {STEPPINGS}, got {stepping!r}")
    if transition not in TRANSITIONS:
        raise ValueError(f"transition must be one of {TRANSITIONS}, got {transition!r}")
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


def _segments_of(lag: int | None, segment_duration: int) -> int | None:
    """A smoothing lag in seconds as whole segments (``stepping="segment"``)."""
    if lag is not None and lag % segment_duration:
        raise ValueError(
            f"with stepping='segment', smoothing_lag_s ({lag}) must be a multiple of "
            f"segment_duration ({segment_duration})"
        )
    return None if lag is None else lag // segment_duration


def _filter64(v, p, d, n, transition, propagate, lag, stay) -> np.ndarray:
    """The float64 filter (and its fixed-lag smoother with ``lag`` rows) on checked inputs."""
    weights = column_weights(d, p, transition)
    static = static_transition(d)
    divisor = n if n is not None else np.empty((0, v.shape[1]))
    out = _forward(static, weights, v, divisor, propagate, stay)
    if lag != 0:
        lik = likelihoods(static, weights, v, n, propagate=propagate, stay=stay)
        out = smooth(out, static, weights, lik, lag, stay=stay)
    return out


def run_filter(
    vsg: np.ndarray,
    progress: np.ndarray,
    dependency: np.ndarray,
    *,
    transition: Transition = "both",
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
    transition : {"static", "readiness", "validity", "both"}
        Which of readiness and validity modulate the static transition matrix.
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
    _check_options(transition, prior, stepping, precision, next_step, smoothing_lag_s)
    stay = check_stay(stay, precision)
    v, p, d, n = _validate(vsg, progress, dependency, next_step)
    t_len, lag = v.shape[0], smoothing_lag_s
    if stepping == "segment":
        if segment_duration < 1 or t_len % segment_duration:
            raise ValueError(
                f"stepping='segment' needs T ({t_len}) to be a multiple of segment_duration "
                f"({segment_duration})"
            )
        lag = _segments_of(lag, segment_duration)
        rows = slice(0, t_len, segment_duration)
        v, p = v[rows], p[rows]
        n = None if n is None else n[rows]
    propagate = prior == "propagated"
    if precision == PUBLISHED_PRECISION:
        out = forward32(v, p, d, transition=transition, next_step=n, propagate=propagate)
    else:
        out = _filter64(v, p, d, n, transition, propagate, lag, stay)
    if stepping == "segment":
        out = grid.per_second(out, segment_duration)
    return out
