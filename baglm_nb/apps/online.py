"""Online grounding: follow a live or growing video and say which step is happening now.

:class:`OnlineGrounder` keeps the filter's O(K) state
(:class:`~baglm_nb.core.filtering.FilterState`) and turns one segment at a time into an
:class:`Estimate`: the belief over steps + none, the
current step and its confidence, each step's running progress, and the latencies of decoding,
scoring and filtering. A step change is announced only after it stays above a confidence
threshold for ``patience`` segments (:class:`Hysteresis`), to avoid flicker.

Sources: :func:`follow` reads a video file, a file that is still being written, or a URL
(through torchcodec/FFmpeg, on the published frame grid), or a live stream or camera (through
:mod:`baglm_nb.inputs.live` and :mod:`baglm_nb.apps.online_live`, on the stream grid) and scores
it with a real scorer; :func:`replay` plays a score cache of an already scored video through the
online filter (the CPU default for demos without weights, labelled ``replay``).

Gaps (segments a live source skipped, :meth:`OnlineGrounder.skip`): by default the filter
applies its transition once per missed second without an observation (``gaps="predict"``):
the belief spreads as the model expects over the missed time, the progress memory is kept, and
the hysteresis is not fed, so the announced step stays until new evidence. ``gaps="pause"``
freezes the belief instead.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from baglm_nb.core.filtering import FilterState

__all__ = [
    "Estimate",
    "EventLog",
    "Hysteresis",
    "EndReason",
    "OnlineGrounder",
    "Task",
    "follow",
    "load_task",
    "replay",
]

NONE_LABEL = "none"
#: How :meth:`OnlineGrounder.skip` steps over segments without observations (module docstring).
GAP_MODES = ("predict", "pause")


class EndReason(str):
    """Why a followed source stopped: a message, and ``failed`` when the source broke."""

    failed: bool

    def __new__(cls, text: str, failed: bool = False) -> EndReason:
        obj = super().__new__(cls, text)
        obj.failed = failed
        return obj


# --------------------------------------------------------------------------------------------
# Custom tasks


@dataclass(frozen=True)
class Task:
    """A procedure to follow: a goal, its steps and (optionally) a dependency matrix.

    ``dependency`` is (K, K) with ``D[i, j] = P(step j is a prerequisite of step i)``; an
    ordered task without one gets the chain of its listed order, an unordered one all zeros
    (BaGLM then reduces to the normalised scores) unless ``dependency_backend`` names a
    back-end that computes D.
    """

    goal: str
    steps: tuple[str, ...]
    ordered: bool = True
    dependency: np.ndarray | None = field(default=None, compare=False)
    dependency_backend: str | None = None

    def dependency_matrix(self) -> np.ndarray:
        """D for this task: the given matrix, the chain of an ordered list, or zeros."""
        k = len(self.steps)
        if self.dependency is not None:
            return np.asarray(self.dependency, dtype=np.float64)
        d = np.zeros((k, k))
        if self.ordered:
            d[np.arange(1, k), np.arange(k - 1)] = 1.0
        return d


def _task_error(path: Path, field_name: str, message: str) -> ValueError:
    return ValueError(f"{path}: field {field_name!r} {message}")


def load_task(path: str | os.PathLike) -> Task:
    """Read and validate a task file (JSON, or YAML when it ends in .yaml/.yml).

    Fields: ``goal`` (str), ``steps`` (non-empty list of distinct str), ``ordered`` (bool,
    default true), ``dependency`` (optional K x K list of numbers in [0, 1]) or
    ``dependency_backend`` (optional str). Errors name the file and the field.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read task file ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 (byte {exc.start}); save it as UTF-8") from None
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    except Exception as exc:  # noqa: BLE001 - any parse error becomes one clear message
        kind = path.suffix.lstrip(".").upper() or "JSON"
        raise ValueError(f"{path}: not valid {kind} ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a task file holds one object with 'goal' and 'steps'")
    unknown = set(data) - {"goal", "steps", "ordered", "dependency", "dependency_backend"}
    if unknown:
        raise _task_error(path, sorted(unknown)[0], "is not a task field")
    goal = data.get("goal")
    if not isinstance(goal, str) or not goal.strip():
        raise _task_error(path, "goal", "must be a non-empty string")
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps:
        raise _task_error(path, "steps", "must be a non-empty list of strings")
    for i, s in enumerate(steps):
        if not isinstance(s, str) or not s.strip():
            raise _task_error(path, f"steps[{i}]", "must be a non-empty string")
    if len(set(steps)) != len(steps):
        raise _task_error(path, "steps", "has duplicate step texts")
    ordered = data.get("ordered", True)
    if not isinstance(ordered, bool):
        raise _task_error(path, "ordered", "must be true or false")
    dep = data.get("dependency")
    backend = data.get("dependency_backend")
    if dep is not None and backend is not None:
        raise _task_error(path, "dependency", "and 'dependency_backend' exclude each other")
    matrix = None
    if dep is not None:
        try:
            matrix = np.asarray(dep, dtype=np.float64)
        except (TypeError, ValueError):
            raise _task_error(path, "dependency", "must be a K x K list of numbers") from None
        k = len(steps)
        if matrix.shape != (k, k):
            raise _task_error(path, "dependency", f"must be {k} x {k}, got {matrix.shape}")
        if not np.isfinite(matrix).all() or (matrix < 0).any() or (matrix > 1).any():
            raise _task_error(path, "dependency", "must hold probabilities in [0, 1]")
    if backend is not None and not isinstance(backend, str):
        raise _task_error(path, "dependency_backend", "must be a string")
    return Task(goal.strip(), tuple(steps), ordered, matrix, backend)


# --------------------------------------------------------------------------------------------
# Estimates and hysteresis


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
    measurements.
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

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (one line of the event log)."""
        return {
            "event": "segment",
            "segment": self.segment,
            "t_start": self.t_start,
            "t_end": self.t_end,
            "step": self.step,
            "step_name": self.step_name,
            "confidence": round(float(self.confidence), 6),
            "announced": self.announced,
            "current": self.current,
            "belief": [round(float(x), 6) for x in self.belief],
            "progress": [round(float(x), 6) for x in self.progress],
            "latency": {k: round(float(v), 6) for k, v in self.latency.items()},
            "lag": round(float(self.lag), 6),
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


# --------------------------------------------------------------------------------------------
# The grounder


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
    """

    def __init__(
        self,
        scorer: Any,
        goal: str,
        steps: Sequence[str],
        dependency: np.ndarray,
        *,
        transition: str = "both",
        prior: str = "uniform",
        segment_duration: int = 2,
        stepping: str = "second",
        threshold: float = 0.5,
        patience: int = 2,
        source: str = "",
        label: str = "",
        gaps: str = "predict",
    ) -> None:
        if gaps not in GAP_MODES:
            raise ValueError(f"gaps must be one of {GAP_MODES}, got {gaps!r}")
        if stepping not in ("second", "segment"):
            raise ValueError(f"stepping must be 'second' or 'segment', got {stepping!r}")
        if int(segment_duration) != segment_duration or segment_duration < 1:
            raise ValueError(
                f"segment_duration must be a whole number >= 1, got {segment_duration}"
            )
        self.scorer, self.goal, self.steps = scorer, goal, tuple(steps)
        self.state = FilterState(dependency, transition=transition, prior=prior)
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
        k = len(self.steps)  # warm the compiled kernel now, not on the first live segment
        self.state.step(np.full(k + 1, 1.0), np.full((k, 10), 0.1))
        self.state.reset()

    def reset(self) -> None:
        """Start over: uniform belief, no progress, nothing announced."""
        self.state.reset()
        self.hysteresis.reset()
        self.segment = 0

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
                raise ValueError("stepping over a gap by prediction needs prior='uniform'; "
                                 "use gaps='pause'")  # fmt: skip
            k = len(self.steps)
            self.state.step(np.ones(k + 1), np.zeros((k, 10)), repeats=int(count) * self._repeats)
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
        top = state.top
        confidence = float(belief[top])
        new = self.hysteresis.update(top, confidence)
        current = self.hysteresis.current
        names = self._names
        d = self.segment_duration
        s = self.segment
        self.segment = s + 1
        return Estimate(
            segment=s,
            t_start=float(s * d),
            t_end=float((s + 1) * d),
            belief=belief,
            step=top,
            step_name=names[top],
            confidence=confidence,
            progress=state.done.copy(),
            announced=None if new is None else names[new],
            current=None if current is None else names[current],
            latency={"decode": decode_s, "score": score_s, "filter": filter_s},
            source=self.source,
        )


# --------------------------------------------------------------------------------------------
# Sources


def replay(
    grounder: OnlineGrounder,
    vsg: np.ndarray,
    progress: np.ndarray,
    *,
    pace: str = "fast",
    speed: float = 1.0,
) -> Iterator[Estimate]:
    """Play per-segment scores (S, K+1) and (S, K, 10) through ``grounder``.

    ``pace="realtime"`` waits so that segments arrive at ``speed`` times real time;
    ``"fast"`` goes as fast as possible.
    """
    if pace not in ("fast", "realtime"):
        raise ValueError(f"pace must be 'fast' or 'realtime', got {pace!r}")
    vsg, progress = np.asarray(vsg), np.asarray(progress)
    start = time.perf_counter()
    for s in range(vsg.shape[0]):
        if pace == "realtime":
            due = start + s * grounder.segment_duration / speed
            time.sleep(max(0.0, due - time.perf_counter()))
        yield grounder.push_scores(vsg[s], progress[s])


def follow(
    source: str | os.PathLike,
    grounder: OnlineGrounder,
    *,
    growing: bool = False,
    timeout: float = 10.0,
    poll: float = 0.5,
    sampling_fps: float = 2.0,
    device: str = "cpu",
    on_end=None,
    live: bool | None = None,
    stop: threading.Event | None = None,
    **live_options,
) -> Iterator[Estimate]:
    """Follow a video file, a file still being written (``growing=True``), a URL or a live source.

    Each whole segment is decoded (:func:`baglm_nb.inputs.video.iter_segments`), scored and filtered
    as it becomes available. A growing file is re-probed every ``poll`` seconds and the run
    stops when no new segment arrives for ``timeout`` seconds. When the source ends or breaks,
    the generator stops; ``on_end(reason)`` (if given) receives an :class:`EndReason` (a str;
    ``failed`` when the source broke). Everything emitted before stays valid.

    A live source (an RTSP/UDP/SRT URL, a camera, an http(s) stream without a length, or any
    source with ``live=True``; :func:`baglm_nb.inputs.live.live_source`), or a started
    :class:`~baglm_nb.inputs.live.LiveReader`, is followed by
    :func:`baglm_nb.apps.online_live.follow_live`, which also yields
    :class:`~baglm_nb.inputs.live.Gap` events; ``live_options`` (``lag``, ``reconnect``,
    ``transport``, ``pace``) go to it, ``timeout`` is its stall limit. ``stop`` (an Event a
    Ctrl-C handler sets) raises ``KeyboardInterrupt`` at the next segment or poll.
    """
    from baglm_nb.apps.online_live import follow_live, live_reader_for

    reader = live_reader_for(source, grounder, live=live, timeout=timeout,
                             sampling_fps=sampling_fps, **live_options)  # fmt: skip
    if reader is not None:
        yield from follow_live(reader, grounder, on_end=on_end, stop=stop)
        return
    yield from _follow_file(source, grounder, growing=growing, timeout=timeout, poll=poll,
                            sampling_fps=sampling_fps, device=device, on_end=on_end,
                            stop=stop)  # fmt: skip


def raise_if_stopped(stop: threading.Event | None) -> None:
    """``KeyboardInterrupt`` once ``stop`` is set: a Ctrl-C handler's flag, checked by the
    follow loops at every segment and poll, so that an interrupt Python dropped (one raised
    inside a finaliser or a C callback is only printed) still stops the run."""
    if stop is not None and stop.is_set():
        raise KeyboardInterrupt


def _follow_file(source, grounder, *, growing, timeout, poll, sampling_fps, device, on_end, stop):
    """:func:`follow` for a file, a growing file or a seekable URL (the published grid)."""
    from baglm_nb.inputs.video import VideoError, iter_segments

    done, error = 0, None
    last_new = time.monotonic()
    while True:
        try:
            for batch in iter_segments(
                source,
                segment_duration=grounder.segment_duration,
                sampling_fps=sampling_fps,
                batch_segments=1,
                device=device,
                start_segment=done,
            ):
                decode_s = batch.decode_s / max(len(batch.frames), 1)
                for frames in batch.frames:
                    raise_if_stopped(stop)
                    yield grounder.push(frames, decode_s=decode_s)
                    done += 1
                    last_new = time.monotonic()
        except VideoError as exc:
            error = exc
            if not growing:
                if on_end:
                    on_end(EndReason(f"source broke after {done} segments: {exc}", True))
                return
        if not growing:
            if on_end:
                on_end(EndReason(f"source ended after {done} segments"))
            return
        if time.monotonic() - last_new > timeout:
            if on_end:
                last = f" (last error: {error})" if error is not None else ""
                on_end(EndReason(f"no new frames for {timeout:g} s; stopped after {done} "
                                 f"segments{last}", done == 0))  # fmt: skip
            return
        raise_if_stopped(stop)
        time.sleep(poll)


# --------------------------------------------------------------------------------------------
# Outputs


class EventLog:
    """A JSONL event log: one line per segment, flushed at once, so it stays complete."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def write(self, event: dict[str, Any]) -> None:
        """Append one event and flush it to disk."""
        self._file.write(json.dumps(event) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        """Close the file."""
        if not self._file.closed:
            self._file.close()

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def median_p99(values: Sequence[float]) -> tuple[float, float]:
    """Median and 99th percentile of ``values`` (NaN when empty)."""
    if not len(values):
        return math.nan, math.nan
    arr = np.asarray(values, dtype=np.float64)
    return float(np.median(arr)), float(np.percentile(arr, 99))
