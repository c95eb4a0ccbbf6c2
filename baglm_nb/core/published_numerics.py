"""The filter in the published code's float32 arithmetic (the ``float32-published`` precision).

The authors' ``bayes_filter.py`` runs in torch **float32**. On confident observations its belief
reaches exactly 1.0 at several rows of the same step, and the per-(video, step) argmax takes the
first of them; a float64 filter separates those rows and can pick a later one. This module
reproduces the float32 computation: every intermediate is float32, in the order of operations
of reference-protocol §5.2-5.3, written the way torch evaluates it on the CPU:

- static matrix: ``M = D.T``; columns of steps whose row of D sums to 0 set to 1 (before the
  diagonal); diagonal 1; none row and column of ones; ``M / M.sum(1)`` applied twice;
- per row t: ``e = (P[t] * arange(10)).sum(-1) / 9``; ``mono = max(mono, e)``;
  ``r = (D * mono).sum(1) / D.sum(1)`` (1 where the sum is 0);
  ``v = (D * (1 - mono)[:, None]).sum(0) / D.sum(0)`` (1 where 0); step columns of the static
  matrix times ``r * v`` (none column unscaled); ``Tt / Tt.sum(1)`` (zero rows stay 0);
  ``prior = belief @ Tt``; ``post = prior * V[t]``; ``belief = post / post.sum()``
  (left as is when the sum is 0); the initial belief is ``float32(1 / (K+1))``.

Sums follow torch's CPU reduction order for float32 (``aten/src/ATen/native/cpu/SumKernel.cpp``:
four interleaved accumulators, vectors of :data:`TORCH_SUM_LANES` floats, a scalar tail added
before the lane partials), so a normalised belief is exactly 1.0 on the rows where torch's is;
the vector-matrix product ``belief @ Tt`` accumulates over ``j`` in order, one
rounding per product and per sum, as torch's CPU matmul does for one row. Ties in the argmax
then fall on the same rows as in the published code (checked against a literal torch version in
``tests/test_published_numerics.py``).

Exports :data:`TORCH_SUM_LANES`, :func:`static_transition32` and :func:`forward32`.
"""

from __future__ import annotations

import numba
import numpy as np

from baglm_nb.inputs.variants import TransitionSpec, transition_spec

__all__ = ["TORCH_SUM_LANES", "forward32", "static_transition32"]


TORCH_SUM_LANES = 8
"""float32 lanes of torch's CPU sum kernel, at every CPU capability.

torch's ``REGISTER_DISPATCH`` registers no AVX-512 build of a kernel unless the kernel asks for
one (``ALSO_REGISTER_AVX512_DISPATCH``), and the sum kernel does not: an AVX-512 CPU runs its
AVX2 build (8 floats a vector), and the default build's vectors are 32 bytes too.
``tests/test_published_numerics.py`` checks the emulated sums against torch's bit for bit under
``ATEN_CPU_CAPABILITY`` = ``default``, ``avx2`` and ``avx512``.
"""


@numba.njit(cache=True, nogil=True)
def _ceil_log2(x):  # pragma: no cover - compiled
    if x <= 2:
        return 1
    n, v = 0, x - 1
    while v > 0:
        v >>= 1
        n += 1
    return n


@numba.njit(cache=True, nogil=True)
def _cascade(x, start, stride, size):  # pragma: no cover - compiled
    """torch's ``multi_row_sum`` for one column: ``size`` values ``x[start + i * stride]``.

    Blocks of ``2**power`` values go up a ladder of four accumulators (pairwise-like); fewer
    values than one block are a plain running sum.
    """
    power = max(4, _ceil_log2(size) // 4)
    step = 1 << power
    a0 = np.float32(0.0)
    if size < step:
        for i in range(size):
            a0 += x[start + i * stride]
        return a0
    mask = step - 1
    a1 = np.float32(0.0)
    a2 = np.float32(0.0)
    a3 = np.float32(0.0)
    i = 0
    while i + step <= size:
        for _ in range(step):
            a0 += x[start + i * stride]
            i += 1
        a1 += a0
        a0 = np.float32(0.0)
        if (i & (mask << power)) == 0:
            a2 += a1
            a1 = np.float32(0.0)
            if (i & (mask << (2 * power))) == 0:
                a3 += a2
                a2 = np.float32(0.0)
    while i < size:
        a0 += x[start + i * stride]
        i += 1
    a0 += a1
    a0 += a2
    a0 += a3
    return a0


@numba.njit(cache=True, nogil=True)
def _row_sum(x, start, stride, size):  # pragma: no cover - compiled
    """torch's ``row_sum``: four interleaved partial sums, the tail into the first."""
    ilp = size // 4
    if ilp >= 16:  # long rows: each partial sum is a cascade
        p0 = _cascade(x, start, 4 * stride, ilp)
        p1 = _cascade(x, start + stride, 4 * stride, ilp)
        p2 = _cascade(x, start + 2 * stride, 4 * stride, ilp)
        p3 = _cascade(x, start + 3 * stride, 4 * stride, ilp)
    else:  # the same, written out: short rows are a plain running sum per partial
        p0 = p1 = p2 = p3 = np.float32(0.0)
        for i in range(ilp):
            base = start + 4 * i * stride
            p0 += x[base]
            p1 += x[base + stride]
            p2 += x[base + 2 * stride]
            p3 += x[base + 3 * stride]
    for i in range(ilp * 4, size):
        p0 += x[start + i * stride]
    p0 += p1
    p0 += p2
    p0 += p3
    return p0


@numba.njit(cache=True, nogil=True)
def _inner_sum(x, start, n, lanes):  # pragma: no cover - compiled
    """``x[start:start + n].sum()`` of contiguous float32 values, in torch's CPU order."""
    if n < lanes:
        return _row_sum(x, start, 1, n)
    vectors = n // lanes
    acc = np.float32(0.0)
    for k in range(vectors * lanes, n):
        acc += x[start + k]
    ilp = vectors // 4
    for lane in range(lanes):
        if ilp >= 16:
            acc += _row_sum(x, start + lane, lanes, vectors)
            continue
        p0 = p1 = p2 = p3 = np.float32(0.0)  # _row_sum of this lane, written out
        for i in range(ilp):
            base = start + lane + 4 * i * lanes
            p0 += x[base]
            p1 += x[base + lanes]
            p2 += x[base + 2 * lanes]
            p3 += x[base + 3 * lanes]
        for i in range(ilp * 4, vectors):
            p0 += x[start + lane + i * lanes]
        p0 += p1
        p0 += p2
        p0 += p3
        acc += p0
    return acc


@numba.njit(cache=True, nogil=True)
def _column_sum(x, rows, cols, c, lanes):  # pragma: no cover - compiled
    """Column ``c`` of ``x.reshape(rows, cols).sum(0)`` (flat, row-major), in torch's order."""
    if cols == 1:  # one column is contiguous: torch sums it as a row
        return _inner_sum(x, 0, rows, lanes)
    group = 4 * lanes if cols >= lanes else 4
    if c < (cols // group) * group:
        return _cascade(x, c, cols, rows)
    return _row_sum(x, c, cols, rows)


@numba.njit(cache=True, nogil=True)
def _normalise_rows(m, buf, lanes):  # pragma: no cover - compiled
    """``m / m.sum(1, keepdim=True)`` in place (rows summing to 0 stay as they are)."""
    n = m.shape[0]
    for j in range(n):
        for i in range(n):
            buf[i] = m[j, i]
        s = _inner_sum(buf, 0, n, lanes)
        if s != 0:
            for i in range(n):
                m[j, i] = m[j, i] / s


@numba.njit(cache=True, nogil=True)
def _static32(dep, lanes):  # pragma: no cover - compiled
    k = dep.shape[0]
    flat = dep.ravel()
    m = np.ones((k + 1, k + 1), np.float32)
    for i in range(k):
        for j in range(k):
            m[j, i] = dep[i, j]
    for i in range(k):
        if _inner_sum(flat, i * k, k, lanes) == 0:
            for j in range(k):
                m[j, i] = 1
    for i in range(k):
        m[i, i] = 1
    buf = np.empty(k + 1, np.float32)
    _normalise_rows(m, buf, lanes)
    _normalise_rows(m, buf, lanes)  # the published code normalises twice
    return m


def static_transition32(dependency: np.ndarray, *, lanes: int | None = None) -> np.ndarray:
    """The static (K+1, K+1) float32 transition matrix of reference-protocol §5.2, none last.

    Parameters
    ----------
    dependency : (K, K) array
        ``D[i, j] = P(step j is a prerequisite of step i)``, rounded to float32.
    lanes : int, optional
        Vector width of the emulated sums (default :data:`TORCH_SUM_LANES`).

    Returns
    -------
    numpy.ndarray
        float32, rows normalised twice as the published code does.
    """
    lanes = TORCH_SUM_LANES if lanes is None else lanes
    return _static32(np.ascontiguousarray(dependency, dtype=np.float32), lanes)


@numba.njit(cache=True, nogil=True)
def _weights(
    dep, row_sum, col_sum, mono, use_readiness, use_validity, prod, w, lanes
):  # pragma: no cover - compiled
    """Destination-column weights ``r * v`` (or one of them, as the flags say) of the step
    columns into ``w``: :func:`baglm_nb.core.filtering.transition_weights` in torch's float32
    order."""
    k = dep.shape[0]
    r = np.ones(k, np.float32)
    v = np.ones(k, np.float32)
    if use_readiness:
        for i in range(k):
            for j in range(k):
                prod[i * k + j] = dep[i, j] * mono[j]
            if row_sum[i] != 0:
                r[i] = _inner_sum(prod, i * k, k, lanes) / row_sum[i]
    if use_validity:
        for j in range(k):
            rest = np.float32(1.0) - mono[j]
            for i in range(k):
                prod[j * k + i] = dep[j, i] * rest
        for i in range(k):
            if col_sum[i] != 0:
                v[i] = _column_sum(prod, k, k, i, lanes) / col_sum[i]
    for i in range(k):
        if use_readiness and use_validity:
            w[i] = r[i] * v[i]
        elif use_readiness:
            w[i] = r[i]
        elif use_validity:
            w[i] = v[i]


@numba.njit(cache=True, nogil=True)
def _transition(static, w, tt, buf, lanes):  # pragma: no cover - compiled
    """``tt = static * w`` with its rows normalised (the weighted transition of this row)."""
    n = w.shape[0]
    for j in range(n):
        for i in range(n):
            buf[i] = static[j, i] * w[i]
        s = _inner_sum(buf, 0, n, lanes)
        for i in range(n):
            tt[j, i] = buf[i] / s if s != 0 else buf[i]


@numba.njit(cache=True, nogil=True)
def _predict(belief, tt, out):  # pragma: no cover - compiled
    """``out = belief @ tt``, accumulated over ``j`` in order as torch's CPU matmul does."""
    n = belief.shape[0]
    for i in range(n):
        out[i] = 0
    for j in range(n):
        b = belief[j]
        for i in range(n):
            out[i] += b * tt[j, i]


@numba.njit(cache=True, nogil=True)
def _forward32(
    static, dep, use_readiness, use_validity, obs, prog, divisor, propagate, lanes
):  # pragma: no cover - compiled
    """The float32 filter over rows; the transition's flags as :func:`_weights` takes them."""
    weighted = use_readiness or use_validity
    t_len, n = obs.shape
    k = n - 1
    flat = dep.ravel()
    row_sum = np.empty(k, np.float32)
    col_sum = np.empty(k, np.float32)
    for i in range(k):
        row_sum[i] = _inner_sum(flat, i * k, k, lanes)
        col_sum[i] = _column_sum(flat, k, k, i, lanes)
    out = np.empty((t_len, n), np.float32)
    belief = np.full(n, np.float32(1.0 / n), np.float32)
    state_prior = belief.copy()
    mono = np.zeros(k, np.float32)
    w = np.ones(n, np.float32)
    prod = np.empty(k * k, np.float32)
    digits = np.empty(10, np.float32)
    tt = np.empty((n, n), np.float32)
    buf = np.empty(n, np.float32)
    prior = np.empty(n, np.float32)
    nxt = np.empty(n, np.float32)
    use_divisor = divisor.shape[0] > 0
    for t in range(t_len):
        changed = t == 0
        for s in range(k):
            for j in range(10):
                digits[j] = prog[t, s, j] * np.float32(j)
            e = _inner_sum(digits, 0, 10, lanes) / np.float32(9.0)
            if e > mono[s]:
                mono[s] = e
                changed = changed or weighted
        if changed:  # the weights depend on the running max only: else the same Tt again
            _weights(dep, row_sum, col_sum, mono, use_readiness, use_validity, prod, w, lanes)
            _transition(static, w, tt, buf, lanes)
        _predict(belief, tt, prior)
        for i in range(n):
            prior[i] = prior[i] * obs[t, i]
        if propagate:
            _predict(state_prior, tt, nxt)
            for i in range(n):
                state_prior[i] = nxt[i]
                prior[i] = np.float32(0.0) if nxt[i] == 0 else prior[i] / nxt[i]
        elif use_divisor:
            for i in range(n):
                prior[i] = prior[i] / divisor[t, i]
        total = _inner_sum(prior, 0, n, lanes)
        for i in range(n):
            belief[i] = prior[i] / total if total != 0 else prior[i]
            out[t, i] = belief[i]
    return out


def forward32(
    vsg: np.ndarray,
    progress: np.ndarray,
    dependency: np.ndarray,
    *,
    transition: str | TransitionSpec = "both",
    next_step: np.ndarray | None = None,
    propagate: bool = False,
    lanes: int | None = None,
) -> np.ndarray:
    """Beliefs (T, K+1) in the published float32 arithmetic (module docstring).

    Parameters
    ----------
    vsg : (T, K+1) array
        Observation rows, none last; rounded to float32 (the published files are float32).
    progress : (T, K, 10) array
        Digit probabilities per step.
    dependency : (K, K) array
        The dependency matrix D.
    transition : {"static", "readiness", "validity", "both"} or TransitionSpec
        Which of readiness and validity scale the step columns (the spec's flags).
    next_step : (T, K+1) array, optional
        Scores of the state prior divided out in the update (``prior="next_step"``).
    propagate : bool
        Divide out the uniform prior pushed through the transitions (``prior="propagated"``).
    lanes : int, optional
        Vector width of the emulated sums (default :data:`TORCH_SUM_LANES`).

    Returns
    -------
    numpy.ndarray
        float32 (T, K+1) beliefs; ties are exact, so ``argmax`` picks the published row.
    """
    spec = transition_spec(transition)
    f32 = np.float32
    dep = np.ascontiguousarray(dependency, dtype=f32)
    obs = np.ascontiguousarray(vsg, dtype=f32)
    prog = np.ascontiguousarray(progress, dtype=f32)
    div = np.empty((0, obs.shape[1]), f32) if next_step is None else next_step
    div = np.ascontiguousarray(div, dtype=f32)
    lanes = TORCH_SUM_LANES if lanes is None else lanes
    if lanes not in (8, 16):
        raise ValueError(f"lanes must be 8 or 16, got {lanes!r}")
    static = _static32(dep, lanes)
    flags = (spec.uses_readiness, spec.uses_validity)
    return _forward32(static, dep, *flags, obs, prog, div, propagate, lanes)
