"""What reading a video reports and yields: :class:`VideoError`, :class:`VideoInfo`,
:class:`SegmentBatch`; :func:`source_path` (a local path or a URL) and :func:`find_video_file`
(a video's file in a folder, by its uid).

Records and paths only, no decoding, so a driver that only hands videos to Ray workers finds
their files without importing torch: :mod:`baglm_nb.inputs.video` (torchcodec, the published
grid) and :mod:`baglm_nb.inputs.frame_times` (a file decoded on its frames' own timestamps) both
return them, and :mod:`baglm_nb.inputs.video` re-exports them.
"""

from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

__all__ = [
    "VIDEO_EXTENSIONS",
    "SegmentBatch",
    "VideoError",
    "VideoInfo",
    "find_video_file",
    "missing_file",
    "source_path",
]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def source_path(path: str | os.PathLike) -> Path | str:
    """A local path as a Path; a URL (``scheme://...``, read by FFmpeg) stays a string."""
    if isinstance(path, str) and _URL.match(path):
        return path
    return Path(path)


def missing_file(path: Path) -> str | None:
    """Why ``path`` names no file, in words (``None`` when it exists): ``"no such file"``, a
    symlink loop, or a symlink whose target is missing (named)."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symlink loop (following its links comes back to a link already followed)"
        if path.is_symlink():
            return f"a broken symlink (it points to {os.readlink(path)}, which does not exist)"
        return "no such file"
    return None


class VideoError(RuntimeError):
    """A video that cannot be opened, probed or decoded.

    The message always starts with the file's path; for a frame that fails to decode it also
    gives the frame's time in seconds (frame index / fps).

    Parameters
    ----------
    path : str or os.PathLike
        The video file.
    message : str
        What went wrong.
    time_s : float, optional
        Time in seconds of the frame that failed, when the failure is a frame's.

    Attributes
    ----------
    path : pathlib.Path
        The video file.
    time_s : float or None
        Time in seconds of the frame that failed, or None.
    """

    def __init__(self, path: str | os.PathLike, message: str, time_s: float | None = None):
        self.path = source_path(path)
        self.time_s = time_s
        super().__init__(f"{self.path}: {message}")


@dataclass(frozen=True)
class VideoInfo:
    """Metadata of a video's best video stream (torchcodec, exact seek mode).

    Attributes
    ----------
    path : pathlib.Path
        The file.
    num_frames : int
        Frame count from a scan of the stream's packets (published ``video_num_frames``).
    fps : float
        Average frame rate, ``num_frames / duration_s`` (published ``video_fps``).
    duration_s : float
        Length of the stream in seconds, from the content scan.
    width, height : int
        Frame size in pixels.
    codec : str
        The stream's codec name as FFmpeg spells it (``h264``, ``av1``, ...).
    timing : str
        ``"container"``: the values above are torchcodec's and the published grid applies;
        ``"frames"``: torchcodec's were implausible (``timing_note`` says why), so they were
        measured from the packets' own timestamps and the file is decoded on them
        (:mod:`baglm_nb.inputs.frame_times`).
    start_s : float
        The stream time (s) of the file's clock origin (``"frames"`` timing only).
    timing_note : str
        Why the container's timing was not used (empty for ``"container"``).
    """

    path: Path
    num_frames: int
    fps: float
    duration_s: float
    width: int
    height: int
    codec: str
    timing: str = "container"
    start_s: float = 0.0
    timing_note: str = ""


@dataclass(frozen=True)
class SegmentBatch:
    """Decoded frames of ``B`` consecutive segments.

    Attributes
    ----------
    first_segment : int
        Index (in the whole video) of the first segment of the batch.
    frames : torch.Tensor
        uint8, shape ``(B, F, 3, H, W)``, on the decoder's device; ``F`` frames per segment.
    times : torch.Tensor
        float64, shape ``(B, F)``: each frame's presentation time in seconds (its pts).
    t_start, t_end : torch.Tensor
        float64, shape ``(B,)``: ``segment * segment_duration`` and that plus
        ``segment_duration``, the segments' nominal time spans.
    decode_s : float
        Wall-clock seconds spent decoding this batch.
    """

    first_segment: int
    frames: torch.Tensor
    times: torch.Tensor
    t_start: torch.Tensor
    t_end: torch.Tensor
    decode_s: float

    @property
    def num_segments(self) -> int:
        """B, the number of segments in this batch."""
        return int(self.frames.shape[0])

    @property
    def segment_indices(self) -> range:
        """Indices (in the whole video) of the batch's segments."""
        return range(self.first_segment, self.first_segment + self.num_segments)


def _glob_escape(text: str) -> str:
    """Escape glob metacharacters in a file-name stem."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


#: File extensions :func:`find_video_file` takes for a video (yt-dlp leaves sidecars such as
#: ``<uid>.en.vtt``, ``<uid>.info.json`` or ``<uid>.mp4.part`` beside the video).
VIDEO_EXTENSIONS = frozenset(
    {
        "mp4",
        "m4v",
        "mkv",
        "webm",
        "mov",
        "avi",
        "ts",
        "mts",
        "m2ts",
        "mpg",
        "mpeg",
        "flv",
        "3gp",
        "ogv",
        "wmv",
    }
)


def find_video_file(video_dir: str | os.PathLike | None, uid: str) -> Path | None:
    """The file of video ``uid`` in ``video_dir``: ``<uid>.<ext>``, or one folder down; else None.

    Only video extensions count (:data:`VIDEO_EXTENSIONS`, any case), so subtitles and other
    sidecars named after the video are never taken for it. The first match in sorted order wins,
    ``video_dir`` itself before its sub-folders. Scoring and the qualitative figures find files
    with this one rule.
    """
    if not video_dir:
        return None
    base = Path(video_dir)
    if not base.is_dir():
        return None
    for folder in (base, *(p for p in sorted(base.iterdir()) if p.is_dir())):
        hits = sorted(
            p
            for p in folder.glob(f"{_glob_escape(uid)}.*")
            if p.is_file() and p.name[len(uid) + 1 :].lower() in VIDEO_EXTENSIONS
        )
        if hits:
            return hits[0]
    return None
