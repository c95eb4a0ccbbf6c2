"""Video decoding and segmenting with the published frame grid (reference-protocol §1).

The published BaGLM code samples each video at ``sampling_fps`` (2) frames per second over its
whole length and cuts the samples into consecutive segments of ``segment_duration`` (2) seconds,
i.e. 4 frames. This module reproduces that grid exactly and decodes it **streaming**: only the
frames of one batch of segments are decoded and held at a time, so memory does not grow with the
length of the video.

* :func:`probe` reads a file's metadata (frame count, fps, size, codec) with torchcodec's exact
  (content-scan) mode, the mode the published JSONs' ``video_num_frames``/``video_fps`` come from.
* The frame grid itself (which frames, which segments) is :mod:`baglm_nb.inputs.grid`.
* A file whose reported frame rate or duration is implausible (an MPEG-TS remux with a frame
  without a timestamp: 4.5e-12 fps) is measured and decoded on its frames' own timestamps
  instead (:mod:`baglm_nb.inputs.frame_times`; :attr:`VideoInfo.timing` says so), or refused
  with the reason.
* :func:`iter_segments` yields :class:`SegmentBatch` es of decoded uint8 frames.

Differences from the published code, on purpose: a frame that fails to decode raises
:class:`VideoError` naming the file and the frame's time instead of being skipped (a skipped frame
would shift every later segment in time), and a frame whose size differs from the others is an
error instead of being resized. Preprocessing for the model families lives elsewhere.

Known file quirks (see ``tests/test_video.py``): ``box.mp4`` has a damaged h264 slice header and
broken timestamps (its container stores decode-order times as presentation times). It decodes in
full and reproducibly, but torchcodec's frame *index* follows those timestamps, so a sampled
index can show the picture up to 2 frames (67 ms) earlier than its display position, and the
returned ``times`` are the file's own (non-monotonic) timestamps.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from baglm_nb.inputs.frame_times import frame_timed_info, implausible, timed_batches
from baglm_nb.inputs.grid import num_segments, segment_frame_indices
from baglm_nb.inputs.variants import SAMPLING_FPS, SEGMENT_DURATION
from baglm_nb.inputs.video_records import (
    VIDEO_EXTENSIONS,
    SegmentBatch,
    VideoError,
    VideoInfo,
    find_video_file,
    missing_file,
    source_path,
)

if TYPE_CHECKING:
    from torchcodec.decoders import VideoDecoder

__all__ = [
    "CPU_ONLY_CODECS",
    "VIDEO_EXTENSIONS",
    "SegmentBatch",
    "VideoError",
    "VideoInfo",
    "check_video_file",
    "find_video_file",
    "frames_at",
    "iter_segments",
    "probe",
]

#: Codecs that torchcodec cannot decode on CUDA (NVDEC); the published code decodes them on CPU.
CPU_ONLY_CODECS = frozenset({"av1", "vp9"})


# ---------------------------------------------------------------------------------------------
# Opening and probing


def __getattr__(name: str):
    """``VideoDecoder``: torchcodec's, imported when a file is first opened, not with this
    module (torchcodec pulls in torch._dynamo: seconds of CPU for a process that only names
    this module's functions or records)."""
    if name != "VideoDecoder":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from torchcodec.decoders import VideoDecoder

    globals()["VideoDecoder"] = VideoDecoder
    return VideoDecoder


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0].strip() if text else type(exc).__name__


def _open(path: Path | str, device: str = "cpu", num_threads: int = 1) -> VideoDecoder:
    """A VideoDecoder (exact seek mode), every failure turned into a VideoError.

    ``path`` may be a URL that FFmpeg reads (http, https, rtsp, ...): exact mode scans the
    whole stream first, so it suits finite streams (a file served over HTTP), not endless live
    ones.
    """
    if isinstance(path, Path):
        missing = missing_file(path)
        if missing:
            raise VideoError(path, f"video file not found: {missing}")
        if not path.is_file():
            raise VideoError(path, "not a regular file")
    try:
        return sys.modules[__name__].VideoDecoder(  # torchcodec's, loaded on first use
            str(path), device=device, seek_mode="exact", num_ffmpeg_threads=num_threads
        )
    except ValueError as exc:
        # torchcodec's message when the container has no video stream at all (e.g. audio only)
        if "video stream" in str(exc):
            raise VideoError(path, "no video stream in the file") from exc
        raise VideoError(path, f"cannot open as a video ({_first_line(exc)})") from exc
    except RuntimeError as exc:
        raise VideoError(path, f"cannot open as a video ({_first_line(exc)})") from exc


def _info(decoder: VideoDecoder, path: Path, allow_truncated: bool) -> VideoInfo:
    m = decoder.metadata
    num_frames, fps = m.num_frames, m.average_fps
    if not num_frames:
        raise VideoError(path, f"no decodable video frames (num_frames={num_frames}, fps={fps})")
    header = m.num_frames_from_header
    content = m.num_frames_from_content
    # A small excess in the header is common (box.mp4: 456 declared, 455 present); a large one
    # means the stream's data ends early (a truncated download).
    truncated = bool(header and content is not None and header - content > max(2, 0.01 * header))
    if truncated and not allow_truncated:
        raise VideoError(
            path,
            f"truncated or corrupt: the container declares {header} frames but only "
            f"{content} are present; download it again, or keep the readable part with "
            f"'ffmpeg -i {path.name} -c copy <new>.mp4'",
        )
    declared = None if truncated else m.duration_seconds_from_header  # shorter, as expected
    why = implausible(fps, m.duration_seconds, declared)
    if why:
        return frame_timed_info(m, path, why)
    duration = m.duration_seconds if m.duration_seconds is not None else num_frames / fps
    return VideoInfo(
        path=path,
        num_frames=int(num_frames),
        fps=float(fps),
        duration_s=float(duration),
        width=int(m.width),
        height=int(m.height),
        codec=str(m.codec),
    )


def probe(path: str | os.PathLike, *, allow_truncated: bool = False) -> VideoInfo:
    """Metadata of a video file, from torchcodec's exact (content-scan) mode.

    Parameters
    ----------
    path : str or os.PathLike
        The video file.
    allow_truncated : bool, default False
        Accept a file whose container declares clearly more frames than its data holds (more
        than 2 frames and 1 % missing) and describe only the readable part.

    Returns
    -------
    VideoInfo
        ``num_frames`` and ``fps`` are those the published code uses for its time axis.

    Raises
    ------
    VideoError
        If the file is missing, is not a video (no video stream, unreadable container), holds
        no frames, or is truncated (unless ``allow_truncated``). The message names the file.
    """
    path = source_path(path)
    return _info(_open(path), path, allow_truncated)


def _mp4_index_missing(path: Path) -> bool:
    """Whether ``path`` is an MP4/MOV with media data but no index (moov atom) yet: a recording
    whose index is written when it ends (read from the top-level box headers only)."""
    size, pos, seen = path.stat().st_size, 0, []
    with open(path, "rb") as f:
        while pos + 8 <= size and len(seen) < 64:
            f.seek(pos)
            head = f.read(16)
            length, kind = int.from_bytes(head[:4], "big"), head[4:8]
            if length == 1 and len(head) == 16:
                length = int.from_bytes(head[8:16], "big")
            seen.append(kind)
            if kind == b"moov" or length < 8:  # an index, or a box that runs to the end
                break
            pos += length
    return bool(seen) and seen[0] == b"ftyp" and b"mdat" in seen and b"moov" not in seen


def check_video_file(
    path: str | os.PathLike,
    *,
    growing: bool = False,
    segment_duration: float = SEGMENT_DURATION,
    sampling_fps: float = SAMPLING_FPS,
) -> None:
    """Refuse a local video file that cannot be followed, before a model loads.

    A URL is left to the reader. A file must exist; an MP4 whose index (moov atom) is written
    only when the recording ends is refused with the advice to record MPEG-TS or fragmented MP4;
    a finished file (not ``growing``) must probe (:func:`probe`) and hold at least one segment.

    Raises
    ------
    FileNotFoundError
        When the file does not exist.
    ValueError
        For anything else, naming the file and the reason (FFmpeg's last error included).
    """
    src = source_path(path)
    if isinstance(src, str):
        return
    missing = missing_file(src)
    if missing:
        raise FileNotFoundError(f"{src}: {missing.replace('no such file', 'no such video file')}")
    if not src.is_file():
        raise ValueError(f"{src}: not a regular file")
    if _mp4_index_missing(src):
        state = "while it is written" if growing else "(it is cut short, or still being written)"
        raise ValueError(
            f"{src}: an MP4 whose index (moov atom) comes at its end cannot be read {state}; "
            "to follow a recording as it grows, record MPEG-TS (ffmpeg -f mpegts, .ts) or "
            "fragmented MP4 (-movflags frag_keyframe+empty_moov) and pass --growing"
        )
    if growing:
        return  # may not hold a whole segment yet
    try:
        info = probe(src)
    except VideoError as exc:
        raise ValueError(str(exc)) from None
    if num_segments(info.num_frames, info.fps, segment_duration, sampling_fps) == 0:
        raise ValueError(
            f"{src}: {info.duration_s:.1f} s of video, shorter than one {segment_duration:g}-s "
            "segment: nothing to follow"
        )


# ---------------------------------------------------------------------------------------------
# Streaming decode


def _check_device(device: str | torch.device) -> torch.device:
    dev = torch.device(device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError(
                f"device={str(device)!r} requested but torch.cuda.is_available() is False; "
                "decode with device='cpu'"
            )
    elif dev.type != "cpu":
        raise ValueError(f"device must be 'cpu' or 'cuda[:N]', got {str(device)!r}")
    return dev


class _Reader:
    """Holds the decoder of one file; reads frames at indices, never skipping one."""

    def __init__(
        self,
        path: Path,
        device: str,
        num_threads: int,
        info: VideoInfo,
        decoder: VideoDecoder | None = None,
    ):
        self.path, self.device, self.num_threads, self.info = path, device, num_threads, info
        self.decoder = decoder if decoder is not None else _open(path, device, num_threads)

    def _frame(self, index: int) -> tuple[torch.Tensor, float]:
        try:
            frame = self.decoder.get_frame_at(index)
        except (RuntimeError, ValueError):
            # The decoder's state can be to blame (e.g. packed B-frames at the end of an AVI):
            # retry once from a fresh decoder before declaring the frame bad.
            try:
                self.decoder = _open(self.path, self.device, self.num_threads)
                frame = self.decoder.get_frame_at(index)
            except (RuntimeError, ValueError) as exc:
                t = index / self.info.fps
                raise VideoError(
                    self.path,
                    f"frame {index} at {t:.3f} s cannot be decoded ({_first_line(exc)})",
                    time_s=t,
                ) from exc
        return frame.data, float(frame.pts_seconds)

    def read(self, indices: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """Frames ``(N, 3, H, W)`` and pts ``(N,)`` at ``indices``."""
        try:
            batch = self.decoder.get_frames_at(indices=indices)
            return batch.data, batch.pts_seconds.to("cpu", torch.float64)
        except (RuntimeError, ValueError):
            pass  # find the bad frame, or recover when a fresh seek decodes it
        frames, pts = [], []
        for index in indices:
            data, t = self._frame(index)
            if frames and data.shape != frames[0].shape:
                raise VideoError(
                    self.path,
                    f"frame {index} at {index / self.info.fps:.3f} s has shape "
                    f"{tuple(data.shape)}, other frames {tuple(frames[0].shape)}",
                    time_s=index / self.info.fps,
                )
            frames.append(data)
            pts.append(t)
        return torch.stack(frames), torch.tensor(pts, dtype=torch.float64)


def iter_segments(
    path: str | os.PathLike,
    *,
    segment_duration: float = SEGMENT_DURATION,
    sampling_fps: float = SAMPLING_FPS,
    batch_segments: int = 16,
    device: str | torch.device = "cpu",
    start_segment: int = 0,
    num_threads: int = 1,
    allow_truncated: bool = False,
    growing: bool = False,
) -> Iterator[SegmentBatch]:
    """Decode a video's segments, a batch of segments at a time.

    Only the sampled frames of the current batch are decoded (torchcodec
    ``get_frames_at``); the decoder keeps its position between batches, so a video is read
    once front to back and memory is bounded by one batch
    (``batch_segments * frames_per_segment`` frames; two while the caller still holds the
    previous batch), whatever the video's length.

    Parameters
    ----------
    path : str or os.PathLike
        The video file.
    segment_duration : float, default 2
        Seconds per segment.
    sampling_fps : float, default 2.0
        Sampled frames per second.
    batch_segments : int, default 16
        Segments per yielded batch (the last batch may be smaller).
    device : str or torch.device, default "cpu"
        ``"cpu"`` or ``"cuda[:N]"`` (NVDEC; only when ``torch.cuda.is_available()``). Codecs
        NVDEC cannot decode (:data:`CPU_ONLY_CODECS`) fall back to CPU with a warning.
    start_segment : int, default 0
        First segment to decode (resume). At or past the last segment the iterator is empty
        (not an error), so a caller following a growing file can re-probe and resume.
    num_threads : int, default 1
        FFmpeg decoding threads (0: FFmpeg's choice).
    allow_truncated : bool, default False
        See :func:`probe`.
    growing : bool, default False
        The file is still being written: a file read on its frames' own timestamps
        (:attr:`VideoInfo.timing` ``"frames"``) then uses only frames that later data cannot
        precede.

    Returns
    -------
    Iterator[SegmentBatch]
        Consecutive batches covering segments ``start_segment .. S - 1``, with
        ``S = baglm_nb.inputs.grid.num_segments(info.num_frames, info.fps, ...)``. The file is
        opened and checked at the call; decoding happens as the iterator is consumed.

    Raises
    ------
    VideoError
        At the call as :func:`probe`; while iterating when a frame cannot be decoded (the
        message gives the frame's time in seconds). No frame is ever skipped.
    RuntimeError
        If a CUDA device is requested and CUDA is not available.
    ValueError
        For an invalid argument.
    """
    path = source_path(path)
    dev = _check_device(device)
    if int(batch_segments) != batch_segments or batch_segments < 1:
        raise ValueError(f"batch_segments must be a positive integer, got {batch_segments!r}")
    if int(start_segment) != start_segment or start_segment < 0:
        raise ValueError(f"start_segment must be a non-negative integer, got {start_segment!r}")
    # Errors about the file surface here, at the call, not at the first next().
    cpu_decoder = _open(path, "cpu", num_threads)
    info = _info(cpu_decoder, path, allow_truncated)
    if info.timing == "frames":
        return timed_batches(
            info, segment_duration, sampling_fps, int(batch_segments), start_segment, growing
        )
    segments = segment_frame_indices(info.num_frames, info.fps, segment_duration, sampling_fps)
    reader = _reader_for(path, dev, num_threads, info, cpu_decoder)
    return _generate(reader, segments, int(start_segment), int(batch_segments), segment_duration)


def _reader_for(
    path: Path | str, dev: torch.device, num_threads: int, info: VideoInfo, cpu_decoder
) -> _Reader:
    """The reader on ``dev``, or on the CPU (with a warning) for codecs NVDEC cannot decode."""
    if dev.type != "cuda":
        return _Reader(path, "cpu", num_threads, info, cpu_decoder)
    if info.codec in CPU_ONLY_CODECS:
        warnings.warn(
            f"{path}: codec {info.codec!r} cannot be decoded on CUDA; decoding on CPU",
            RuntimeWarning,
            stacklevel=3,
        )
        return _Reader(path, "cpu", num_threads, info, cpu_decoder)
    del cpu_decoder
    return _Reader(path, str(dev), num_threads, info)


def _generate(
    reader: _Reader,
    segments: np.ndarray,
    start_segment: int,
    batch_segments: int,
    segment_duration: float,
) -> Iterator[SegmentBatch]:
    per_segment = segments.shape[1]
    for first in range(start_segment, segments.shape[0], batch_segments):
        block = segments[first : first + batch_segments]
        b = block.shape[0]
        t0 = time.perf_counter()
        data, pts = reader.read(block.reshape(-1).tolist())
        decode_s = time.perf_counter() - t0
        t_start = torch.arange(first, first + b, dtype=torch.float64) * segment_duration
        yield SegmentBatch(
            first_segment=first,
            frames=data.reshape(b, per_segment, *data.shape[1:]),
            times=pts.reshape(b, per_segment),
            t_start=t_start,
            t_end=t_start + segment_duration,
            decode_s=decode_s,
        )


# ---------------------------------------------------------------------------------------------
# Single frames


def frames_at(
    path: str | os.PathLike, times: list[float], *, width: int = 240
) -> list[tuple[float, np.ndarray]]:
    """The frames shown at ``times`` (s), downscaled by an integer step to about ``width`` px.

    Times outside the stream are clipped to its first and last frame. Returns
    ``(time_s, (H, W, 3) uint8)`` pairs in the order of ``times``; a file that cannot be
    decoded raises :class:`VideoError` naming it.
    """
    src = source_path(path)
    decoder = _open(src)
    meta = decoder.metadata
    end = meta.end_stream_seconds or meta.duration_seconds or 0.0
    begin = meta.begin_stream_seconds or 0.0
    last = max(begin, float(end) - 1e-3)
    clipped = [min(max(float(t), begin), last) for t in times]
    try:
        frames = decoder.get_frames_played_at(seconds=clipped).data.numpy()  # (N, 3, H, W)
    except (RuntimeError, ValueError, IndexError) as exc:
        raise VideoError(
            src, f"cannot decode the frames at {clipped}: {_first_line(exc)}"
        ) from None
    out = []
    for t, frame in zip(times, frames, strict=True):
        image = np.transpose(frame, (1, 2, 0))
        step = max(1, image.shape[1] // width)
        out.append((float(t), np.ascontiguousarray(image[::step, ::step])))
    return out
