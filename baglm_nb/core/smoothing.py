"""Exact fixed-lag smoothing of BaGLM's filter: forward-backward with the filter's transitions.

BaGLM's transition into row ``t`` is the static matrix with its destination columns weighted
by ``w[t]`` (readiness x validity) and its rows normalised: ``A_t[j, i] = S[j, i] w_t[i] /
sum_m S[j, m] w_t[m]``. The weights come from the running maximum of the expected progress,
which the filter computes from the progress observations alone, so given the observations the
transitions are fixed: the filter is the forward pass of a hidden Markov model with known
time-varying transitions, and smoothing is its backward pass (Särkkä, *Bayesian Filtering and
Smoothing*, ch. 12).

With the filter's likelihood ``l_t`` (the VSG row, divided by the next-step prior or by the
propagated prior when the filter divides one out) and its beliefs ``alpha_t``, the backward
message is ``beta_{t|u} = A_{t+1} (l_{t+1} * A_{t+2} (l_{t+2} * ... A_u (l_u * 1)))`` and the
belief of row ``t`` given the observations up to row ``u`` is ``alpha_t * beta_{t|u}``,
normalised. The **fixed-lag** belief with lag ``L`` rows uses ``u = min(t + L, T - 1)``; ``L =
0`` is the filter itself and ``L = inf`` (``None``) the offline smoother. Each backward step is
normalised to sum 1 (the smoothed belief is normalised anyway); a row whose product is all
zero stays zero, as the filter's does.

With ``stay`` (beyond the paper, :func:`baglm_nb.core.filtering.run_filter`) every transition
is ``(1 - stay) A_t + stay I``, in the forward pass, the propagated prior and the backward
messages alike; 0 skips the mixing.

Smoothing runs in float64 only (the published float32 arithmetic is a filter property; a
smoother on top of it would not be the published code's either).

Exports :func:`likelihoods`, :func:`smooth` and :func:`backward_span` (the online smoother's
step, :class:`baglm_nb.core.online.FixedLagSmoother`).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["backward_span", "likelihoods", "smooth"]


@numba.njit(cache=True, nogil=True)
def _back_step(static, w, lik, beta, tmp, stay):  # pragma: no cover - compiled
    """``beta <- A(w) (lik * beta)``, normalised to sum 1, in place (``tmp``: scratch); with
    ``stay`` > 0, ``A`` is ``(1 - stay) A + stay I``."""
    n = beta.shape[0]
    kept = np.empty(n)
    if stay != 0.0:
        for i in range(n):
            kept[i] = stay * lik[i] * beta[i]
    for i in range(n):
        tmp[i] = w[i] * lik[i] * beta[i]
    total = 0.0
    for j in range(n):
        s = 0.0
        acc = 0.0
        for i in range(n):
            a = static[j, i]
            s += a * w[i]
            acc += a * tmp[i]
        b = 0.0 if s == 0.0 else acc / s
        if stay != 0.0:
            b = (1.0 - stay) * b + kept[j]
        beta[j] = b
        total += b
    if total > 0.0:
        for j in range(n):
            beta[j] /= total


@numba.njit(cache=True, nogil=True)
def _combine(alpha, beta, out):  # pragma: no cover - compiled
    """``out = alpha * beta`` normalised (left at zero when it sums to zero)."""
    total = 0.0
    for i in range(alpha.shape[0]):
        out[i] = alpha[i] * beta[i]
        total += out[i]
    if total != 0.0:
        for i in range(alpha.shape[0]):
            out[i] /= total


@numba.njit(cache=True, nogil=True)
def _smooth_rows(forward, static, weights, lik, lag, stay):  # pragma: no cover - compiled
    """Fixed-lag beliefs of every row (``lag < 0``: the offline smoother); see :func:`smooth`."""
    t_len, n = forward.shape
    out = np.zeros((t_len, n))
    beta = np.ones(n)
    tmp = np.empty(n)
    if lag < 0:
        for t in range(t_len - 1, -1, -1):
            if t < t_len - 1:
                _back_step(static, weights[t + 1], lik[t + 1], beta, tmp, stay)
            _combine(forward[t], beta, out[t])
        return out
    for t in range(t_len):
        beta[:] = 1.0
        for r in range(min(t + lag, t_len - 1), t, -1):
            _back_step(static, weights[r], lik[r], beta, tmp, stay)
        _combine(forward[t], beta, out[t])
    return out


@numba.njit(cache=True, nogil=True)
def _backward_span(static, weights, lik, repeats, alpha, stay):  # pragma: no cover - compiled
    """The smoothed belief of ``alpha``'s row given the blocks after it (see backward_span)."""
    n = alpha.shape[0]
    beta = np.ones(n)
    tmp = np.empty(n)
    for b in range(weights.shape[0] - 1, -1, -1):
        for _ in range(repeats[b]):
            _back_step(static, weights[b], lik[b], beta, tmp, stay)
    out = np.empty(n)
    _combine(alpha, beta, out)
    return out


@numba.njit(cache=True, nogil=True)
def _likelihoods(static, weights, obs, divisor, propagate, stay):  # pragma: no cover - compiled
    """Per-row likelihoods the filter multiplies its prediction by (see :func:`likelihoods`)."""
    t_len, n = obs.shape
    out = np.empty((t_len, n))
    use_divisor = divisor.shape[0] > 0
    prior = np.full(n, 1.0 / n)
    nxt = np.zeros(n)
    for t in range(t_len):
        if propagate:
            nxt[:] = 0.0
            for j in range(n):
                s = 0.0
                for i in range(n):
                    s += static[j, i] * weights[t, i]
                pj = 0.0 if s == 0.0 else prior[j] / s
                for i in range(n):
                    nxt[i] += pj * static[j, i] * weights[t, i]
            if stay != 0.0:
                for i in range(n):
                    nxt[i] = (1.0 - stay) * nxt[i] + stay * prior[i]
            for i in range(n):
                prior[i] = nxt[i]
                out[t, i] = 0.0 if nxt[i] == 0.0 else obs[t, i] / nxt[i]
        elif use_divisor:
            for i in range(n):
                out[t, i] = obs[t, i] / divisor[t, i]
        else:
            for i in range(n):
                out[t, i] = obs[t, i]
    return out


def likelihoods(
    static: np.ndarray,
    weights: np.ndarray,
    obs: np.ndarray,
    divisor: np.ndarray | None = None,
    *,
    propagate: bool = False,
    stay: float = 0.0,
) -> np.ndarray:
    """The likelihood ``l_t`` (T, K+1) of each row, as the filter's update uses it.

    The VSG row ``obs[t]`` itself (uniform prior), divided by ``divisor[t]`` (the next-step
    prior), or divided by the uniform prior pushed through the transitions up to row ``t``
    (``propagate``; zero where that prior is zero), pushed through transitions mixed with
    ``stay``.
    """
    div = np.empty((0, obs.shape[1])) if divisor is None else np.asarray(divisor, np.float64)
    obs = np.asarray(obs, np.float64)
    return _likelihoods(static, weights, obs, div, bool(propagate), float(stay))


def smooth(
    forward: np.ndarray,
    static: np.ndarray,
    weights: np.ndarray,
    lik: np.ndarray,
    lag_steps: int | None,
    *,
    stay: float = 0.0,
) -> np.ndarray:
    """Fixed-lag smoothed beliefs (T, K+1) from the filter's beliefs and its own transitions.

    Parameters
    ----------
    forward : (T, K+1) array
        The filter's beliefs ``alpha_t`` (float64).
    static : (K+1, K+1) array
        The static transition matrix (:func:`baglm_nb.core.filtering.static_transition`).
    weights : (T, K+1) array
        The destination-column weights of every row, as the filter used them.
    lik : (T, K+1) array
        The filter's likelihoods (:func:`likelihoods`).
    lag_steps : int or None
        Filter steps (rows of ``forward``: seconds with ``stepping="second"``, segments with
        ``"segment"``) of look-ahead ``L``: row ``t`` uses the observations up to row
        ``t + L``; 0 returns ``forward`` itself, None the offline (``L = inf``) smoother.
    stay : float, default 0
        The filter's stay (its transitions ``(1 - stay) A_t + stay I``).
    """
    lag = lag_steps
    if lag is not None and (int(lag) != lag or lag < 0):
        raise ValueError(f"lag_steps must be a whole number >= 0 or None (inf), got {lag!r}")
    if lag == 0:
        return forward
    f = np.ascontiguousarray(forward, dtype=np.float64)
    return _smooth_rows(f, static, weights, lik, -1 if lag is None else int(lag), float(stay))


def backward_span(
    alpha: np.ndarray,
    static: np.ndarray,
    weights: np.ndarray,
    lik: np.ndarray,
    repeats: np.ndarray,
    *,
    stay: float = 0.0,
) -> np.ndarray:
    """The belief of one row given the observation blocks that follow it (K+1,).

    ``alpha`` is the filter's belief at that row; block ``b`` of the (B, K+1) ``weights`` and
    ``lik`` is applied ``repeats[b]`` times (a segment's rows share its observation), the last
    block first. With no blocks this is ``alpha`` normalised. ``stay`` as in :func:`smooth`.
    """
    reps = np.asarray(repeats, np.int64)
    return _backward_span(static, weights, lik, reps, alpha, float(stay))
