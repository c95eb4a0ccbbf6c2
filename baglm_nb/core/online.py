"""The online core: step grounding one segment at a time, in O(K) state.

:class:`OnlineGrounder` keeps the filter's state (:class:`~baglm_nb.core.filtering.FilterState`)
and turns one segment at a time into an :class:`Estimate`: the belief over steps + none, the
current step and its confidence, each step's running progress, and the latencies of decoding,
scoring and filtering. A step change is announced only after it stays above a confidence
threshold for ``patience`` segments (:class:`Hysteresis`), to avoid flicker.

Gaps (segments a live source skipped, :meth:`OnlineGrounder.skip`): by default the filter
applies its transition once per missed second without an observation (``gaps="predict"``):
the belief spreads as the model expects over the missed time, the progress memory is kept, and
the hysteresis is not fed, so the announced step stays until new evidence. ``gaps="pause"``
freezes the belief instead.

Fixed-lag smoothing (``lag_segments=N``, :class:`FixedLagSmoother`): each segment's
belief is recomputed from the observations of the ``N`` segments after it, with the filter's own
transitions (:mod:`baglm_nb.core.smoothing`), and emitted ``N`` segments late (``lag_s`` in its
estimate); the announcements are then made on the smoothed beliefs. It equals the batch
fixed-lag smoother of :func:`~baglm_nb.core.filtering.run_filter` with ``smoothing_lag_s = N *
segment_duration`` seconds on each segment's last row.

The sources that feed it (files, live streams, replays) are in :mod:`baglm_nb.apps.online`.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from baglm_nb.core.filtering import FilterState, check_stay
from baglm_nb.core.smoothing import backward_span
from baglm_nb.inputs.variants import GAP_MODES, SEGMENT_DURATION, STEPPINGS

if TYPE_CHECKING:
    from baglm_nb.models.engine import Scorer

__all__ = [
    "GAP_MODES",
    "NONE_LABEL",
    "Estimate",
    "FixedLagSmoother",
    "Hysteresis",
    "OnlineGrounder",
    "step_number",
]

NONE_LABEL = "none"


def step_number(state: int, num_steps: int) -> int | None:
    """How the event log and the report number a state: steps 1..K in the task's order, None
    for none (``state`` is the 0-based index, K for none)."""
    return None if state >= num_steps else state + 1


@dataclass(slots=True)
class Estimate:
    """What the grounder says after one segment.

    ``belief`` is (K+1,) with none last; ``step`` the index of the most probable state (K for
    none); ``progress`` (K,) the running maximum of each step's expected progress in [0, 1];
    ``announced`` the step text announced at this segment (after hysteresis), else None;
    ``latency`` seconds spent on ``decode``, ``score`` and ``filter`` (a live source adds
    ``wait``: queued before scoring); ``lag`` (live sources) seconds from the arrival of the
    segment's last frame to this estimate; ``marks`` (live sources) ``time.perf_counter()``
    stamps of that frame's arrival and decoding and of the segment's start of scoring, and the
    frame's stream time (``frame_time``) and container timestamp (``frame_pts``), for latency
    measurements; ``lag_s`` how many seconds of later video the belief used (fixed-lag
    smoothing: ``N * segment_duration``; 0 for the filter).
    """

    segment: int
    t_start: float
    t_end: float
    belief: np.ndarray
    step: int
    step_name: str
    confidence: float
    progress: np.ndarray
    announced: str | None
    current: str | None
    latency: dict[str, float]
    source: str = ""
    lag: float = 0.0
    marks: dict[str, float] = field(default_factory=dict)
    lag_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (one line of the event log); ``step`` is the 0-based index (K for
        none), ``step_number`` the report's number (:func:`step_number`)."""
        return {
            "event": "segment",
            "segment": self.segment,
            "t_start": self.t_start,
            "t_end": self.t_end,
            "step": self.step,
            "step_number": step_number(self.step, len(self.belief) - 1),
            "step_name": self.step_name,
            "confidence": round(float(self.confidence), 6),
            "announced": self.announced,
            "current": self.current,
            "belief": [round(float(x), 6) for x in self.belief],
            "progress": [round(float(x), 6) for x in self.progress],
            "latency": {k: round(float(v), 6) for k, v in self.latency.items()},
            "lag": round(float(self.lag), 6),
            "lag_s": float(self.lag_s),
            "source": self.source,
        }


class Hysteresis:
    """Announce a state change only after ``patience`` consecutive confident segments.

    A candidate state must be the most probable with confidence >= ``threshold`` for
    ``patience`` segments in a row before it replaces the announced state.
    """

    def __init__(self, threshold: float = 0.5, patience: int = 2) -> None:
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {threshold}")
        if patience < 1:
            raise ValueError(f"patience must be >= 1, got {patience}")
        self.threshold, self.patience = threshold, patience
        self.reset()

    def reset(self) -> None:
        """Forget the announced state and the candidate."""
        self.current: int | None = None
        self._candidate: int | None = None
        self._count = 0

    def update(self, state: int, confidence: float) -> int | None:
        """Feed one segment's top state; returns the newly announced state, else None."""
        if confidence < self.threshold or state == self.current:
            self._candidate, self._count = None, 0
            return None
        if state == self._candidate:
            self._count += 1
        else:
            self._candidate, self._count = state, 1
        if self._count >= self.patience:
            self.current, self._candidate, self._count = state, None, 0
            return state
        return None


class FixedLagSmoother:
    """Fixed-lag smoothing online: each segment's belief given the next ``lag_segments``.

    :meth:`push` takes a segment's filter belief (after its last row), the column weights and
    the likelihood its rows used (the same for all its ``repeats`` rows) and an item to carry;
    once ``lag_segments`` segments have followed a segment, its smoothed belief comes out
    (:func:`baglm_nb.core.smoothing.backward_span`). :meth:`finish` empties the queue at the end
    of the video with the observations there are, as the batch smoother does on its last rows.
    O(lag_segments * repeats * K^2) per segment; ``lag_segments=0`` gives the filter belief
    back unchanged.
    ``stay`` is the filter's (:func:`baglm_nb.core.filtering.run_filter`).
    """

    def __init__(
        self, static: np.ndarray, lag_segments: int, repeats: int, *, stay: float = 0.0
    ) -> None:
        lag = lag_segments
        if isinstance(lag, bool) or int(lag) != lag or lag < 0:
            raise ValueError(f"lag_segments must be a whole number >= 0, got {lag!r}")
        self.static, self.lag_segments, self.repeats = static, int(lag), int(repeats)
        self.stay = check_stay(stay)
        self._held: deque = deque()

    def push(
        self,
        alpha: np.ndarray,
        weights: np.ndarray,
        lik: np.ndarray,
        item: Any,
        *,
        repeats: int | None = None,
        emit: bool = True,
    ) -> list[tuple[Any, np.ndarray]]:
        """Add one segment; returns the ``(item, smoothed belief)`` now due (zero or one).

        ``emit=False`` holds a segment that only contributes its rows (a gap stepped over by
        prediction) and is never returned.
        """
        reps = self.repeats if repeats is None else int(repeats)
        self._held.append((item, alpha.copy(), weights.copy(), lik.copy(), reps, emit))
        if self.lag_segments == 0:
            item, alpha, *_, emit = self._held.popleft()
            return [(item, alpha)] if emit else []
        if len(self._held) <= self.lag_segments:
            return []
        return self._emit_oldest()

    def finish(self) -> list[tuple[Any, np.ndarray]]:
        """Every held segment, smoothed with the segments there are after it."""
        out = []
        while self._held:
            out += self._emit_oldest()
        return out

    def _emit_oldest(self) -> list[tuple[Any, np.ndarray]]:
        item, alpha, _, _, _, emit = self._held.popleft()
        if not emit:
            return []
        if not self._held:
            return [
                (
                    item,
                    backward_span(
                        alpha,
                        self.static,
                        np.zeros((0, len(alpha))),
                        np.zeros((0, len(alpha))),
                        np.zeros(0),
                        stay=self.stay,
                    ),
                )
            ]
        later = list(self._held)
        weights = np.stack([h[2] for h in later])
        lik = np.stack([h[3] for h in later])
        reps = np.array([h[4] for h in later], dtype=np.int64)
        return [(item, backward_span(alpha, self.static, weights, lik, reps, stay=self.stay))]


class OnlineGrounder:
    """Step grounding one segment at a time.

    Parameters
    ----------
    scorer
        An object with ``score_segments(frames_batch, goal, steps)`` returning per-segment VSG
        (S, K+1) and progress (S, K, 10) scores (see :mod:`baglm_nb.models.engine`); may be
        None when only :meth:`push_scores` is used (replay).
    goal, steps
        The task.
    dependency
        (K, K) with ``D[i, j] = P(step j is a prerequisite of step i)``.
    transition, prior
        Filter variants (see :func:`baglm_nb.core.filtering.run_filter`).
    segment_duration
        Seconds per segment. With ``stepping="second"`` (published) each segment's observation
        is applied ``segment_duration`` times, with ``"segment"`` once.
    threshold, patience
        Hysteresis of the announced step.
    source : str
        What the estimates come from, e.g. ``"replay of simulated scores"`` (in each estimate).
    label : str
        The observation source label for titles (``"simulated"``, ``"lmm:<model>"``);
        default: ``source``.
    gaps : {"predict", "pause"}
        How :meth:`skip` steps over segments without observations (module docstring).
    lag_segments : int, default 0
        Segments (not seconds) of fixed-lag smoothing (module docstring; needs
        ``prior="uniform"``). With ``N > 0``, :meth:`push_scores` returns the filter's
        estimate and does not feed the hysteresis; the smoothed estimates, ``N`` segments late
        and announced on, come from :meth:`take_smoothed` and, at the end, :meth:`finish`.
    stay : float in [0, 1), default 0
        Beyond the paper: transitions mixed with staying (``run_filter``'s ``stay``); 0 is the
        paper's filter.
    """

    def __init__(
        self,
        scorer: Scorer | None,
        goal: str,
        steps: Sequence[str],
        dependency: np.ndarray,
        *,
        transition: str = "both",
        prior: str = "uniform",
        segment_duration: int = SEGMENT_DURATION,
        stepping: str = "second",
        threshold: float = 0.5,
        patience: int = 2,
        source: str = "",
        label: str = "",
        gaps: str = "predict",
        lag_segments: int = 0,
        stay: float = 0.0,
    ) -> None:
        if gaps not in GAP_MODES:
            raise ValueError(f"gaps must be one of {GAP_MODES}, got {gaps!r}")
        if stepping not in STEPPINGS:
            raise ValueError(f"stepping must be 'second' or 'segment', got {stepping!r}")
        if int(segment_duration) != segment_duration or segment_duration < 1:
            raise ValueError(
                f"segment_duration must be a whole number >= 1, got {segment_duration}"
            )
        self.scorer, self.goal, self.steps = scorer, goal, tuple(steps)
        self.state = FilterState(dependency, transition=transition, prior=prior, stay=stay)
        self.stay = self.state.stay
        if self.state.num_steps != len(self.steps):
            raise ValueError(
                f"dependency is {self.state.dependency.shape}, but the task has "
                f"{len(self.steps)} steps"
            )
        self.segment_duration = int(segment_duration)
        self.stepping = stepping
        self._repeats = self.segment_duration if stepping == "second" else 1
        self._names = (*self.steps, NONE_LABEL)
        self.hysteresis = Hysteresis(threshold, patience)
        self.source, self.label = source, label or source
        self.gaps = gaps
        self.segment = 0
        self.smoother = None
        if lag_segments:
            if prior != "uniform":
                raise ValueError(f"lag_segments needs prior='uniform', got {prior!r}")
            self.smoother = FixedLagSmoother(
                self.state.static, lag_segments, self._repeats, stay=self.stay
            )
        self._ready: list[Estimate] = []
        k = len(self.steps)  # warm the compiled kernel now, not on the first live segment
        self.state.step(np.full(k + 1, 1.0), np.full((k, 10), 0.1))
        self.state.reset()

    def reset(self) -> None:
        """Start over: uniform belief, no progress, nothing announced."""
        self.state.reset()
        self.hysteresis.reset()
        self.segment = 0
        self._ready = []
        if self.smoother is not None:
            self.smoother = FixedLagSmoother(
                self.state.static, self.smoother.lag_segments, self._repeats, stay=self.stay
            )

    def skip(self, count: int) -> np.ndarray:
        """Step over ``count`` segments without observations; returns the belief (K+1,).

        ``gaps="predict"`` applies the transition for each missed row (an observation of all
        ones, no progress); ``"pause"`` leaves the belief as it is. Either way the next pushed
        segment is number ``segment + count`` and the hysteresis is not fed.
        """
        if int(count) != count or count < 0:
            raise ValueError(f"count must be a whole number >= 0, got {count!r}")
        if count and self.gaps == "predict":
            if self.state.prior != "uniform":
                raise ValueError(
                    "stepping over a gap by prediction needs prior='uniform'; use gaps='pause'"
                )
            k = len(self.steps)
            self.state.step(np.ones(k + 1), np.zeros((k, 10)), repeats=int(count) * self._repeats)
            if self.smoother is not None:  # the rows count, nothing is emitted for them
                state = self.state
                for _ in range(int(count)):
                    due = self.smoother.push(
                        state.belief, state.weights, np.ones(k + 1), None, emit=False
                    )
                    self._smoothed(due)
        self.segment += int(count)
        return self.state.belief.copy()

    def push(self, frames, *, decode_s: float = 0.0) -> Estimate:
        """Score one segment's frames (F, 3, H, W) uint8 and update the belief."""
        if self.scorer is None:
            raise ValueError("this grounder has no scorer; use push_scores (replay)")
        start = time.perf_counter()
        result = self.scorer.score_segments(frames[None], self.goal, list(self.steps))
        score_s = time.perf_counter() - start
        return self.push_scores(
            np.asarray(result.vsg)[0],
            np.asarray(result.progress)[0],
            decode_s=decode_s,
            score_s=score_s,
        )

    def push_scores(
        self,
        vsg: np.ndarray,
        progress: np.ndarray,
        *,
        decode_s: float = 0.0,
        score_s: float = 0.0,
    ) -> Estimate:
        """Update with one segment's scores: ``vsg`` (K+1,), ``progress`` (K, 10)."""
        start = time.perf_counter()
        state = self.state
        belief = state.step(vsg, progress, repeats=self._repeats)
        filter_s = time.perf_counter() - start
        s = self.segment
        self.segment = s + 1
        latency = {"decode": decode_s, "score": score_s, "filter": filter_s}
        if self.smoother is None:
            return self._estimate(s, belief, state.done.copy(), latency, announce=True)
        item = (s, state.done.copy(), latency)
        start = time.perf_counter()
        due = self.smoother.push(belief, state.weights, np.asarray(vsg, np.float64), item)
        latency["smooth"] = time.perf_counter() - start
        self._smoothed(due)
        return self._estimate(s, belief, item[1], dict(latency), announce=False)

    def take_smoothed(self) -> list[Estimate]:
        """The smoothed estimates that became due since the last call (``lag_segments``)."""
        ready, self._ready = self._ready, []
        return ready

    def finish(self) -> list[Estimate]:
        """At the end of the video: every smoothed estimate still held, then nothing."""
        if self.smoother is not None:
            self._smoothed(self.smoother.finish())
        return self.take_smoothed()

    def _smoothed(self, due: list) -> None:
        lag_s = float(self.smoother.lag_segments * self.segment_duration)
        for (s, progress, latency), belief in due:
            self._ready.append(
                self._estimate(s, belief, progress, latency, announce=True, lag_s=lag_s)
            )

    def _estimate(self, s, belief, progress, latency, *, announce: bool, lag_s: float = 0.0):
        """The estimate of segment ``s``; ``announce`` feeds its top state to the hysteresis."""
        top = int(np.argmax(belief))
        confidence = float(belief[top])
        new = self.hysteresis.update(top, confidence) if announce else None
        current = self.hysteresis.current
        names = self._names
        d = self.segment_duration
        return Estimate(
            segment=s,
            t_start=float(s * d),
            t_end=float((s + 1) * d),
            belief=belief,
            step=top,
            step_name=names[top],
            confidence=confidence,
            progress=progress,
            announced=None if new is None else names[new],
            current=None if current is None else names[current],
            latency=latency,
            source=self.source,
            lag_s=lag_s,
        )
