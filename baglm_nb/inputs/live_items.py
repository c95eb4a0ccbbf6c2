"""What a :class:`~baglm_nb.inputs.live.LiveReader` hands over, and the buffer between them.

A :class:`LiveSegment` (one whole segment's frames and times), a :class:`Gap` (segments not
scored, and why), an :class:`End` (the reader stopped: the source ended, or failed), through a
:class:`SegmentBuffer` whose lag policy (``"drop"`` or ``"queue"``) says what happens when the
consumer is slower than real time (see :mod:`baglm_nb.inputs.live`).
"""

from __future__ import annotations

import math
import threading
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch

__all__ = ["LAG_POLICIES", "End", "Gap", "LiveSegment", "SegmentBuffer"]

#: What happens when segments arrive faster than they are consumed (module docstring).
LAG_POLICIES = ("drop", "queue")


@dataclass(frozen=True)
class LiveSegment:
    """One whole segment read from a live source.

    Attributes
    ----------
    index : int
        Segment number on the stream's clock (segment ``s`` spans ``[s * d, (s + 1) * d)``).
    frames : torch.Tensor
        uint8 ``(F, 3, H, W)``.
    times : numpy.ndarray
        ``(F,)`` each sampled frame's time on the stream's clock (s, 0 = the first frame).
    t_start, t_end : float
        The segment's nominal span in seconds.
    arrived, decoded : float
        ``time.perf_counter()`` when the packet of the segment's last frame was received, and
        when that frame was decoded and converted (the segment was then complete).
    pts : float
        The container's own timestamp (s) of that frame (for matching it with a sender's log).
    """

    index: int
    frames: torch.Tensor
    times: np.ndarray
    t_start: float
    t_end: float
    arrived: float
    decoded: float
    pts: float = math.nan


@dataclass(frozen=True)
class Gap:
    """Segments ``first .. first + count - 1`` that were not scored, and why.

    ``reason``: ``"lag"`` (skipped to catch up with live, ``lag="drop"``), ``"reconnect"``
    (the connection was lost), ``"no frames"`` (a hole in the stream's timestamps) or
    ``"frame size"`` (the frame size changed inside the segment).
    """

    first: int
    count: int
    t_start: float
    t_end: float
    reason: str

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (one line of the event log)."""
        return {
            "event": "gap",
            "first_segment": self.first,
            "segments": self.count,
            "t_start": self.t_start,
            "t_end": self.t_end,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class End:
    """The reader stopped: ``error`` False when the source ended, True when it failed."""

    reason: str
    error: bool


class SegmentBuffer:
    """Segments, gaps and the end, handed from the reader thread to the consumer.

    ``lag="queue"`` hands items over one at a time, oldest first; with ``maxsize`` the reader
    waits while that many segments are pending (back-pressure, for files). ``lag="drop"``
    hands over everything pending, with every segment but the newest turned into a ``"lag"``
    :class:`Gap`.
    """

    def __init__(self, lag: str = "drop", maxsize: int | None = None) -> None:
        if lag not in LAG_POLICIES:
            raise ValueError(f"lag must be one of {LAG_POLICIES}, got {lag!r}")
        self.lag, self.maxsize = lag, maxsize
        self._items: deque = deque()
        self._cond = threading.Condition()
        self.closed = False

    def pending(self) -> int:
        """Segments waiting to be taken."""
        with self._cond:
            return sum(isinstance(i, LiveSegment) for i in self._items)

    def put(self, item: LiveSegment | Gap | End) -> None:
        """Add an item (waits while ``maxsize`` segments are pending, until :meth:`close`)."""
        with self._cond:
            while self.maxsize and isinstance(item, LiveSegment) and not self.closed:
                if sum(isinstance(i, LiveSegment) for i in self._items) < self.maxsize:
                    break
                self._cond.wait(0.1)
            self._items.append(item)
            self._cond.notify_all()

    def take(self, timeout: float | None = None) -> list[LiveSegment | Gap | End]:
        """The next items in order (empty after ``timeout`` seconds without one)."""
        with self._cond:
            if not self._items:
                self._cond.wait(timeout)
            if not self._items:
                return []
            if self.lag == "queue":
                item = self._items.popleft()
                self._cond.notify_all()
                return [item]
            items = list(self._items)
            self._items.clear()
            self._cond.notify_all()
        return _drop_all_but_newest(items)

    def close(self) -> None:
        """Release a reader waiting in :meth:`put`."""
        with self._cond:
            self.closed = True
            self._cond.notify_all()


def _drop_all_but_newest(items: list) -> list:
    """Every segment but the last one becomes a ``"lag"`` gap (adjacent ones merged)."""
    last = max((i for i, x in enumerate(items) if isinstance(x, LiveSegment)), default=-1)
    out: list = []
    for i, item in enumerate(items):
        if not isinstance(item, LiveSegment) or i == last:
            out.append(item)
            continue
        prev = out[-1] if out else None
        if isinstance(prev, Gap) and prev.reason == "lag" and prev.first + prev.count == item.index:
            out[-1] = Gap(prev.first, prev.count + 1, prev.t_start, item.t_end, "lag")
        else:
            out.append(Gap(item.index, 1, item.t_start, item.t_end, "lag"))
    return out
