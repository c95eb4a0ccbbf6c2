"""Alerts read from the prerequisites D: a step started too early, a step skipped.

Definitions (also in ``docs/alerts.md``; this module is the one place of each rule):

- **needs**: step k *needs* step j when ``D[k, j] >= threshold`` and ``k != j``
  (``D[i, j] = P(step j is a prerequisite of step i)``, as in the filter).
- **seen**: step j is *seen* by the end of segment s when, at some segment ``s' <= s``, it was
  announced (the hysteresis announced it: ``Estimate.announced``) or *observed done*: the
  filter's running progress of j (``Estimate.progress[j]``, the running maximum of its expected
  progress, in [0, 1]) reached ``done_level`` (default :data:`DONE_LEVEL` = 0.7: 7 of the 9
  progress digits). A segment's own announcement and progress count for that segment.
- **performed**: seen (one definition for both words).
- ``missing_prerequisite`` (raised at segment s): step k is announced at s while a step j that
  k needs is not seen by the end of s (k's own announcement does not count for j). Each
  (k, j) pair is raised at most once per run.
- ``skipped`` (raised at s): at a *trigger* (an announcement of one of the task's last steps,
  or the end of the video: :meth:`AlertMonitor.finish`), each step j that is not seen while
  some seen step k needs it; ``needed_by`` lists those k. Each j is raised at most once.
  The task's **last steps** are the steps that need at least one step and that no step needs.
- The time ``t`` of an alert raised at segment s is that segment's end, ``(s + 1) d`` seconds
  (``d`` the segment duration): the video time at which the alert is known.

:class:`AlertMonitor` applies the rules one segment at a time (``follow``, fed from
:class:`~baglm_nb.core.online.Estimate`); :func:`alerts_for` runs it over a whole video's
per-segment announcements and progress (the evaluation).

Exports :data:`ALERT_KINDS`, :data:`DEFAULT_THRESHOLD`, :data:`DONE_LEVEL`, :class:`Alert`,
:class:`AlertMonitor`, :func:`check_level`, :func:`needs`, :func:`last_steps`,
:func:`has_dependencies` and :func:`alerts_for`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from baglm_nb.inputs.variants import SEGMENT_DURATION

__all__ = [
    "ALERT_KINDS",
    "DEFAULT_THRESHOLD",
    "DONE_LEVEL",
    "Alert",
    "AlertMonitor",
    "alerts_for",
    "check_level",
    "has_dependencies",
    "last_steps",
    "needs",
]

#: The two alert kinds (module docstring).
ALERT_KINDS = ("missing_prerequisite", "skipped")
#: Default ``D[k, j]`` level from which step k needs step j (``follow --alert-threshold``).
DEFAULT_THRESHOLD = 0.5
#: Running progress from which a step counts as observed done (module docstring). On the
#: simulated default the running progress of a step that is never on screen stays below 0.5
#: (its noisy digits set a floor); more than 90% of the others reach 0.7 (docs/alerts.md).
DONE_LEVEL = 0.7


def check_level(name: str, value: float) -> float:
    """``value`` as a float; ``ValueError`` naming ``name`` unless it is in [0, 1]."""
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value:g}")
    return value


def needs(dependency: np.ndarray, threshold: float = DEFAULT_THRESHOLD) -> np.ndarray:
    """(K, K) bool: ``N[k, j]`` when step k needs step j (``D[k, j] >= threshold``, k != j)."""
    d = np.asarray(dependency, dtype=np.float64)
    if d.ndim != 2 or d.shape[0] != d.shape[1]:
        raise ValueError(f"dependency must be square (K, K), got {d.shape}")
    out = d >= check_level("threshold", threshold)
    np.fill_diagonal(out, False)
    return out


def last_steps(need: np.ndarray) -> np.ndarray:
    """(K,) bool: the task's last steps, those that need a step and that no step needs."""
    return need.any(axis=1) & ~need.any(axis=0)


def has_dependencies(dependency: np.ndarray | None) -> bool:
    """Whether ``dependency`` can give alerts: a matrix with a non-zero off-diagonal entry."""
    if dependency is None:
        return False
    d = np.array(dependency, dtype=np.float64)
    np.fill_diagonal(d, 0.0)
    return bool((d > 0).any())


@dataclass(frozen=True)
class Alert:
    """One alert: ``missing`` (a step index) was not seen while ``needed_by`` needed it.

    ``kind`` is ``"missing_prerequisite"`` (``needed_by`` is the one announced step) or
    ``"skipped"``; ``segment`` and ``t`` (seconds, the segment's end) say when it was raised.
    Indices count from 0, in the task's step order; the names are the step texts.
    """

    kind: str
    segment: int
    t: float
    missing: int
    missing_name: str
    needed_by: tuple[int, ...]
    needed_by_names: tuple[str, ...]

    @property
    def message(self) -> str:
        """One human sentence naming the steps."""
        by = ", ".join(f"'{n}'" for n in self.needed_by_names)
        if self.kind == "missing_prerequisite":
            return f"started {by}, but '{self.missing_name}', which it needs, was never seen"
        verb = "needs" if len(self.needed_by) == 1 else "need"
        return f"'{self.missing_name}' was skipped: never seen, but {by} {verb} it"

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (one ``alert`` line of the event log; step indices from 0)."""
        return {
            "event": "alert",
            "kind": self.kind,
            "segment": self.segment,
            "t": self.t,
            "missing": self.missing,
            "missing_name": self.missing_name,
            "needed_by": list(self.needed_by),
            "needed_by_names": list(self.needed_by_names),
            "message": self.message,
        }


class AlertMonitor:
    """The alert rules of the module docstring, applied one segment at a time.

    Parameters
    ----------
    dependency : (K, K) array
        ``D[i, j] = P(step j is a prerequisite of step i)``.
    steps : sequence of str
        The task's step texts (K).
    threshold : float
        ``D[k, j]`` level in [0, 1] from which k needs j.
    done_level : float
        Running progress in [0, 1] from which a step counts as observed done.
    segment_duration : float
        Seconds per segment (an alert's ``t`` is its segment's end).

    Attributes
    ----------
    seen : (K,) bool array
        The steps seen so far.
    raised : list of Alert
        Every alert raised so far, in order.
    """

    def __init__(
        self,
        dependency: np.ndarray,
        steps: Sequence[str],
        *,
        threshold: float = DEFAULT_THRESHOLD,
        done_level: float = DONE_LEVEL,
        segment_duration: float = SEGMENT_DURATION,
    ) -> None:
        self.need = needs(dependency, threshold)
        self.steps = tuple(steps)
        if self.need.shape[0] != len(self.steps):
            raise ValueError(
                f"dependency is {self.need.shape}, the task has {len(self.steps)} steps"
            )
        self.threshold = float(threshold)
        self.done_level = check_level("done_level", done_level)
        self.segment_duration = float(segment_duration)
        self.last = last_steps(self.need)
        self._index = {name: i for i, name in enumerate(self.steps)}
        self.reset()

    def reset(self) -> None:
        """Forget everything seen and raised."""
        k = len(self.steps)
        self.seen = np.zeros(k, dtype=bool)
        self._pairs: set[tuple[int, int]] = set()
        self._skipped = np.zeros(k, dtype=bool)
        self.segment = -1
        self.finished = False
        self.raised: list[Alert] = []

    def update(self, segment: int, announced: int | None, progress: np.ndarray) -> list[Alert]:
        """Apply one segment: its newly announced state (an index; None or K for none or
        nothing) and the running progress (K,); returns the alerts it raises."""
        k = len(self.steps)
        self.segment = int(segment)
        self.seen |= np.asarray(progress, dtype=np.float64)[:k] >= self.done_level
        if announced is None or not 0 <= announced < k:
            return []
        alerts = []
        for j in np.flatnonzero(self.need[announced] & ~self.seen):
            if (announced, int(j)) not in self._pairs:
                self._pairs.add((announced, int(j)))
                alerts.append(self._alert("missing_prerequisite", int(j), (announced,)))
        self.seen[announced] = True
        if self.last[announced]:
            alerts += self._skipped_now()
        self.raised += alerts
        return alerts

    def feed(self, estimate: Any) -> list[Alert]:
        """:meth:`update` from an :class:`~baglm_nb.core.online.Estimate` (names to indices)."""
        announced = None if estimate.announced is None else self._index.get(estimate.announced)
        return self.update(estimate.segment, announced, estimate.progress)

    def finish(self) -> list[Alert]:
        """The end of the video: the ``skipped`` alerts still due (once; later calls: [])."""
        if self.finished or self.segment < 0:
            return []
        self.finished = True
        alerts = self._skipped_now()
        self.raised += alerts
        return alerts

    def _skipped_now(self) -> list[Alert]:
        alerts = []
        for j in np.flatnonzero(~self.seen & ~self._skipped):
            by = np.flatnonzero(self.seen & self.need[:, j])
            if by.size:
                self._skipped[j] = True
                alerts.append(self._alert("skipped", int(j), tuple(int(b) for b in by)))
        return alerts

    def _alert(self, kind: str, missing: int, by: tuple[int, ...]) -> Alert:
        s = self.segment
        return Alert(
            kind,
            s,
            (s + 1) * self.segment_duration,
            missing,
            self.steps[missing],
            by,
            tuple(self.steps[b] for b in by),
        )


def alerts_for(
    dependency: np.ndarray,
    steps: Sequence[str],
    announced: Sequence[int | None],
    progress: np.ndarray,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    done_level: float = DONE_LEVEL,
    segment_duration: float = SEGMENT_DURATION,
) -> list[Alert]:
    """A whole video's alerts, the end of the video included (the batch form).

    ``announced`` (S,) holds each segment's newly announced state (an index, or None / -1 / K
    for nothing or none) and ``progress`` (S, K) the running progress after each segment; the
    other parameters are :class:`AlertMonitor`'s.
    """
    monitor = AlertMonitor(
        dependency,
        steps,
        threshold=threshold,
        done_level=done_level,
        segment_duration=segment_duration,
    )
    progress = np.asarray(progress, dtype=np.float64)
    if len(announced) != len(progress):
        raise ValueError(f"announced has {len(announced)} segments, progress {len(progress)}")
    out: list[Alert] = []
    for s, (said, prog) in enumerate(zip(announced, progress, strict=True)):
        out += monitor.update(s, None if said is None else int(said), prog)
    return out + monitor.finish()
