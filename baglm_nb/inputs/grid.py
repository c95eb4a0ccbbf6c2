"""The time grids of the published protocol: frame sampling, segments, per-second rows, truth.

One place for each rule the rest of the package shares:

- sampling: ``N = int(F * sampling_fps / fps)`` frames at ``np.linspace(0, F - 1, N)``, grouped
  into segments of ``int(segment_duration * sampling_fps)`` frames, a partial group dropped
  (reference-protocol §1.2-1.3);
- per-second rows: each segment's scores repeated ``segment_duration`` times (§2.4);
- ground truth: rows ``floor(start)`` to ``ceil(end)`` of a step's column (§6.1);
- a step's first annotated start (step order, temporal position, oracle chains);
- a video's length agrees with its annotation within one segment (:func:`length_mismatch`);
- the grid of a stream whose length is unknown (a live source, :class:`StreamGrid`): sample
  ``n`` is the first frame shown at or after ``n / sampling_fps`` seconds on the stream's own
  clock. The published rule above needs the frame count ``F`` (its last sample is pinned to the
  last frame), which a live stream never has; the two grids agree at the start and the
  published one runs ahead by up to about half a second (``fps / 2`` frames) at the end of a
  video.

Exports :func:`frame_indices`, :func:`segment_frame_indices`, :func:`num_segments`,
:func:`num_rows`, :func:`per_second`, :func:`ground_truth`, :func:`first_starts`,
:func:`length_mismatch` and :class:`StreamGrid`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from baglm_nb.inputs.variants import SAMPLING_FPS, SEGMENT_DURATION

__all__ = [
    "SAMPLING_FPS",
    "SEGMENT_DURATION",
    "STREAM_TOLERANCE_S",
    "StreamGrid",
    "first_starts",
    "frame_indices",
    "frames_per_segment",
    "ground_truth",
    "length_mismatch",
    "num_rows",
    "num_segments",
    "per_second",
    "segment_frame_indices",
]


class _Segment(Protocol):
    @property
    def start(self) -> float: ...
    @property
    def end(self) -> float: ...
    @property
    def step_index(self) -> int: ...


class GridVideo(Protocol):
    """What the grid reads of an annotated video (:class:`baglm_nb.inputs.datasets.Video`).

    A protocol, so that the grid needs no import of ``datasets`` (which imports the grid).
    """

    @property
    def uid(self) -> str: ...
    @property
    def fps(self) -> float: ...
    @property
    def num_frames(self) -> int: ...
    @property
    def segments(self) -> Sequence[_Segment]: ...
    @property
    def num_steps(self) -> int: ...


def frame_indices(num_frames: int, fps: float, sampling_fps: float = SAMPLING_FPS) -> np.ndarray:
    """Indices of the sampled frames, the published rule (reference-protocol §1.2).

    Parameters
    ----------
    num_frames : int
        F, the video's frame count.
    fps : float
        The video's average frame rate.
    sampling_fps : float, default 2.0
        Samples per second of video.

    Returns
    -------
    numpy.ndarray
        int64, shape ``(N,)`` with ``N = int(F * (sampling_fps / fps))``:
        ``np.linspace(0, F - 1, N).astype(int)``. The first sample is frame 0 and the last is
        frame ``F - 1`` (when ``N >= 2``).

    Raises
    ------
    ValueError
        If ``num_frames`` is negative or ``fps`` / ``sampling_fps`` is not positive.
    """
    n = _num_samples(num_frames, fps, sampling_fps)
    return np.linspace(0, int(num_frames) - 1, n).astype(np.int64)


def _num_samples(num_frames: int, fps: float, sampling_fps: float) -> int:
    """N, the length of :func:`frame_indices` (checked as it checks), without building it."""
    if int(num_frames) != num_frames or num_frames < 0:
        raise ValueError(f"num_frames must be a non-negative integer, got {num_frames!r}")
    if not fps > 0 or not sampling_fps > 0:
        raise ValueError(f"fps and sampling_fps must be positive, got {fps!r}, {sampling_fps!r}")
    return int(num_frames * (sampling_fps / fps))


def frames_per_segment(
    segment_duration: float = SEGMENT_DURATION, sampling_fps: float = SAMPLING_FPS
) -> int:
    """Sampled frames per segment, ``int(segment_duration * sampling_fps)`` (at least 1)."""
    per_segment = int(segment_duration * sampling_fps)
    if per_segment < 1:
        raise ValueError(f"segment_duration * sampling_fps must be >= 1, got {per_segment}")
    return per_segment


def segment_frame_indices(
    num_frames: int,
    fps: float,
    segment_duration: float = SEGMENT_DURATION,
    sampling_fps: float = SAMPLING_FPS,
) -> np.ndarray:
    """Sampled frame indices grouped into segments (reference-protocol §1.3).

    Returns an int64 array of shape ``(S, frames_per_segment)``: row ``s`` holds the frame
    indices of segment ``s``, consecutive non-overlapping groups of :func:`frame_indices`; a
    trailing partial group is dropped, so ``S`` equals :func:`num_segments`.
    """
    per_segment = frames_per_segment(segment_duration, sampling_fps)
    idx = frame_indices(num_frames, fps, sampling_fps)
    s = len(idx) // per_segment
    return idx[: s * per_segment].reshape(s, per_segment)


def num_segments(
    num_frames: int,
    fps: float,
    segment_duration: int = SEGMENT_DURATION,
    sampling_fps: float = SAMPLING_FPS,
) -> int:
    """S, the number of whole segments of ``segment_duration`` seconds (no decoding needed):
    the length of :func:`segment_frame_indices`, counted without building the indices."""
    per_segment = frames_per_segment(segment_duration, sampling_fps)
    return _num_samples(num_frames, fps, sampling_fps) // per_segment


def num_rows(
    num_frames: int,
    fps: float,
    segment_duration: int = SEGMENT_DURATION,
    sampling_fps: float = SAMPLING_FPS,
) -> int:
    """T, the number of per-second rows: each segment repeated ``segment_duration`` times."""
    if int(segment_duration) != segment_duration:
        raise ValueError(
            f"segment_duration must be a whole number of seconds, got {segment_duration}"
        )
    return int(segment_duration) * num_segments(num_frames, fps, segment_duration, sampling_fps)


def per_second(rows: np.ndarray, segment_duration: int) -> np.ndarray:
    """Per-segment rows (S, ...) as per-second rows (S * segment_duration, ...)."""
    return np.repeat(np.asarray(rows), int(segment_duration), axis=0)


def ground_truth(video: GridVideo, num_rows_: int) -> np.ndarray:
    """The published per-second ground truth, shape (T, K+1) bool, none last.

    Rows ``floor(start)`` to ``ceil(end)`` inclusive are set in the step's column (the last
    duplicate column for repeated step texts), clipped at T. The none column stays empty.
    """
    y = np.zeros((num_rows_, video.num_steps + 1), dtype=bool)
    for seg in video.segments:
        y[math.floor(seg.start) : math.ceil(seg.end) + 1, seg.step_index] = True
    return y


def first_starts(video: GridVideo) -> dict[int, float]:
    """Each annotated step column's first start (s), in order of first start, ties by column."""
    first: dict[int, float] = {}
    for seg in video.segments:
        first[seg.step_index] = min(first.get(seg.step_index, math.inf), seg.start)
    return dict(sorted(first.items(), key=lambda kv: (kv[1], kv[0])))


def length_mismatch(
    video: GridVideo,
    segments: int,
    *,
    what: str,
    segment_duration: int = SEGMENT_DURATION,
    sampling_fps: float = SAMPLING_FPS,
) -> str | None:
    """Why ``segments`` segments of ``video`` disagree with its annotation, or None.

    The annotation's ``video_num_frames`` and ``video_fps`` give the expected number of
    segments; a difference of more than one segment means the file or the scores belong to
    another video (or a cut copy), and evaluating them would drop or invent ground truth.

    Parameters
    ----------
    video : Video
        The annotated video.
    segments : int
        The number of segments found (probed from the file, or stored in a cache).
    what : str
        What holds them, for the message (a file path, "the cache file ...").
    segment_duration, sampling_fps
        The grid.
    """
    expected = num_segments(video.num_frames, video.fps, segment_duration, sampling_fps)
    if abs(int(segments) - expected) <= 1:
        return None
    return (
        f"{what} has {segments} segments of {segment_duration} s "
        f"({segments * segment_duration} s) but the annotation of video {video.uid!r} "
        f"(video_num_frames={video.num_frames}, video_fps={video.fps:g}) gives {expected} "
        f"({video.num_frames / video.fps:.1f} s)"
    )


#: A frame whose time is this close before a sample's nominal time counts as at that time
#: (timestamps rounded by a container or RTP's 90 kHz clock).
STREAM_TOLERANCE_S = 1e-3


class StreamGrid:
    """The sampling grid of a stream read frame by frame, whose length is unknown.

    Sample ``n`` sits at ``n / sampling_fps`` seconds on the stream's clock (0 = its first
    frame) and takes the first frame shown at or after that time (within
    :data:`STREAM_TOLERANCE_S`); samples ``s * F .. s * F + F - 1`` form segment ``s`` with
    ``F = frames_per_segment(...)``, spanning ``[s * segment_duration, (s + 1) *
    segment_duration)``, the segments of the file rule. A hole in the timestamps shorter than a
    segment is filled by the next frame (one frame may fill several samples); a longer one, or
    :meth:`restart` (a reconnection), drops the unfinished segment and resumes at the first
    segment that starts at or after the new frame.

    Parameters
    ----------
    segment_duration : float, default 2
        Seconds per segment.
    sampling_fps : float, default 2.0
        Samples per second.
    """

    def __init__(
        self, segment_duration: float = SEGMENT_DURATION, sampling_fps: float = SAMPLING_FPS
    ) -> None:
        self.per_segment = frames_per_segment(segment_duration, sampling_fps)
        self.segment_duration, self.sampling_fps = float(segment_duration), float(sampling_fps)
        self.next_sample = 0
        self.last_time: float | None = None

    def feed(self, t: float) -> tuple[range, range]:
        """The samples the frame at stream time ``t`` fills, and the segments skipped first.

        Returns ``(samples, skipped)``: sample indices (possibly empty) and the segments that a
        hole longer than a segment left without frames (usually empty).
        """
        skipped = range(0)
        if self.last_time is not None and t - self.last_time > self.segment_duration:
            skipped = self.restart(t)
        if self.last_time is None or t > self.last_time:
            self.last_time = t
        end = math.floor((t + STREAM_TOLERANCE_S) * self.sampling_fps) + 1
        samples = range(self.next_sample, max(self.next_sample, end))
        self.next_sample = samples.stop
        return samples, skipped

    def restart(self, t: float) -> range:
        """Resume at the first segment starting at or after ``t``; returns the skipped ones."""
        current = self.next_sample // self.per_segment
        resume = max(current, math.ceil((t - STREAM_TOLERANCE_S) / self.segment_duration))
        self.next_sample = resume * self.per_segment
        self.last_time = t
        return range(current, resume)
