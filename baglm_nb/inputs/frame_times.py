"""Files whose container timing cannot be trusted: read them on their frames' own timestamps.

torchcodec derives a file's frame rate and duration from the smallest and largest timestamp it
finds. One frame without a timestamp (an ordinary MPEG-TS remux of an MP4 can hold one) turns
that into nonsense: ``ffmpeg -i box.mp4 -c:v copy -f mpegts box.ts`` is reported at
``4.5e-12`` fps over ``1e14`` s, and the published frame grid would then ask for petabytes of
frames. :func:`implausible` says why such metadata cannot be used (one rule: a frame rate
outside ``(0, MAX_FPS]``, or a duration that differs from the container header's by more than a
segment); such a file is then

* measured from its packets' own timestamps (:func:`scan`: frame count, span, frame rate), and
  refused with the reason when those are implausible too;
* decoded front to back with PyAV (:func:`iter_timed_segments`), sampled on
  :class:`~baglm_nb.inputs.grid.StreamGrid`: sample ``n`` is the first frame shown at or after
  ``n / sampling_fps`` seconds on the file's own clock (0 = the stream's start time), the rule of
  a live source. The published rule needs a trustworthy frame count, which such a file lacks;
  the two grids agree at the start and differ by up to about half a second at the end of a video
  (:mod:`baglm_nb.inputs.grid`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from baglm_nb.inputs.grid import SEGMENT_DURATION, StreamGrid
from baglm_nb.inputs.variants import SAMPLING_FPS

__all__ = [
    "MAX_FPS",
    "FrameTiming",
    "frame_timed_info",
    "implausible",
    "iter_timed_segments",
    "scan",
    "timed_batches",
]

#: The highest frame rate taken at face value (frames per second).
MAX_FPS = 1000.0


def implausible(
    fps: float | None,
    duration_s: float | None,
    header_duration_s: float | None,
    segment_duration: float = SEGMENT_DURATION,
) -> str | None:
    """Why a file's reported frame rate or duration cannot be used, or None when they can.

    Parameters
    ----------
    fps
        The average frame rate reported (frames / duration).
    duration_s
        The duration the frame rate was computed from (a scan of the timestamps).
    header_duration_s
        The duration the container's header declares (None: unknown, not compared).
    segment_duration
        The tolerance: a segment's length in seconds.
    """
    if fps is None or not 0 < fps <= MAX_FPS:
        return f"a frame rate of {fps:g} fps" if fps is not None else "no frame rate"
    if duration_s is not None and header_duration_s:
        if abs(duration_s - header_duration_s) > segment_duration:
            return (
                f"a duration of {duration_s:.6g} s where its container declares "
                f"{header_duration_s:.6g} s"
            )
    return None


@dataclass(frozen=True)
class FrameTiming:
    """A file's timing measured from its packets' own timestamps (:func:`scan`)."""

    num_frames: int
    duration_s: float
    fps: float
    start_s: float


def scan(path: str | os.PathLike) -> FrameTiming:
    """Count a file's video packets and measure their timestamps' span (no decoding).

    The span runs from the stream's start time (else its smallest timestamp) to its largest
    timestamp plus one frame period; packets without a timestamp are counted, not timed.

    Raises
    ------
    ValueError
        When the file has no timed video packet, or its timing is implausible too
        (:func:`implausible`); the message says why.
    """
    with _open(path) as container:
        stream = container.streams.video[0]
        base = stream.time_base
        count, stamps = 0, []
        for packet in container.demux(stream):
            if packet.size:
                count += 1
                if packet.pts is not None:
                    stamps.append(float(packet.pts * base))
        start = float(stream.start_time * base) if stream.start_time is not None else None
    if not stamps:
        raise ValueError("no video packet carries a timestamp")
    start = min(stamps) if start is None else min(start, min(stamps))
    period = (max(stamps) - min(stamps)) / max(len(stamps) - 1, 1)
    duration = max(stamps) - start + period
    fps = count / duration if duration > 0 else 0.0
    why = implausible(fps, None, None)
    if why:
        raise ValueError(f"its frames' own timestamps give {why} too")
    return FrameTiming(count, duration, fps, start)


def _open(path: str | os.PathLike):
    """The PyAV container of a local file (the package opens PyAV containers in one place)."""
    from baglm_nb.inputs.live import LiveSource, open_live

    return open_live(LiveSource(str(path), "file"))


def _frames(path: str, timing_start: float, growing: bool) -> Iterator[tuple[object, float]]:
    """``(PyAV frame, time on the file's clock)`` in decoding order; a frame without a
    timestamp is placed one frame period after the previous one (at 0 when it is the first).

    ``growing``: the frames the decoder still holds at the end of the data are left out (the
    next bytes may hold frames shown before them)."""
    import av

    with _open(path) as container:
        stream = container.streams.video[0]
        base = stream.time_base
        period = 1 / float(stream.average_rate) if stream.average_rate else 1 / 30
        last = None
        for packet in container.demux(stream):
            if growing and not packet.size:  # the decoder's flush at the end of the data
                return
            try:
                frames = packet.decode()
            except av.FFmpegError:  # a damaged packet (the decoder reports no frame for it)
                continue
            for frame in frames:
                raw = None if frame.pts is None else float(frame.pts * base) - timing_start
                t = raw if raw is not None else (0.0 if last is None else last + period)
                last = t
                yield frame, t


def iter_timed_segments(
    path: str | os.PathLike,
    start_s: float,
    *,
    segment_duration: float = SEGMENT_DURATION,
    sampling_fps: float = SAMPLING_FPS,
    batch_segments: int = 16,
    start_segment: int = 0,
    growing: bool = False,
) -> Iterator[tuple[int, torch.Tensor, torch.Tensor]]:
    """A file's whole segments on its frames' own timestamps: ``(first segment, frames
    (B, F, 3, H, W) uint8, times (B, F) float64)`` per batch of up to ``batch_segments``.

    ``start_s`` is the file's stream time 0 (:attr:`FrameTiming.start_s`). Segments before
    ``start_segment`` are skipped without converting their frames; a segment whose frames
    change size, or that a hole in the timestamps cut, is left out (the batches stay
    consecutive up to it, a later one starts a new batch). ``growing``: the file is still being
    written; only frames that later data cannot precede are used (the last few frames of a
    finished file are then not seen).
    """
    grid = StreamGrid(segment_duration, sampling_fps)
    per = grid.per_segment
    samples: list[tuple[int, np.ndarray, float]] = []
    batch: list[tuple[int, np.ndarray, np.ndarray]] = []
    for frame, t in _frames(str(path), start_s, growing):
        taken, _skipped = grid.feed(t)
        if not taken or (taken.stop - 1) // per < start_segment:
            continue
        image = frame.to_ndarray(format="rgb24")
        for n in taken:
            samples.append((n, image, t))
            if (n + 1) % per:
                continue
            mine = [s for s in samples if s[0] // per == n // per]
            samples.clear()
            whole = len(mine) == per and len({s[1].shape for s in mine}) == 1
            if whole and n // per >= start_segment:
                if batch and batch[-1][0] != n // per - 1:
                    yield _stack(batch)
                    batch = []
                batch.append(
                    (n // per, np.stack([s[1] for s in mine]), np.array([s[2] for s in mine]))
                )
            if len(batch) == batch_segments:
                yield _stack(batch)
                batch = []
    if batch:
        yield _stack(batch)


def _stack(batch: list[tuple[int, np.ndarray, np.ndarray]]):
    frames = torch.from_numpy(np.stack([b[1] for b in batch])).permute(0, 1, 4, 2, 3)
    times = torch.from_numpy(np.stack([b[2] for b in batch])).to(torch.float64)
    return batch[0][0], frames.contiguous(), times


# --------------------------------------------------------------------------------------------
# as baglm_nb.inputs.video reports and yields them


def frame_timed_info(m, path, why: str):
    """The :class:`~baglm_nb.inputs.video.VideoInfo` of a file whose torchcodec metadata ``m``
    is implausible (``why``), measured by :func:`scan`; refused
    (:class:`~baglm_nb.inputs.video.VideoError`, with both reasons) when that fails too."""
    from baglm_nb.inputs.live import SourceError
    from baglm_nb.inputs.video_records import VideoError, VideoInfo

    why = f"torchcodec reports {why}"
    try:
        timing = scan(path)
    except (ValueError, OSError, SourceError) as exc:
        raise VideoError(path, f"implausible timing: {why}, and {exc}") from None
    return VideoInfo(
        path=path,
        num_frames=timing.num_frames,
        fps=timing.fps,
        duration_s=timing.duration_s,
        width=int(m.width),
        height=int(m.height),
        codec=str(m.codec),
        timing="frames",
        start_s=timing.start_s,
        timing_note=f"{why}; decoded on its frames' own timestamps",
    )


def timed_batches(
    info,
    segment_duration: float,
    sampling_fps: float,
    batch_segments: int,
    start_segment: int,
    growing: bool,
) -> Iterator:
    """:func:`~baglm_nb.inputs.video.iter_segments` of a file read on its frames' own
    timestamps (on the CPU): :class:`~baglm_nb.inputs.video.SegmentBatch` es; a decoding
    failure is a :class:`~baglm_nb.inputs.video.VideoError` naming the file."""
    import av

    from baglm_nb.inputs.live import SourceError
    from baglm_nb.inputs.video_records import SegmentBatch, VideoError

    t0 = time.perf_counter()
    batches = iter_timed_segments(
        info.path,
        info.start_s,
        segment_duration=segment_duration,
        sampling_fps=sampling_fps,
        batch_segments=batch_segments,
        start_segment=int(start_segment),
        growing=growing,
    )
    while True:
        try:
            first, frames, times = next(batches)
        except StopIteration:
            return
        except (av.FFmpegError, OSError, SourceError) as exc:
            lines = str(exc).strip().splitlines() or [type(exc).__name__]
            raise VideoError(info.path, f"cannot be decoded ({lines[0]})") from None
        b = frames.shape[0]
        t_start = torch.arange(first, first + b, dtype=torch.float64) * segment_duration
        yield SegmentBatch(
            first, frames, times, t_start, t_start + segment_duration, time.perf_counter() - t0
        )
        t0 = time.perf_counter()
