"""Did a live source send its end, or did it vanish? And how long to wait before reconnecting.

FFmpeg returns the same end of file whether a server ended its stream or died: an HTTP server
killed mid-stream and one that finished both look like a clean end to PyAV (a kill that cuts a
chunk in two is a read error instead, which :meth:`EndWatch.broke` takes as well). The difference is
in FFmpeg's own log, which :class:`EndWatch` reads (PyAV's per-thread log capture, the reader
thread's messages only):

* ``http(s)://`` with chunked transfer (FFmpeg's own HTTP server, most live servers): the stream
  ended when its last chunk was the terminating empty one;
* ``rtsp(s)://`` over TCP (the default): the stream ended when the server sent RTCP BYE for it
  (over UDP the BYE is one datagram a busy reader can lose: there an end of file is an end);
* other schemes carry no end marker FFmpeg reports (UDP has none at all: a sender that stops is
  a stall); their end of file counts as an end, as before.

A source without its end "broke"; the message gives FFmpeg's last warning or error, else the
read error that cut it, if any.

Reconnecting (:func:`reconnect_delay`): attempt ``n`` (1, 2, ...) waits
``min(RECONNECT_FIRST_DELAY_S * 2 ** (n - 1), RECONNECT_MAX_DELAY_S)`` seconds first: 0.5, 1, 2,
4, 5, 5, ... s. ``--reconnect N`` makes N attempts per loss; ``--reconnect-window SECONDS``
keeps trying until that long after the loss (e.g. 30 for a camera or server that restarts).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = [
    "RECONNECT_FIRST_DELAY_S",
    "RECONNECT_MAX_DELAY_S",
    "EndWatch",
    "reconnect_delay",
]

#: The wait before the first reconnection attempt (s); it doubles with each attempt.
RECONNECT_FIRST_DELAY_S = 0.5
#: The longest wait between two reconnection attempts (s).
RECONNECT_MAX_DELAY_S = 5.0

#: FFmpeg's log messages that mark a stream's end (see the module docstring).
_CHUNK = "Chunked encoding data size: "
_BYE = "Received BYE for stream"
#: Captured messages kept at most (older ones are dropped; only the newest matter).
_KEEP = 2000
#: FFmpeg log levels (PyAV's numbers) of a warning or an error, and of silence.
_WARNING = 24
_QUIET = -8
#: The FFmpeg components whose warnings describe a source of each kind.
_PROTOCOLS = {"http": {"http", "https", "tcp", "tls"}, "rtsp": {"rtsp", "tcp"}}


def reconnect_delay(attempt: int) -> float:
    """Seconds to wait before reconnection attempt ``attempt`` (1, 2, ...)."""
    if attempt < 1:
        raise ValueError(f"attempt must be >= 1, got {attempt}")
    return min(RECONNECT_FIRST_DELAY_S * 2 ** min(attempt - 1, 16), RECONNECT_MAX_DELAY_S)


class EndWatch:
    """Capture FFmpeg's log in the current thread while a source is read (a context manager).

    Parameters
    ----------
    url
        The source's URL; its scheme says which end marker to look for.
    transport
        The RTSP transport: over ``"udp"`` the BYE is one datagram that a busy reader can lose,
        so there the end of file counts as an end, as for schemes without a marker.
    """

    def __init__(self, url: str, transport: str = "tcp") -> None:
        scheme = url.split("://", 1)[0].lower() if "://" in url else ""
        rtsp = scheme in ("rtsp", "rtsps") and transport != "udp"
        self.kind = "http" if scheme in ("http", "https") else "rtsp" if rtsp else None
        self._capture: list | None = None
        self._capturing: Any = None
        self._level: Any = None
        self._repeats = True

    def __enter__(self) -> EndWatch:
        if self.kind is None:
            return self
        import av.logging

        self._level = av.logging.get_level()
        threshold = av.logging.TRACE if self.kind == "http" else av.logging.DEBUG
        if self._level is None or self._level < threshold:
            av.logging.set_level(threshold)
        # every message counts: PyAV's de-duplication (global, across threads) would hide a
        # stream's "Received BYE" when another stream's was the last message logged
        self._repeats = av.logging.get_skip_repeated()
        av.logging.set_skip_repeated(False)
        self._capturing = av.logging.Capture(True)
        self._capture = self._capturing.__enter__()  # the list of (level, name, message)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._capture is not None:
            import av.logging

            self._capturing.__exit__(None, None, None)
            av.logging.set_level(self._level)
            av.logging.set_skip_repeated(self._repeats)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """FFmpeg's usual log level for a while (around decoding: the decoder's own debug
        messages would each take the GIL, which slows the reader down)."""
        if self._capture is None:
            yield
            return
        import av.logging

        watching = av.logging.get_level()
        # an int level keeps PyAV's callback in place (swapping callbacks while FFmpeg's other
        # threads log has lost UDP packets); -8 is FFmpeg's AV_LOG_QUIET
        av.logging.set_level(_QUIET if self._level is None else self._level)
        try:
            yield
        finally:
            av.logging.set_level(watching)

    def prune(self) -> None:
        """Drop old messages (call now and then while reading)."""
        if self._capture is not None and len(self._capture) > 2 * _KEEP:
            del self._capture[:-_KEEP]

    def broke(self, error: str | None = None) -> str | None:
        """After an end of file, or a read error (``error``, its description): why the source
        broke (it sent no end), or None. The last error named is FFmpeg's last logged warning
        or error, else ``error``."""
        if self._capture is None:
            return None
        messages = [m for m in self._capture if m[2]]
        if self.kind == "http":
            sizes = [m[2] for m in messages if m[2].startswith(_CHUNK)]
            if not sizes or sizes[-1].strip().endswith(" 0"):
                return None  # not chunked (a length was known), or the terminating chunk came
        elif any(m[2].startswith(_BYE) for m in messages):
            return None
        mine = _PROTOCOLS[self.kind]  # PyAV's repeat counter can hand over others' messages
        errors = [" ".join(m[2].split()) for m in messages if m[0] <= _WARNING and m[1] in mine]
        if not errors and error is not None:
            errors = [error]
        last = f"; last error: {errors[-1]}" if errors else ""
        return f"the source broke: the connection closed before the stream's end{last}"
