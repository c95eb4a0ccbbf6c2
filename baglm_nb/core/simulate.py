"""A *simulated* observation source: seeded synthetic LMM scores built from the ground truth.

**This is not a real model.** No LMM weights are available on a CPU-only machine, so this module
draws what an LMM's step-grounding (VSG) and progress outputs could look like, from a small,
documented generative model conditioned on the annotations. Every output carries the label
``"simulated"`` (:data:`LABEL`); numbers computed from it must never be reported as a model's.

Generative model (per video, ``S`` segments of ``d = segment_duration`` seconds, ``K`` steps)
--------------------------------------------------------------------------------------------
1. **Segment truth.** ``T = video.num_rows(d, sampling_fps)`` and ``Y = ground_truth(video, T)``
   (the published per-second grid, rows ``floor(start)..ceil(end)`` inclusive). Segment ``s``
   covers rows ``[s*d, (s+1)*d)``. Its true state is the step column with the most marked rows
   in the segment; ties go to the **lowest column index**; ``K`` (none) when no row is marked.
2. **Fraction of completion.** With the segment centre ``c = (s + 1/2) d`` seconds and the true
   step's annotated interval ``[a, b]`` that contains ``c`` (else the nearest one; the first in
   annotation order on ties), ``f = clip((c - a) / (b - a), 0, 1)`` (a zero-length interval gives
   ``f = 1`` if ``c >= a`` else 0). ``f`` is NaN for none segments.
3. **VSG** (multiple choice over the K steps + none, none last). Logits
   ``z[s, i] = noise * eps[s, i] + bonus[s, i]`` with ``eps ~ N(0, 1)`` i.i.d.; the bonus is
   ``signal`` on the true step, ``confusion * signal`` on the steps adjacent to the true step in
   the video's ground-truth order (steps sorted by first annotated start; previous and next), and
   ``none_signal`` on the none column when the true state is none. ``vsg = softmax(z)`` per row,
   so the rows sum to 1 (a real LMM's raw gathered probabilities need not).
4. **Progress** (digits 0..9 per step). Every (segment, step) gets a discretised Gaussian
   ``p[j] ∝ exp(-(j - m)^2 / (2 w^2))`` over ``j = 0..9`` with width ``w = progress_width``
   (``w = 0``: all mass on the digit nearest ``m``, clipped to 0..9). For the segment's true step
   the centre is ``m = 9 f + progress_noise * u``, ``u ~ N(0, 1)``; for every other step (and
   every step of a none segment) it is ``m = 0 + progress_noise * v``, ``v ~ N(0, 1)`` i.i.d. per
   (segment, step): a step that is not on screen is read as "not occurring" (digit 0) with the
   same noise as a step that is (``off_step_progress = "noisy"``, the default). A real LMM's
   digit probabilities are a softmax over tokens, never a point mass, and the published filter
   keeps the running maximum of the expected progress, so this noise sets a floor under every
   step's readiness. ``off_step_progress = "zero"`` puts all mass on digit 0 instead (it reads
   every absent step like the ground-truth oracle does).
   Rows sum to 1 (a real LMM's raw digit probabilities need not).

Randomness: ``np.random.default_rng([seed, zlib.crc32(uid)])`` per video, drawing ``eps``
(S, K+1), then ``u`` (S,), then ``v`` (S, K), so a video's arrays do not depend on which other
videos are simulated, and the VSG rows do not depend on the progress model.

**Temporally correlated noise** (``noise_corr = r``, default 0): each of ``eps``, ``u`` and
``v`` is passed, along the segments, through the stationary AR(1) recursion
``x'[0] = x[0]``, ``x'[s] = r x'[s-1] + sqrt(1 - r^2) x[s]``
(:func:`~baglm_nb.core.correlated_noise.ar1`), so every draw keeps its N(0, 1) marginal while
the lag-1 autocorrelation across segments becomes ``r``: an error lasts about ``1 / (1 - r)``
segments. ``r = 0`` skips the recursion: the arrays are bit for bit those of the i.i.d. model.
:data:`ILLUSTRATIVE_NOISE_CORR` (0.8) is an illustrative value used by ``docs/alerts.md`` and
notebook 09.

The two twins (how long the LMM's mistakes last)
------------------------------------------------
The off-the-shelf R@1 cannot tell how long an error lasts; the paper's off-the-shelf HT-Step
localization mAP can (one-segment blips become many short false segments). Two parameter sets
are kept by name (:mod:`baglm_nb.core.twins`, :func:`twin_params`): ``iid`` (``noise_corr`` 0,
``signal`` fitted to the off-the-shelf R@1 alone) and ``pinned`` (``noise_corr``
:data:`~baglm_nb.core.twins.PINNED_NOISE_CORR`, fitted jointly with each dataset's ``signal``
to the off-the-shelf R@1 of all four datasets and the HT-Step mAP at tIoU 0.3 / 0.5 / 0.7:
:mod:`baglm_nb.analyses.twin_fit`, ``python -m baglm_nb calibrate --twin pinned``). BaGLM's
rows check both out of sample (``sim-check``); ``"simulated"`` gives the one with the smaller
error on BaGLM's R@1 gains (:data:`DEFAULT_TWIN`: ``pinned``).

With ``confusion = 0`` and a fixed seed, each (video, step) hit of the off-the-shelf R@1 is a
non-decreasing function of ``signal`` (the true rows' probability rises, every other row's falls),
so :func:`offline_recall` is monotone in ``signal`` and :func:`calibrate` can bisect, as long as
the probabilities stay below 1 in float64 (``signal`` up to about 30 with ``noise = 1``; beyond,
true rows tie at exactly 1.0, the earliest one wins and the recall falls).

Calibration (per dataset)
-------------------------
``signal`` is calibrated per dataset (``noise_corr``, across datasets, for the pinned twin).
:data:`CALIBRATED_SIGNAL` holds the i.i.d. twin's values that :func:`calibrate` finds (seed 0,
other parameters at their defaults, ``tol = 0.05``) so that the off-the-shelf R@1 matches the
paper's InternVL2.5-8B value (:func:`~baglm_nb.inputs.paper.paper_value` ``("off_the_shelf",
dataset)``; CrossTask: Avg. R@1); :data:`PINNED_SIGNAL` the same at :data:`PINNED_NOISE_CORR`.
``python -m baglm_nb calibrate`` prints them; :func:`default_params` gives :data:`DEFAULT_TWIN`'s,
used when ``params`` is None. The BaGLM rows stay an out-of-sample check.

The progress parameters (``progress_noise``, ``progress_width``) are **not** calibrated: the
off-the-shelf R@1 does not depend on them, and the paper reports no number that measures the
LMM's progress estimates alone (its oracle-progress rows are BaGLM rows). They stay at 1 digit,
a documented a-priori choice.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from tqdm.auto import tqdm

from baglm_nb.core.correlated_noise import ar1
from baglm_nb.core.evaluation import evaluate
from baglm_nb.core.progress_digits import digits
from baglm_nb.core.twins import (
    CALIBRATED_SIGNAL,
    DEFAULT_TWIN,
    IID,
    PINNED,
    PINNED_NOISE_CORR,
    PINNED_SIGNAL,
    TWINS,
    twin_values,
)
from baglm_nb.core.video_truth import neighbours, segment_truth
from baglm_nb.inputs import grid
from baglm_nb.inputs.datasets import Video, load_dataset
from baglm_nb.inputs.paper import paper_value
from baglm_nb.inputs.progress import bar_options
from baglm_nb.inputs.variants import OFF_STEP_PROGRESS, SAMPLING_FPS, SEGMENT_DURATION

__all__ = [
    "CALIBRATED_SIGNAL",
    "DEFAULT_TWIN",
    "IID",
    "ILLUSTRATIVE_NOISE_CORR",
    "LABEL",
    "PINNED",
    "PINNED_NOISE_CORR",
    "PINNED_SIGNAL",
    "TWINS",
    "Calibration",
    "SimulatedScores",
    "SignalSweep",
    "SimulationParams",
    "ar1",
    "calibrate",
    "default_params",
    "offline_recall",
    "per_second",
    "segment_truth",
    "simulate_dataset",
    "simulate_video",
    "simulate_vsg",
    "twin_params",
    "cache_key",
    "write_simulated_cache",
]

LABEL = "simulated"

#: An illustrative non-zero ``noise_corr`` (module docstring), used by ``docs/alerts.md``.
ILLUSTRATIVE_NOISE_CORR = 0.8


@dataclass(frozen=True)
class SimulationParams:
    """Parameters of the simulated observation source (see the module docstring).

    Attributes
    ----------
    signal : float
        Logit bonus of the true step in the VSG scores. The class defaults are the i.i.d.
        twin's for HT-Step; :func:`default_params` gives :data:`DEFAULT_TWIN`'s per dataset.
    noise : float
        Standard deviation of the i.i.d. Gaussian noise added to every VSG logit.
    confusion : float
        Fraction of ``signal`` also given to the steps adjacent to the true step in the video's
        ground-truth order of first occurrences.
    none_signal : float or None
        Logit bonus of the none option in segments where no step is annotated; ``None`` (the
        default) ties it to ``signal``, so the none option is as recognisable as a step.
    progress_noise : float
        Standard deviation, in digits, of the jitter of the progress distribution's centre (of
        every step with ``off_step_progress = "noisy"``; of the true step only with ``"zero"``).
    progress_width : float
        Standard deviation, in digits, of the discretised Gaussian over the digits 0..9.
    off_step_progress : {"noisy", "zero"}
        Digits of a step that is not the segment's true state: the same noisy Gaussian centred
        at 0, or all mass on 0 (module docstring, step 4).
    seed : int
        Base seed; each video's generator is seeded with ``[seed, crc32(uid)]``.
    segment_duration : int
        Seconds per scored segment (rows per segment in the per-second layout).
    sampling_fps : float
        Frame sampling rate that fixes the number of segments.
    noise_corr : float
        Lag-1 autocorrelation in (-1, 1) of every noise draw across segments (stationary AR(1),
        module docstring); 0 (default) is the i.i.d. model, bit for bit.
    """

    signal: float = CALIBRATED_SIGNAL["htstep"]
    noise: float = 1.0
    confusion: float = 0.0
    none_signal: float | None = None
    progress_noise: float = 1.0
    progress_width: float = 1.0
    off_step_progress: str = "noisy"
    seed: int = 0
    segment_duration: int = SEGMENT_DURATION
    sampling_fps: float = SAMPLING_FPS
    noise_corr: float = 0.0

    def __post_init__(self) -> None:
        if not -1.0 < self.noise_corr < 1.0:
            raise ValueError(f"noise_corr must be in (-1, 1), got {self.noise_corr}")
        for name in ("noise", "progress_noise", "progress_width"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.off_step_progress not in OFF_STEP_PROGRESS:
            raise ValueError(
                f"off_step_progress must be one of {OFF_STEP_PROGRESS}, "
                f"got {self.off_step_progress!r}"
            )
        if int(self.segment_duration) != self.segment_duration or self.segment_duration < 1:
            raise ValueError(
                f"segment_duration must be a positive whole number, got {self.segment_duration}"
            )

    @property
    def effective_none_signal(self) -> float:
        """The none option's bonus: ``none_signal``, or ``signal`` when it is ``None``."""
        return self.signal if self.none_signal is None else float(self.none_signal)


@dataclass(frozen=True)
class SimulatedScores:
    """Simulated LMM outputs for one video, one row per segment (label ``"simulated"``).

    Attributes
    ----------
    uid : str
        The video uid.
    vsg : (S, K+1) float64 array
        Multiple-choice probabilities, steps in list order then none; rows sum to 1.
    progress : (S, K, 10) float64 array
        Digit probabilities 0..9 per step; each (segment, step) row sums to 1.
    truth : (S,) int array
        True state per segment; ``K`` means none.
    fraction : (S,) float64 array
        Fraction of completion of the true step at the segment centre; NaN for none.
    params : SimulationParams
        The parameters that produced the arrays.
    label : str
        Always ``"simulated"``: these are not a real model's scores.
    """

    uid: str
    vsg: np.ndarray
    progress: np.ndarray
    truth: np.ndarray
    fraction: np.ndarray
    params: SimulationParams
    label: str = field(default=LABEL, init=False)

    @property
    def num_segments(self) -> int:
        """S, the number of segments."""
        return self.vsg.shape[0]


def _rng(params: SimulationParams, uid: str) -> np.random.Generator:
    return np.random.default_rng([int(params.seed), zlib.crc32(uid.encode())])


def _softmax(z: np.ndarray) -> np.ndarray:
    """Softmax along the last axis, computed in place in ``z`` (which it returns)."""
    z -= z.max(axis=-1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=-1, keepdims=True)
    return z


@dataclass(frozen=True)
class _VsgDraws:
    """What one video's VSG rows take besides the bonuses: its segment truth and its noise
    logits ``noise * ar1(eps)`` (module docstring, steps 1 and 3), and the generator, left
    where the progress draws start. ``signal``, ``confusion`` and ``none_signal`` do not
    enter, so a bisection over ``signal`` draws them once (:class:`_SignalSweep`)."""

    video: Video
    truth: np.ndarray
    fraction: np.ndarray
    noise_logits: np.ndarray
    rng: np.random.Generator


def _vsg_draws(video: Video, params: SimulationParams) -> _VsgDraws:
    d = int(params.segment_duration)
    truth, fraction = segment_truth(video, d, params.sampling_fps)
    rng = _rng(params, video.uid)
    eps = rng.standard_normal((truth.shape[0], video.num_steps + 1))
    return _VsgDraws(video, truth, fraction, params.noise * ar1(eps, params.noise_corr), rng)


def _vsg(draws: _VsgDraws, params: SimulationParams, *, fresh: bool = True) -> np.ndarray:
    """The (S, K+1) VSG rows of ``draws`` under ``params``' bonuses (step 3 of the module
    docstring); ``fresh`` says the noise logits may be written in place (used once)."""
    truth, k = draws.truth, draws.video.num_steps
    logits = draws.noise_logits if fresh else draws.noise_logits.copy()
    is_step = truth < k
    bonus = np.where(is_step, params.signal, params.effective_none_signal)
    logits[np.arange(truth.shape[0]), truth] += bonus
    if params.confusion and is_step.any():
        adjacent = neighbours(draws.video)[truth[is_step]]
        logits[is_step, :k] += params.confusion * params.signal * adjacent
    return _softmax(logits)


def _simulate(
    video: Video, params: SimulationParams, with_progress: bool = True
) -> SimulatedScores:
    k = video.num_steps
    draws = _vsg_draws(video, params)
    truth, fraction, rng = draws.truth, draws.fraction, draws.rng
    s_len = truth.shape[0]
    corr = params.noise_corr
    vsg = _vsg(draws, params)
    rows = np.arange(s_len)
    is_step = truth < k
    progress = np.zeros((s_len, k, 10))
    if with_progress:
        jitter = ar1(rng.standard_normal(s_len), corr)
        off_jitter = ar1(rng.standard_normal((s_len, k)), corr)
        if params.off_step_progress == "noisy":
            centre = params.progress_noise * off_jitter
        else:  # "zero": a point mass on digit 0
            centre = np.full((s_len, k), -np.inf)
        centre[rows[is_step], truth[is_step]] = (
            9.0 * fraction[is_step] + params.progress_noise * jitter[is_step]
        )
        progress = digits(centre, params.progress_width)
    for a in (vsg, progress, truth, fraction):
        a.setflags(write=False)
    return SimulatedScores(video.uid, vsg, progress, truth, fraction, params)


def twin_params(dataset: str, twin: str = DEFAULT_TWIN, **overrides) -> SimulationParams:
    """The parameters of ``twin`` (:data:`~baglm_nb.core.twins.TWINS`) for ``dataset``,
    overridden (:func:`~baglm_nb.core.twins.twin_values`; ValueError for an unknown twin, or a
    dataset without that twin's ``signal`` unless ``overrides`` gives one)."""
    return SimulationParams(**{**twin_values(dataset, twin, "signal" in overrides), **overrides})


def default_params(dataset: str, **overrides) -> SimulationParams:
    """The parameters of :data:`DEFAULT_TWIN` for ``dataset``, overridden (:func:`twin_params`)."""
    return twin_params(dataset, DEFAULT_TWIN, **overrides)


def _params(dataset: str, params: SimulationParams | None) -> SimulationParams:
    return default_params(dataset) if params is None else params


def simulate_video(video: Video, params: SimulationParams | None = None) -> SimulatedScores:
    """Simulate one video's VSG and progress scores (label ``"simulated"``, not a real model).

    Parameters
    ----------
    video : Video
        The annotated video; its ground truth drives the simulation.
    params : SimulationParams, optional
        Generative-model parameters (default: :func:`default_params` of the video's dataset).

    Returns
    -------
    SimulatedScores
        Per-segment arrays (read-only); use :func:`per_second` for the published layout.
    """
    return _simulate(video, _params(video.dataset, params))


def per_second(
    scores: SimulatedScores, segment_duration: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Repeat each segment's row ``segment_duration`` times (the published per-second layout).

    Returns ``(vsg, progress)`` of shapes (T, K+1) and (T, K, 10) with ``T = d * S``;
    ``segment_duration`` defaults to ``scores.params.segment_duration``.
    """
    d = int(scores.params.segment_duration if segment_duration is None else segment_duration)
    return grid.per_second(scores.vsg, d), grid.per_second(scores.progress, d)


def simulate_dataset(
    dataset: str,
    params: SimulationParams | None = None,
    videos: Sequence[Video] | None = None,
    *,
    show_progress: bool = True,
) -> dict[str, SimulatedScores]:
    """Simulate every video of ``dataset`` (or of ``videos``), keyed by uid, in input order.

    Each video's arrays depend only on ``params`` (default: :func:`default_params`) and its
    uid, not on the other videos.
    """
    params = _params(dataset, params)
    videos = load_dataset(dataset) if videos is None else videos
    bar = tqdm(
        videos,
        desc=f"{LABEL} {dataset}",
        unit="video",
        disable=not show_progress,
        **bar_options(),
    )
    return {v.uid: _simulate(v, params) for v in bar}


def simulate_vsg(video: Video, params: SimulationParams | None = None) -> np.ndarray:
    """The (S, K+1) simulated VSG rows of ``video`` alone (no progress drawn), as in
    :func:`simulate_video` (label ``"simulated"``, not a real model)."""
    return _simulate(video, _params(video.dataset, params), with_progress=False).vsg


class SignalSweep:
    """The simulated VSG rows of some videos as a function of ``signal`` alone.

    Every video's segment truth and noise draws (module docstring, steps 1 and 3) do not
    depend on ``signal``: they are drawn once here, and each :meth:`vsg_rows` or
    :meth:`recall` only adds the bonuses and takes the softmax, giving the floats that
    :func:`simulate_vsg` gives at ``replace(params, signal=signal)``, bit for bit.
    :func:`calibrate` bisects on it.
    """

    def __init__(
        self, dataset: str, params: SimulationParams, videos: Sequence[Video] | None = None
    ) -> None:
        self.dataset, self.params = dataset, params
        self.videos = list(load_dataset(dataset) if videos is None else videos)
        self._draws = [_vsg_draws(v, params) for v in self.videos]

    def vsg_rows(self, signal: float | None = None) -> dict[str, np.ndarray]:
        """``{uid: per-second (T, K+1) VSG rows}`` at ``signal`` (default: the params')."""
        params = self.params if signal is None else replace(self.params, signal=float(signal))
        d = int(params.segment_duration)
        return {
            draws.video.uid: grid.per_second(_vsg(draws, params, fresh=False), d)
            for draws in self._draws
        }

    def recall(self, signal: float | None = None) -> float:
        """The off-the-shelf R@1 (percent) at ``signal``, as :func:`offline_recall`."""
        return evaluate(self.dataset, self.vsg_rows(signal), self.videos)


def offline_recall(
    dataset: str, params: SimulationParams | None = None, videos: Sequence[Video] | None = None
) -> float:
    """Off-the-shelf baseline R@1 (percent) of the simulated raw VSG scores, per-second layout."""
    params = _params(dataset, params)
    videos = load_dataset(dataset) if videos is None else list(videos)
    d = int(params.segment_duration)
    rows = {v.uid: grid.per_second(simulate_vsg(v, params), d) for v in videos}
    return evaluate(dataset, rows, videos)


@dataclass(frozen=True)
class Calibration:
    """Result of :func:`calibrate`: the ``signal`` whose offline R@1 matches ``target``.

    ``history`` lists every evaluated ``(signal, R@1)`` pair in order.
    """

    dataset: str
    target: float
    signal: float
    achieved: float
    iterations: int
    params: SimulationParams
    tol: float = 0.25
    history: tuple[tuple[float, float], ...] = ()

    @property
    def converged(self) -> bool:
        """Whether ``achieved`` is within ``tol`` of ``target``."""
        return abs(self.achieved - self.target) <= self.tol

    def report(self) -> str:
        """A one-paragraph, plainly labelled summary."""
        return (
            f"[{LABEL}] calibration on {self.dataset}: signal = {self.signal:.4f} gives an "
            f"off-the-shelf R@1 of {self.achieved:.2f}% (target {self.target:.2f}%, "
            f"{self.iterations} evaluations; noise = {self.params.noise}, "
            f"confusion = {self.params.confusion}, seed = {self.params.seed}). "
            "These are simulated observations, not a real model's scores."
        )


def calibrate(
    dataset: str = "htstep",
    target: float | None = None,
    params: SimulationParams | None = None,
    tol: float = 0.25,
    max_iter: int = 30,
    *,
    videos: Sequence[Video] | None = None,
    bracket: tuple[float, float] = (0.0, 10.0),
) -> Calibration:
    """Bisect ``signal`` so that :func:`offline_recall` is within ``tol`` of ``target`` percent.

    ``target`` defaults to the paper's off-the-shelf R@1 of ``dataset`` (ValueError when the
    paper has none); ``params`` (default: :class:`SimulationParams`' defaults) gives every other
    parameter. With a fixed seed the recall is a
    deterministic, non-decreasing function of ``signal`` (exactly so for ``confusion = 0``,
    while the softmax does not saturate, i.e. ``signal`` below about 30).
    The upper end of ``bracket`` is doubled (up to 32) until it reaches the target; a target
    outside the reachable range raises ``ValueError``. Returns the best evaluated point when
    ``max_iter`` evaluations do not reach the tolerance.
    """
    base = SimulationParams() if params is None else params  # its signal is the unknown
    target = paper_value("off_the_shelf", dataset) if target is None else float(target)
    if target != target:
        raise ValueError(
            f"dataset {dataset!r} has no paper off-the-shelf R@1 to calibrate on: add it to "
            "PAPER['off_the_shelf'] in baglm_nb/inputs/paper.py, or give a target"
        )
    sweep = SignalSweep(dataset, base, videos)  # the noise drawn once for every signal
    history: list[tuple[float, float]] = []

    def f(signal: float) -> float:
        value = sweep.recall(signal)
        history.append((float(signal), value))
        return value

    def done() -> Calibration:
        signal, value = min(history, key=lambda h: (abs(h[1] - target), h[0]))
        return Calibration(
            dataset,
            float(target),
            signal,
            value,
            len(history),
            replace(base, signal=signal),
            float(tol),
            tuple(history),
        )

    lo, hi = map(float, bracket)
    f_lo = f(lo)
    if f_lo - target > tol:
        raise ValueError(
            f"target {target}% is below the recall at signal={lo} ({f_lo:.2f}%); lower the bracket"
        )
    if abs(f_lo - target) <= tol:
        return done()
    f_hi = f(hi)
    while f_hi < target - tol and hi < 32.0 and len(history) < max_iter:
        lo, hi = hi, min(hi * 2, 32.0)
        f_hi = f(hi)
    if f_hi < target - tol and hi >= 32.0:
        raise ValueError(f"target {target}% is above the recall at signal={hi} ({f_hi:.2f}%)")
    while abs(history[-1][1] - target) > tol and len(history) < max_iter:
        mid = 0.5 * (lo + hi)
        if f(mid) < target:
            lo = mid
        else:
            hi = mid
    return done()


def cache_key(dataset: str, params: SimulationParams | None = None):
    """The :class:`~baglm_nb.stores.keys.ScoreKey` of a simulated run (model ``simulated``).

    The prompt-version slot holds a digest of the parameters, so runs with different
    parameters never share a folder.
    """
    from baglm_nb.stores.keys import ScoreKey

    p = _params(dataset, params)
    digest = (
        f"sim_signal{p.signal:g}_noise{p.noise:g}_conf{p.confusion:g}_none{p.effective_none_signal:g}"
        f"_pn{p.progress_noise:g}_pw{p.progress_width:g}_off{p.off_step_progress}_seed{p.seed}"
    )
    if p.noise_corr:  # absent at 0, so the i.i.d. caches keep their folders
        digest += f"_corr{p.noise_corr:g}"
    return ScoreKey(dataset, LABEL, digest, p.segment_duration, p.sampling_fps, source=LABEL)


def write_simulated_cache(
    dataset: str,
    root,
    params: SimulationParams | None = None,
    videos: Sequence[Video] | None = None,
    limit: int | None = None,
):
    """Write simulated scores into a score cache (label ``simulated``); returns its folder.

    Videos already in the cache are not redone, so an interrupted run resumes; a video stored
    for other steps than its annotation's is simulated again (:mod:`baglm_nb.stores.provenance`).
    """
    from baglm_nb.inputs.datasets import annotation_path
    from baglm_nb.stores.caches import create_cache
    from baglm_nb.stores.provenance import file_sha256

    params = _params(dataset, params)
    annotation = file_sha256(annotation_path(dataset)) if videos is None else None
    cache = create_cache(root, cache_key(dataset, params), annotation_sha256=annotation)
    videos = list(load_dataset(dataset) if videos is None else videos)[:limit]
    stale = set(cache.stale(videos))
    todo = [v for v in videos if not cache.has(v.uid) or v.uid in stale]
    for video in tqdm(todo, desc=f"write {LABEL} {dataset}", unit="video", **bar_options()):
        scores = _simulate(video, params)
        cache.write_video(video.uid, scores.vsg, scores.progress, steps=video.steps)
    return cache.path
