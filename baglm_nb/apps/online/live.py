"""Follow a live source in real time: the consumer side of :mod:`baglm_nb.inputs.live`.

:func:`follow_live` takes a :class:`~baglm_nb.inputs.live.LiveReader`'s segments (see
:func:`~baglm_nb.inputs.live.live_reader_for`) as they arrive, scores them with an
:class:`~baglm_nb.core.online.OnlineGrounder` and yields an
:class:`~baglm_nb.core.online.Estimate` per scored segment and a
:class:`~baglm_nb.inputs.live.Gap` per span it did not score. The lag policy is the reader's
(``"drop"``: always the newest complete segment, ``"queue"``: every segment); the filter steps
over a gap as :meth:`~baglm_nb.core.online.OnlineGrounder.skip` says (by default it predicts
the missed rows). Each estimate carries its latency split (``decode``, ``wait``, ``score``,
``filter``) and its ``lag`` behind live.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from baglm_nb.apps.online.ending import EndReason, raise_if_stopped
from baglm_nb.core.online import Estimate, OnlineGrounder
from baglm_nb.inputs.live import End, Gap, LiveReader

__all__ = ["follow_live"]

#: How often (s) the consumer looks at the stall watchdog while nothing arrives.
_POLL_S = 0.25


def follow_live(
    reader: LiveReader,
    grounder: OnlineGrounder,
    *,
    on_end: Callable[[EndReason], Any] | None = None,
    stop: threading.Event | None = None,
) -> Iterator[Estimate | Gap]:
    """Score ``reader``'s segments as they arrive (starting it if needed).

    Yields an :class:`Estimate` per scored segment and a :class:`Gap` per skipped span, in
    stream order. Stops when the reader ends; ``on_end`` receives an :class:`EndReason`
    (``failed`` when the source broke, stalled or could not be reconnected; a count of packets
    that failed to decode is appended). When no frame has arrived for ``timeout`` seconds
    (checked every ``_POLL_S``) and the reader may not reconnect, the run ends as stalled here,
    whatever FFmpeg's own timeouts do (they can take twice as long); a reader that may
    reconnect gets ``2 * timeout + 1`` seconds to do so. Closing the
    generator (or Ctrl-C) stops the reader. ``stop`` (set by a Ctrl-C handler) raises
    ``KeyboardInterrupt`` at the next poll, at most ``_POLL_S`` later, even on a stalled stream
    and even when Python lost the interrupt itself (one raised inside a finaliser is dropped).
    """
    if reader.segment_duration != grounder.segment_duration:
        raise ValueError(
            f"the reader cuts {reader.segment_duration}-s segments, the grounder "
            f"expects {grounder.segment_duration}-s ones"
        )
    if not reader.started:
        reader.start()
    may_reconnect = reader.source.reconnectable and (reader.reconnect or reader.reconnect_window)
    backstop = 2 * reader.timeout + 1 if may_reconnect else reader.timeout
    try:
        while True:
            items = reader.take(_POLL_S)
            raise_if_stopped(stop)
            if not items:
                idle = time.perf_counter() - reader.activity
                if idle > backstop and reader.source.kind != "file":
                    _finish(
                        reader,
                        End(
                            f"{reader.source.label}: no frames for {idle:.1f} s "
                            f"(--timeout {reader.timeout:g}): the stream stalled",
                            True,
                        ),
                        on_end,
                    )
                    return
                continue
            for item in items:
                if isinstance(item, End):
                    _finish(reader, item, on_end)
                    return
                if isinstance(item, Gap):
                    yield from _skip(grounder, item)
                    continue
                if item.index > grounder.segment:  # cannot happen: the reader reports gaps
                    s, d = grounder.segment, grounder.segment_duration
                    hole = Gap(s, item.index - s, s * d, item.t_start, "no frames")
                    yield from _skip(grounder, hole)
                yield _score(grounder, item)
    finally:
        reader.stop()


def _skip(grounder: OnlineGrounder, gap: Gap) -> Iterator[Gap]:
    if gap.first != grounder.segment:
        raise RuntimeError(f"gap at segment {gap.first}, but the grounder is at {grounder.segment}")
    grounder.skip(gap.count)
    yield gap


def _score(grounder: OnlineGrounder, segment) -> Estimate:
    """Score one :class:`~baglm_nb.inputs.live.LiveSegment`; fill in its latency and lag."""
    taken = time.perf_counter()
    if segment.index != grounder.segment:
        raise RuntimeError(
            f"segment {segment.index} arrived, the grounder is at {grounder.segment}"
        )
    est = grounder.push(segment.frames, decode_s=segment.decoded - segment.arrived)
    est.latency["wait"] = taken - segment.decoded
    est.lag = time.perf_counter() - segment.arrived
    est.marks = {
        "arrived": segment.arrived,
        "decoded": segment.decoded,
        "taken": taken,
        "frame_time": float(segment.times[-1]),
        "frame_pts": float(segment.pts),
    }
    return est


def _finish(reader: LiveReader, end: End, on_end) -> None:
    text = end.reason
    if reader.decode_errors:
        text += (
            f" ({reader.decode_errors} packets failed to decode; the last: "
            f"{reader.last_decode_error})"
        )
    if on_end:
        on_end(EndReason(text, end.error))
