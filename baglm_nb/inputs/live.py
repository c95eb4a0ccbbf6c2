"""Live sources: read an endless stream or a camera frame by frame, as the frames arrive.

:func:`live_source` turns what the user typed into a :class:`LiveSource` (no I/O):

* ``rtsp://`` / ``rtsps://`` (over TCP by default, ``transport="udp"`` for UDP), ``udp://``,
  ``rtmp://``, ``rtp://``, ``tcp://``, ``srt://``: live streams FFmpeg reads (SRT only where
  PyAV's FFmpeg is built with it; the PyPI wheel is not);
* ``http(s)://``: live MPEG-TS or HLS when the stream has no known duration, else a file (the
  decision is made when it is opened, :func:`open_live`);
* a V4L2 camera: ``/dev/videoN``, or ``camera=N``;
* any file with ``live=True`` (read front to back on the stream grid, e.g. to compare a stream
  with its file, or, paced at its frame rate, to stand in for a camera).

:class:`LiveReader` decodes in a thread with PyAV (FFmpeg; torchcodec cannot read a stream
without scanning it first: its exact mode reads to the end, its approximate mode refuses a
stream of unknown length). It samples frames on :class:`~baglm_nb.inputs.grid.StreamGrid` (the
stream's own timestamps), converts only the sampled frames to RGB, and hands whole
:class:`LiveSegment` s to the consumer through a :class:`SegmentBuffer` whose lag policy says
what happens when the consumer is slower than real time:

* ``"drop"`` (the default for live sources): the consumer gets the newest complete segment; the
  older ones become an explicit :class:`Gap` (reason ``"lag"``), so the backlog stays bounded;
* ``"queue"``: every segment is kept (files apply back-pressure: the reader waits).

A stall (no frame for ``timeout`` seconds), a dropped connection or the end of the stream ends
the reader with an :class:`End`: an error when the source vanished without sending its end
(:class:`~baglm_nb.inputs.stream_end.EndWatch`: "the source broke"), not when it sent it. With
``reconnect=N`` (or ``reconnect_window``) a lost source is first reopened up to N times per loss
(or until that many seconds after it), after the backoff of
:func:`~baglm_nb.inputs.stream_end.reconnect_delay`, and the lost span becomes a :class:`Gap`
(reason ``"reconnect"``). What the reader hands over lives in :mod:`baglm_nb.inputs.live_items`.
"""

from __future__ import annotations

import errno
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from baglm_nb.inputs.grid import StreamGrid
from baglm_nb.inputs.live_items import LAG_POLICIES, End, Gap, LiveSegment, SegmentBuffer
from baglm_nb.inputs.stream_end import EndWatch, reconnect_delay
from baglm_nb.inputs.urls import redact_url
from baglm_nb.inputs.variants import SAMPLING_FPS, SEGMENT_DURATION
from baglm_nb.inputs.video_records import missing_file

__all__ = [
    "LAG_POLICIES",
    "LIVE_SCHEMES",
    "End",
    "Gap",
    "LiveReader",
    "LiveSegment",
    "LiveSource",
    "SegmentBuffer",
    "SourceError",
    "live_reader_for",
    "live_source",
    "open_live",
]

#: URL schemes that are always live streams.
LIVE_SCHEMES = frozenset({"rtsp", "rtsps", "rtmp", "rtmps", "udp", "rtp", "srt", "tcp"})
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_CAMERA = re.compile(r"^/dev/video\d+$")
#: A live frame this much later (s) than its timestamp says is one the demuxer held back
#: (:meth:`LiveReader._frame_activity`; at least a quarter of the stall timeout).
_HELD_BACK_S = 0.5
#: What :meth:`LiveReader._read` returns when the source sent its end (no reconnection).
_SENT_END = "sent its end"


class SourceError(RuntimeError):
    """A live source that cannot be opened or read; the message starts with the source."""

    def __init__(self, label: str, message: str):
        self.label = label
        super().__init__(f"{label}: {message}")


@dataclass(frozen=True)
class LiveSource:
    """A source read frame by frame (see :func:`live_source`).

    Attributes
    ----------
    url : str
        What FFmpeg opens (a URL, a device or a file path).
    kind : str
        ``"stream"`` (a network stream), ``"http"`` (live or a file, decided at opening),
        ``"camera"`` (V4L2) or ``"file"``.
    options : dict
        FFmpeg options (e.g. ``rtsp_transport``).
    format : str or None
        The FFmpeg input format (``"video4linux2"`` for a camera), else probed.
    """

    url: str
    kind: str
    options: dict[str, str] = field(default_factory=dict, compare=False)
    format: str | None = None

    @property
    def label(self) -> str:
        """How messages name the source."""
        url = redact_url(self.url)
        return f"camera {url}" if self.kind == "camera" else url

    @property
    def reconnectable(self) -> bool:
        """Whether a lost source is worth reopening (not a file)."""
        return self.kind != "file"


def live_source(
    source: str | Path | None = None,
    *,
    camera: int | None = None,
    transport: str = "tcp",
    live: bool | None = None,
) -> LiveSource | None:
    """The live source that ``source`` or ``camera`` names, or None for a file.

    Parameters
    ----------
    source : str or Path, optional
        A URL, ``/dev/videoN`` or a file path.
    camera : int, optional
        A V4L2 camera number (``/dev/video<camera>``); excludes ``source``.
    transport : {"tcp", "udp"}
        RTSP transport.
    live : bool, optional
        True: read ``source`` as a live stream even if it is a file; False: never (an http(s)
        URL is then a file); None: decide from the source.

    Raises
    ------
    ValueError
        For a bad combination or value (both or neither of ``source`` and ``camera``, a
        negative camera, an unknown transport, ``live=False`` with a stream or camera).
    """
    if transport not in ("tcp", "udp"):
        raise ValueError(f"--transport must be 'tcp' or 'udp', got {transport!r}")
    if camera is not None:
        if source is not None:
            raise ValueError("give either SOURCE or --camera, not both")
        if isinstance(camera, bool) or not isinstance(camera, int) or camera < 0:
            raise ValueError(f"--camera takes a camera number >= 0 (/dev/videoN), got {camera!r}")
        source = f"/dev/video{camera}"
    if source is None:
        raise ValueError("a source is required: a file, a URL or --camera N")
    text = str(source)
    match = _SCHEME.match(text)
    scheme = match.group(1).lower() if match else None
    if _CAMERA.match(text):
        found = LiveSource(text, "camera", {}, "video4linux2")
    elif scheme in LIVE_SCHEMES:
        options = {"rtsp_transport": transport} if scheme.startswith("rtsp") else {}
        found = LiveSource(text, "stream", options)
    elif scheme in ("http", "https"):
        found = LiveSource(text, "stream" if live else "http")
    else:
        found = LiveSource(text, "file") if live else None
    if live is False and found is not None and found.kind in ("stream", "camera"):
        raise ValueError(f"{text} is a live source; it cannot be read as a file (--no-live)")
    if live is False:
        return None
    return found


#: The read errors of a connection that was cut (as FFmpeg's HTTP reader reports a chunk cut
#: in two): on a chunked HTTP source they mean its end never came (:meth:`EndWatch.broke`).
_CUT = frozenset({errno.EIO, errno.ECONNRESET, errno.EPIPE})


def _describe(exc: BaseException) -> str:
    """One line for an FFmpeg/OS error (``strerror`` without the repeated URL)."""
    if type(exc).__name__ == "ExitError":  # PyAV's own timeout interrupted FFmpeg
        return "timed out"
    text = getattr(exc, "strerror", None)
    if not text:
        lines = str(exc).strip().splitlines()
        text = lines[0] if lines else ""
    return text or type(exc).__name__


def open_live(source: LiveSource, timeout: float = 10.0) -> Any | None:
    """Open ``source`` with PyAV; returns the container, or None for an http(s) file.

    An ``"http"`` source with a known duration is a file (None is returned; read it with
    :func:`baglm_nb.inputs.video.iter_segments`); without one it is a live stream. Opening
    waits at most ``timeout`` seconds.

    Raises
    ------
    FileNotFoundError
        For a camera device or file that does not exist.
    SourceError
        When the source cannot be opened or has no video stream (the message names it and
        FFmpeg's reason).
    """
    import av

    missing = missing_file(Path(source.url)) if source.kind in ("camera", "file") else None
    if missing:
        if source.kind == "camera":
            raise FileNotFoundError(f"no camera at {source.url}")
        raise FileNotFoundError(f"{source.url}: {missing}")
    options = dict(source.options)
    micro = str(int(timeout * 1e6))
    if source.url.lower().startswith("rtsp"):
        options.setdefault("timeout", micro)  # socket I/O timeout (FFmpeg's RTSP option)
    try:
        container = av.open(
            source.url, format=source.format, options=options, timeout=(timeout, timeout)
        )
    except (av.FFmpegError, OSError) as exc:
        why = _describe(exc)
        if why == "Protocol not found":
            why += f": the FFmpeg inside PyAV {av.__version__} cannot read {source.url.split(':')[0]}://"
        raise SourceError(source.label, f"cannot open ({why})") from None
    if not container.streams.video:
        container.close()
        raise SourceError(source.label, "no video stream")
    if source.kind == "http" and container.duration is not None:
        container.close()
        return None
    return container


# --------------------------------------------------------------------------------------------
# The reader


class LiveReader:
    """Decode a :class:`LiveSource` in a thread and hand over whole segments.

    Parameters
    ----------
    source : LiveSource
        What to read.
    container : optional
        An already opened PyAV container of ``source`` (:func:`open_live`), e.g. opened to
        check the source before a model loads; else it is opened in the thread.
    segment_duration, sampling_fps
        The grid (:class:`~baglm_nb.inputs.grid.StreamGrid`).
    lag : {"drop", "queue"}
        The lag policy (:class:`SegmentBuffer`); a file read with ``"queue"`` and
        ``pace="fast"`` applies back-pressure instead of buffering.
    timeout : float
        Seconds without a frame before the source counts as stalled (and opening's limit).
    reconnect : int
        Reopen a lost source up to this many times per loss (not a file), waiting
        :func:`~baglm_nb.inputs.stream_end.reconnect_delay` before each attempt.
    reconnect_window : float
        Also keep reopening until this many seconds after the loss (0: ``reconnect`` alone).
    pace : {"fast", "realtime"}
        A file's frames as fast as they decode, or at their own rate (as a camera would).

    Attributes
    ----------
    activity : float
        ``time.perf_counter()`` of the newest frame or connection attempt (a stall watchdog).
    frames_read : int
        Frames decoded so far.
    decode_errors : int
        Packets that failed to decode (skipped: their frames are a hole in the stream).
    last_decode_error : str or None
        FFmpeg's message for the last of them.
    """

    def __init__(
        self,
        source: LiveSource,
        container: Any | None = None,
        *,
        segment_duration: float = SEGMENT_DURATION,
        sampling_fps: float = SAMPLING_FPS,
        lag: str = "drop",
        timeout: float = 10.0,
        reconnect: int = 0,
        pace: str = "fast",
        reconnect_window: float = 0.0,
    ) -> None:
        if pace not in ("fast", "realtime"):
            raise ValueError(f"pace must be 'fast' or 'realtime', got {pace!r}")
        if not timeout > 0 or int(reconnect) != reconnect or reconnect < 0:
            raise ValueError(f"need timeout > 0 and reconnect >= 0, got {timeout}, {reconnect}")
        if not reconnect_window >= 0:
            raise ValueError(f"--reconnect-window must be >= 0 seconds, got {reconnect_window}")
        self.source, self.timeout, self.reconnect, self.pace = source, timeout, reconnect, pace
        self.reconnect_window = float(reconnect_window)
        self.grid = StreamGrid(segment_duration, sampling_fps)
        self.segment_duration = float(segment_duration)
        paced = source.kind == "file" and pace == "fast"
        self.buffer = SegmentBuffer(lag, maxsize=2 if paced and lag == "queue" else None)
        self._container = container
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="live-reader", daemon=True)
        self.activity = time.perf_counter()
        self.frames_read = self.decode_errors = 0
        self.last_decode_error: str | None = None
        self._origin: float | None = None  # pts (s) of stream time 0 on this connection
        self._last_raw: float | None = None  # pts (s) of the last frame
        self._last_t: float | None = None  # stream time of the last frame
        self._last_wall = 0.0  # perf_counter() of the last frame
        self._period = 1 / 30
        self._samples: list[tuple[int, np.ndarray, float]] = []

    @property
    def started(self) -> bool:
        """Whether :meth:`start` was called."""
        return self._thread.ident is not None

    def start(self) -> LiveReader:
        """Start reading (returns self)."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Ask the thread to stop (it ends at its next packet or timeout)."""
        self._stop.set()
        self.buffer.close()

    def take(self, timeout: float | None = None) -> list[LiveSegment | Gap | End]:
        """The next items (see :meth:`SegmentBuffer.take`)."""
        return self.buffer.take(timeout)

    # ---------------------------------------------------------------------------------------

    def _run(self) -> None:
        attempts, end, lost = 0, None, 0.0
        try:
            while not self._stop.is_set():
                container, self._container = self._container, None
                before = self.frames_read
                self.activity = time.perf_counter()
                try:
                    container = container or open_live(self.source, self.timeout)
                    if container is None:
                        raise SourceError(self.source.label, "not a live stream (it has a length)")
                    error = self._read(container, reconnecting=attempts > 0 or before > 0)
                except (SourceError, FileNotFoundError) as exc:
                    error = str(exc).removeprefix(f"{self.source.label}: ")
                finally:
                    if container is not None:
                        container.close()
                if self.frames_read > before or attempts == 0:
                    attempts, lost = 0, time.perf_counter()  # a new loss: N new attempts
                if self._stop.is_set():
                    return
                if error is _SENT_END or not self._retry(attempts, lost):
                    end = self._end(None if error is _SENT_END else error, attempts)
                    return
                attempts += 1
                self._stop.wait(reconnect_delay(attempts))
        except Exception as exc:  # noqa: BLE001 - the consumer must always get an End
            end = End(f"{self.source.label}: the reader failed ({type(exc).__name__}: {exc})", True)
        finally:
            self.buffer.put(end or End(f"{self.source.label}: stopped", False))

    def _retry(self, attempts: int, lost: float) -> bool:
        """Whether to reopen the source after ``attempts`` tries since the loss at ``lost``."""
        if not self.source.reconnectable:
            return False
        window = time.perf_counter() - lost < self.reconnect_window
        return attempts < self.reconnect or window

    def _end(self, error: str | None, attempts: int) -> End:
        label = self.source.label
        tried = f" (after {attempts} reconnection attempts)" if attempts else ""
        if error is None:
            what = "the file ended" if self.source.kind == "file" else "the stream ended"
            return End(f"{label}: {what}{tried}", attempts > 0)
        return End(f"{label}: {error}{tried}", True)

    def _read(self, container, *, reconnecting: bool) -> str | None:
        """Demux and decode until the end (:data:`_SENT_END`, or None when the source cannot
        say) or an error (its description)."""
        stream = container.streams.video[0]
        if stream.average_rate:
            self._period = 1 / float(stream.average_rate)
        base, start = stream.time_base, time.perf_counter()
        self._origin = None
        with EndWatch(self.source.url, self.source.options.get("rtsp_transport", "tcp")) as watch:
            error = self._demux(container, stream, base, start, reconnecting, watch)
            if error is None:  # an end of file: did the source send its end?
                return watch.broke() or _SENT_END
        return error

    def _demux(self, container, stream, base, start, reconnecting: bool, watch) -> str | None:
        """:meth:`_read`'s loop: None at an end of file, else the error's description."""
        import av

        try:
            for packet in container.demux(stream):
                arrived = time.perf_counter()
                watch.prune()
                if self._stop.is_set():
                    return None
                with watch.paused():  # decoding and converting: FFmpeg's usual log level
                    try:
                        frames = packet.decode()
                    except av.FFmpegError as exc:  # a damaged packet: a hole in the stream
                        self.decode_errors += 1
                        self.last_decode_error = _describe(exc)
                        continue
                    for frame in frames:
                        raw = None if frame.pts is None else float(frame.pts * base)
                        self._frame(
                            frame, self._stream_time(raw, arrived), arrived, start, reconnecting
                        )
                        reconnecting = False
        except (av.FFmpegError, OSError) as exc:
            if self._stop.is_set():
                return None
            idle = time.perf_counter() - self.activity
            if idle >= 0.9 * self.timeout:
                return f"no frames for {idle:.1f} s: the stream stalled ({_describe(exc)})"
            if self.source.kind == "file":
                return f"reading failed ({_describe(exc)})"
            cut = getattr(exc, "errno", None) in _CUT  # the connection, not the data, failed
            if cut and watch.kind == "http" and (broke := watch.broke(_describe(exc))):
                return broke  # a chunked stream cut inside a chunk, not between two
            return f"the source broke ({_describe(exc)})"
        return None

    def _stream_time(self, raw: float | None, wall: float) -> float:
        """The frame's time on the stream's clock: 0 at the very first frame; a new connection
        (or a timestamp jump that the wall clock contradicts by more than 5 s) is re-anchored so
        that the stream time goes on with the wall clock."""
        if raw is None:  # no timestamp: one frame period on (0 for a connection's first frame)
            raw = 0.0 if self._origin is None else self._last_raw + self._period
        if self._origin is None:
            lost = 0.0 if self._last_t is None else self._last_t + (wall - self._last_wall)
            self._origin = raw - lost
        elif self.source.kind != "file":
            jump, elapsed = raw - self._last_raw, wall - self._last_wall
            if abs(jump - elapsed) > 5.0 and abs(jump) > self.segment_duration:
                self._origin = raw - (self._last_t + elapsed)
        self._last_raw = raw
        return raw - self._origin

    def _frame(self, frame, t: float, arrived: float, start: float, reconnecting: bool) -> None:
        """Place one decoded frame on the grid; emit gaps and whole segments."""
        if self.pace == "realtime" and self.source.kind == "file":
            time.sleep(max(0.0, start + t - time.perf_counter()))
        if reconnecting:
            self._samples.clear()
            self._gap(self.grid.restart(t), "reconnect")
        samples, skipped = self.grid.feed(t)
        if len(skipped):
            self._samples.clear()
            self._gap(skipped, "no frames")
        self.frames_read += 1
        self.activity = self._frame_activity(t, arrived)
        self._last_t, self._last_wall = t, arrived
        if not samples:
            return
        image = frame.to_ndarray(format="rgb24")
        per = self.grid.per_segment
        for n in samples:
            self._samples.append((n, image, t))
            if (n + 1) % per == 0:
                self._segment(n // per, arrived)

    def _frame_activity(self, t: float, arrived: float) -> float:
        """When the frame at stream time ``t``, handed over at ``arrived``, counts as activity.

        Normally when it arrived. A live stream's frame that came after a silence much longer
        than its stream time advanced is one the demuxer held back (FFmpeg's parser releases a
        frame when the next one starts, or when a read times out: the last frame before a
        stall comes out ``timeout`` seconds late): it counts when it was due, the previous
        activity plus its advance, so a stall is timed from the last frame that really came.
        The next frame that arrives in step with its timestamp counts when it arrived again.
        """
        if self._last_t is None or self.source.kind == "file":
            return arrived
        advance = max(t - self._last_t, 0.0)
        late = (arrived - self._last_wall) - advance
        if late > max(_HELD_BACK_S, 0.25 * self.timeout):
            return min(arrived, self.activity + advance)
        return arrived

    def _gap(self, segments: range, reason: str) -> None:
        if len(segments):
            d = self.segment_duration
            self.buffer.put(
                Gap(segments.start, len(segments), segments.start * d, segments.stop * d, reason)
            )

    def _segment(self, index: int, arrived: float) -> None:
        per, d = self.grid.per_segment, self.segment_duration
        mine = [s for s in self._samples if s[0] // per == index]
        self._samples.clear()
        if len(mine) != per or len({s[1].shape for s in mine}) != 1:
            self.buffer.put(Gap(index, 1, index * d, (index + 1) * d, "frame size"))
            return
        import torch  # here, not at the top: what only names a Gap or a source needs no torch

        frames = torch.from_numpy(np.stack([s[1] for s in mine])).permute(0, 3, 1, 2)
        times = np.array([s[2] for s in mine])
        pts = float(times[-1] + self._origin)
        self.buffer.put(
            LiveSegment(
                index,
                frames.contiguous(),
                times,
                index * d,
                (index + 1) * d,
                arrived,
                time.perf_counter(),
                pts,
            )
        )


def live_reader_for(
    source: LiveReader | LiveSource | str | os.PathLike | int,
    *,
    segment_duration: int,
    live: bool | None = None,
    lag: str | None = None,
    timeout: float = 10.0,
    reconnect: int = 0,
    transport: str = "tcp",
    pace: str = "fast",
    camera: int | None = None,
    sampling_fps: float = SAMPLING_FPS,
    reconnect_window: float = 0.0,
) -> LiveReader | None:
    """A (not yet started) :class:`LiveReader` of ``source``, or None when it is a file.

    ``source`` may be a :class:`LiveReader` (returned as is), a :class:`LiveSource`, or what
    :func:`live_source` takes; it is opened here (an http(s) URL with a length is a file: None).
    ``segment_duration`` is the grounder's; ``lag`` defaults to ``"drop"``, or ``"queue"`` for a
    file read with ``live=True``. Raises ValueError for bad arguments (:func:`live_source`),
    FileNotFoundError for a missing camera or file, :class:`SourceError` when it cannot be opened.
    """
    if isinstance(source, LiveReader):
        return source
    src = (
        source
        if isinstance(source, LiveSource)
        else live_source(source, camera=camera, transport=transport, live=live)
    )
    if src is None:
        return None
    container = open_live(src, timeout)
    if container is None:
        return None
    policy = lag or ("queue" if src.kind == "file" else "drop")
    return LiveReader(
        src,
        container,
        segment_duration=segment_duration,
        sampling_fps=sampling_fps,
        lag=policy,
        timeout=timeout,
        reconnect=reconnect,
        pace=pace,
        reconnect_window=reconnect_window,
    )
