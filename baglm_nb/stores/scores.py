"""The score cache: VSG and progress probabilities per video, one Parquet file per video.

Layout under a cache ``root``::

    scores/<dataset>/<model>/<prompt_version>/seg<d>s_fps<f>/
        config.json                       # the ScoreKey (+ "label": "simulated" when simulated)
        weights.json                      # what the key's weights fingerprint stands for
        videos/<quote(uid)>.parquet       # one file per video, one row per segment

Scores are stored **per segment** (S rows, columns ``video_uid, segment, t_start, t_end, vsg,
progress`` and any timing columns); :meth:`ScoreCache.per_second` rebuilds the published
per-second layout (reference-protocol §2.5), where every segment row is repeated
``segment_duration`` times, so row t is second t of the video.

``weights.json`` (:data:`WEIGHTS_FILE`) is written once by the score driver: a local folder's
files and their SHA-256 with its Hugging Face revision, or a served model's ``/v1/models``
description and canary (:mod:`baglm_nb.models.fingerprints`,
:mod:`baglm_nb.models.served_checks`), which a resumed run compares.

Exports :class:`VideoScores` (one video's stored scores), :class:`ScoreCache`,
:data:`WEIGHTS_FILE` and :func:`read_weights_record`.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from baglm_nb.inputs import grid
from baglm_nb.inputs.variants import SEGMENT_DURATION
from baglm_nb.stores.atomic import atomic_write_json
from baglm_nb.stores.keys import ScoreKey
from baglm_nb.stores.parquet import ParquetFolder, read_parquet
from baglm_nb.stores.provenance import is_stale, steps_sha256

__all__ = [
    "WEIGHTS_FILE",
    "ScoreCache",
    "VideoScores",
    "read_weights_record",
    "warn_unfingerprinted",
]

WEIGHTS_FILE = "weights.json"
"""The file of a score cache folder recording what its weights fingerprint stands for."""

_SCORE_COLUMNS = ("video_uid", "segment", "t_start", "t_end", "vsg", "progress")
_LIST_F64 = pa.list_(pa.float64())


@dataclass(frozen=True, eq=False)
class VideoScores:
    """The stored scores of one video, per segment.

    Attributes
    ----------
    uid : str
    vsg : np.ndarray
        (S, K+1) float64, none last.
    progress : np.ndarray or None
        (S, K, 10) float64 digit probabilities.
    t_start, t_end : np.ndarray
        (S,) float64 segment bounds in seconds.
    timings : dict of str to np.ndarray
        Per-segment timing columns, each (S,) float64.
    steps : tuple of str or None
        The K step texts, when stored.
    source : str
        One of :data:`~baglm_nb.stores.keys.SOURCES`.
    segment_duration : int
        Seconds per segment (the repeat factor of :meth:`per_second`).
    num_rows : int or None
        T when the per-second rows end inside the last segment (an imported file whose T is
        not a multiple of ``segment_duration``); ``None``: T = S * segment_duration.
    """

    uid: str
    vsg: np.ndarray
    progress: np.ndarray | None
    t_start: np.ndarray
    t_end: np.ndarray
    timings: dict[str, np.ndarray] = field(default_factory=dict)
    steps: tuple[str, ...] | None = None
    source: str = "lmm"
    segment_duration: int = SEGMENT_DURATION
    num_rows: int | None = None

    @property
    def num_segments(self) -> int:
        """S."""
        return int(self.vsg.shape[0])

    @property
    def num_steps(self) -> int:
        """K (the none column excluded)."""
        return int(self.vsg.shape[1]) - 1

    def per_second(self) -> tuple[np.ndarray, np.ndarray | None]:
        """The published per-second layout: (T, K+1) and (T, K, 10), T = S * segment_duration.

        With ``num_rows`` set, the rows stop there (inside the last segment).
        """
        d = self.segment_duration
        t = self.num_rows or self.num_segments * d
        prog = None if self.progress is None else grid.per_second(self.progress, d)[:t]
        return grid.per_second(self.vsg, d)[:t], prog


# --------------------------------------------------------------------------------------------
# columns


def _list_column(values: np.ndarray, rows: int, width: int) -> pa.Array:
    offsets = pa.array(np.arange(rows + 1, dtype=np.int32) * width, type=pa.int32())
    return pa.ListArray.from_arrays(offsets, pa.array(values.reshape(-1), type=pa.float64()))


def _flat_values(column: pa.ChunkedArray, rows: int, width: int, path: Path, name: str):
    """(rows, width) float64 from a list<float64> column; ``ValueError`` on ragged rows."""
    arr = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if arr.null_count or arr.values.null_count:
        raise ValueError(f"{path}: column {name!r} has null entries")
    offsets = arr.offsets.to_numpy()
    if len(offsets) != rows + 1 or (offsets[1:] - offsets[:-1] != width).any():
        raise ValueError(f"{path}: column {name!r} rows are not all of length {width}")
    values = arr.values.to_numpy()[offsets[0] : offsets[-1]]
    return np.array(values, dtype=np.float64).reshape(rows, width)


def _timing_columns(names: list[str]) -> list[str]:
    return ["video_uid", "segment", *(n for n in names if n not in _SCORE_COLUMNS)]


# --------------------------------------------------------------------------------------------
# validation


def _as_float_array(value: Any, uid: str, name: str, ndim: int) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"video {uid!r}: {name} is not numeric ({exc})") from None
    if arr.ndim != ndim:
        raise ValueError(f"video {uid!r}: {name} must be {ndim}-D, got shape {arr.shape}")
    if np.isnan(arr).any():
        raise ValueError(f"video {uid!r}: {name} contains NaN")
    if np.isinf(arr).any():
        raise ValueError(f"video {uid!r}: {name} contains inf")
    if (arr < 0).any():
        raise ValueError(f"video {uid!r}: {name} contains negative values")
    return arr


def _check_values(path: Path, uid: str, **arrays: np.ndarray | None) -> None:
    """Stored scores are finite and non-negative (as written); the error names the file, the
    video and the segment. (The filter checks the [0, 1] range of what it is given.)"""
    for name, arr in arrays.items():
        if arr is None or arr.size == 0:
            continue
        bad = ~np.isfinite(arr) | (arr < 0)
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ValueError(
                f"{path}: video {uid!r}: {name} holds {int(bad.sum())} NaN, infinite or "
                f"negative value(s) (first {float(arr[where])!r} at segment {where[0]})"
            )


def _check_grid(path: Path, uid: str, table: pa.Table, d: float) -> None:
    """The rows are the segments 0, 1, 2, ... of ``d`` seconds in order, as written: a file
    whose ``segment``, ``t_start`` or ``t_end`` column was edited is refused (names the file,
    the first row that is off and what it should hold)."""
    rows = table.num_rows
    seg = table.column("segment").to_numpy(zero_copy_only=False)
    expected = np.arange(rows)
    for name, got, want in (
        ("segment", seg, expected),
        ("t_start", table.column("t_start").to_numpy(zero_copy_only=False), expected * d),
        ("t_end", table.column("t_end").to_numpy(zero_copy_only=False), (expected + 1) * d),
    ):
        off = ~np.isclose(np.asarray(got, dtype=np.float64), want, rtol=0.0, atol=1e-6)
        if off.any():
            i = int(np.argmax(off))
            raise ValueError(
                f"{path}: video {uid!r}: row {i} has {name} {float(got[i]):g}, expected "
                f"{want[i]:g} (the rows must be the {d:g}-s segments 0, 1, 2, ... in order; the "
                "file was edited or is corrupt: restore it, or delete it and score the video "
                "again)"
            )


def _checked_scores(
    uid: str,
    vsg: np.ndarray,
    progress: np.ndarray | None,
    steps: Sequence[str] | None,
    timings: Mapping[str, np.ndarray] | None,
) -> tuple[np.ndarray, np.ndarray | None, list[str] | None, dict[str, np.ndarray]]:
    """The arguments of :meth:`ScoreCache.write_video` as float64 arrays, validated."""
    if not isinstance(uid, str) or not uid:
        raise ValueError(f"uid must be a non-empty string, got {uid!r}")
    v = _as_float_array(vsg, uid, "vsg", 2)
    num_segments, width = v.shape
    k = width - 1
    if k < 1:
        raise ValueError(f"video {uid!r}: vsg must have K+1 >= 2 columns, got shape {v.shape}")
    p = None
    if progress is not None:
        p = _as_float_array(progress, uid, "progress", 3)
        if p.shape != (num_segments, k, 10):
            raise ValueError(
                f"video {uid!r}: progress shape {p.shape} does not match vsg shape "
                f"{v.shape}; expected {(num_segments, k, 10)}"
            )
    if steps is not None:
        if isinstance(steps, str) or not all(isinstance(s, str) for s in steps):
            raise ValueError(f"video {uid!r}: steps must be a sequence of str")
        steps = list(steps)
        if len(steps) != k:
            raise ValueError(f"video {uid!r}: steps has {len(steps)} entries, vsg has K={k}")
    timing_cols: dict[str, np.ndarray] = {}
    for name, value in (timings or {}).items():
        if not isinstance(name, str) or not name or name in _SCORE_COLUMNS:
            raise ValueError(f"video {uid!r}: timings name {name!r} is empty or reserved")
        arr = _as_float_array(value, uid, f"timings[{name!r}]", 1)
        if arr.shape != (num_segments,):
            raise ValueError(
                f"video {uid!r}: timings[{name!r}] has shape {arr.shape}, "
                f"expected {(num_segments,)}"
            )
        timing_cols[name] = arr
    return v, p, steps, timing_cols


# --------------------------------------------------------------------------------------------
# the cache


def _score_columns(
    uid: str,
    v: np.ndarray,
    p: np.ndarray | None,
    d: float,
    timing_cols: Mapping[str, np.ndarray],
) -> dict[str, pa.Array]:
    """A score file's columns, one row per segment of ``d`` seconds."""
    num_segments, k = v.shape[0], v.shape[1] - 1
    seg = np.arange(num_segments, dtype=np.int32)
    columns: dict[str, pa.Array] = {
        "video_uid": pa.array([uid] * num_segments, type=pa.string()),
        "segment": pa.array(seg, type=pa.int32()),
        "t_start": pa.array(seg * d, type=pa.float64()),
        "t_end": pa.array((seg + 1) * d, type=pa.float64()),
        "vsg": _list_column(v, num_segments, k + 1),
        "progress": (
            pa.nulls(num_segments, type=_LIST_F64)
            if p is None
            else _list_column(p, num_segments, k * 10)
        ),
    }
    for name, arr in timing_cols.items():
        columns[name] = pa.array(arr, type=pa.float64())
    return columns


class ScoreCache(ParquetFolder):
    """VSG/progress scores of one :class:`~baglm_nb.stores.keys.ScoreKey`, one file per video.

    Parameters
    ----------
    root
        The cache root; files live under ``root / key.relpath()``.
    key
        The score key. Creating the cache writes ``config.json``; an existing ``config.json``
        with a different key raises ``ValueError``.
    """

    kind = "scores"
    key_type = ScoreKey
    entries = "videos"
    entry_word = "video"
    cache_word = "score"

    @classmethod
    def open(cls, folder: str | os.PathLike) -> ScoreCache:
        """Open an existing cache folder; a model's scores without a weights fingerprint are
        read with :func:`warn_unfingerprinted`'s one-line warning."""
        cache = super().open(folder)
        warn_unfingerprinted(cache)
        return cache

    def _config(self) -> dict[str, Any]:
        config = super()._config()
        if self.key.label:
            config["label"] = self.key.label
        return config

    @property
    def label(self) -> str | None:
        """``"simulated"`` when the scores are simulated, else ``None``."""
        return self.key.label

    @property
    def videos_dir(self) -> Path:
        """The folder of the per-video files."""
        return self.entries_dir

    def uids(self) -> list[str]:
        """Sorted uids of the stored videos."""
        return self.names()

    def write_weights_record(self, record: Mapping[str, Any]) -> Path:
        """Store (atomically) what the key's weights are: :data:`WEIGHTS_FILE`."""
        return atomic_write_json(self.path / WEIGHTS_FILE, dict(record))

    def write_video(
        self,
        uid: str,
        vsg: np.ndarray,
        progress: np.ndarray | None = None,
        *,
        steps: Sequence[str] | None = None,
        timings: Mapping[str, np.ndarray] | None = None,
        num_rows: int | None = None,
        annotation_sha256: str | None = None,
    ) -> Path:
        """Store (or atomically replace) the scores of one video.

        Parameters
        ----------
        uid
            Video uid.
        vsg
            (S, K+1) per-segment probabilities, none last.
        progress
            (S, K, 10) per-segment digit probabilities, or ``None``.
        steps
            The K step texts (stored in the file metadata).
        timings
            Name -> (S,) seconds per segment (e.g. ``decode_s``, ``vsg_s``), stored as float64
            columns.
        num_rows
            T, when the per-second rows end inside the last segment (an imported file);
            ``(S - 1) * segment_duration < num_rows <= S * segment_duration``.
        annotation_sha256
            SHA-256 of the steps' annotation file (default :attr:`annotation_sha256`).

        Returns
        -------
        Path
            The written file.

        Raises
        ------
        ValueError
            Bad shapes, NaN/inf or negative values; the message names ``uid`` and the argument.
        """
        v, p, steps, timing_cols = _checked_scores(uid, vsg, progress, steps, timings)
        num_segments, k = v.shape[0], v.shape[1] - 1
        full = num_segments * self.key.segment_duration
        if num_rows is not None and not full - self.key.segment_duration < num_rows <= full:
            raise ValueError(
                f"video {uid!r}: num_rows {num_rows} does not end in the last of "
                f"{num_segments} segments"
            )
        columns = _score_columns(uid, v, p, float(self.key.segment_duration), timing_cols)
        meta: dict[str, Any] = {
            "uid": uid,
            "num_steps": k,
            "source": self.key.source,
            "has_progress": p is not None,
            "steps": steps,
            "steps_sha256": None if steps is None else steps_sha256(steps),
            "annotation_sha256": annotation_sha256 or self.annotation_sha256,
            "timings": list(timing_cols),
        }
        if num_rows is not None and num_rows != full:
            meta["num_rows"] = int(num_rows)
        if self.key.label:
            meta["label"] = self.key.label
        return self._write_entry(uid, pa.table(columns), meta, ["video_uid"])

    def stored_steps(self, uid: str) -> tuple[str, ...] | None:
        """The step texts ``uid`` was scored for (``None``: not recorded); footer only."""
        steps = self.entry_meta(uid, ("steps",)).get("steps")
        return None if steps is None else tuple(steps)

    def stale(self, videos: Iterable[Any]) -> list[str]:
        """The uids of ``videos`` (with ``uid`` and ``steps``) stored for other steps than
        theirs: a resumed run scores them again (:mod:`baglm_nb.stores.provenance`)."""
        out = []
        for video in videos:
            try:
                stored = self.stored_steps(video.uid)
            except (KeyError, ValueError):
                continue  # not stored, or unreadable (redone as such)
            if is_stale(stored, video.steps):
                out.append(video.uid)
        return out

    def read_video(self, uid: str) -> VideoScores:
        """Read one video's scores.

        Raises
        ------
        KeyError
            ``uid`` is not stored (names the uid and the cache folder).
        ValueError
            The file is corrupt (names the file).
        """
        table, path = self._read_entry(uid)
        return self._decode(uid, table, path)

    def _decode(self, uid: str, table: pa.Table, path: Path) -> VideoScores:
        meta_names = ("uid", "num_steps", "steps", "source", "has_progress", "num_rows")
        meta = self._checked_meta(table, path, meta_names, _SCORE_COLUMNS)
        if meta.get("uid", uid) != uid:
            raise ValueError(f"{path}: file holds video {meta.get('uid')!r}, not {uid!r}")
        k = self._num_steps(meta, path)
        rows = table.num_rows
        vsg = _flat_values(table.column("vsg"), rows, k + 1, path, "vsg").reshape(rows, k + 1)
        prog_col = table.column("progress")
        if not meta.get("has_progress", prog_col.null_count < rows or rows == 0):
            progress = None
        else:
            progress = _flat_values(prog_col, rows, k * 10, path, "progress").reshape(rows, k, 10)
        _check_values(path, uid, vsg=vsg, progress=progress)
        _check_grid(path, uid, table, self.key.segment_duration)
        timings = {
            name: table.column(name).to_numpy().astype(np.float64, copy=True)
            for name in table.column_names
            if name not in _SCORE_COLUMNS
        }
        steps = meta.get("steps")
        return VideoScores(
            uid=uid,
            vsg=vsg,
            progress=progress,
            t_start=table.column("t_start").to_numpy().astype(np.float64, copy=True),
            t_end=table.column("t_end").to_numpy().astype(np.float64, copy=True),
            timings=timings,
            steps=None if steps is None else tuple(steps),
            source=str(meta.get("source", self.key.source)),
            segment_duration=self.key.segment_duration,
            num_rows=meta.get("num_rows"),
        )

    def per_second(self, uid: str) -> tuple[np.ndarray, np.ndarray | None]:
        """The published per-second arrays of ``uid``: (T, K+1) VSG and (T, K, 10) progress.

        Each segment row is repeated ``segment_duration`` times (``np.repeat`` on axis 0), so
        T = S * segment_duration and row t is second t (reference-protocol §2.5).
        """
        return self.read_video(uid).per_second()

    def read_all(self, uids: Iterable[str] | None = None) -> dict[str, VideoScores]:
        """Read many videos (default: all stored), as uid -> :class:`VideoScores`."""
        wanted = self.uids() if uids is None else list(uids)
        workers = min(8, os.cpu_count() or 1)
        if len(wanted) < 16 or workers < 4:
            return {uid: self.read_video(uid) for uid in wanted}
        # pyarrow releases the GIL while decoding, so threads overlap the I/O and decoding of
        # large files (each file's Python overhead does not overlap, so few cores gain nothing).
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return dict(zip(wanted, pool.map(self.read_video, wanted), strict=True))

    def timings_frame(self) -> pd.DataFrame:
        """All timing columns as one DataFrame with ``video_uid`` and ``segment`` columns.

        Timing names a video did not record are NaN for that video's rows.
        """
        frames = []
        for uid in self.uids():
            path = self.file(uid)
            try:
                table = read_parquet(path, _timing_columns)
            except FileNotFoundError:
                continue  # removed meanwhile
            frames.append(table.to_pandas())
        if not frames:
            return pd.DataFrame(
                {"video_uid": pd.Series(dtype=str), "segment": pd.Series(dtype="int32")}
            )
        return pd.concat(frames, ignore_index=True)


def read_weights_record(folder: str | os.PathLike) -> dict[str, Any] | None:
    """The :data:`WEIGHTS_FILE` of a cache folder (``None`` when there is none yet);
    ``ValueError`` naming the file when it is not a JSON object."""
    path = Path(folder) / WEIGHTS_FILE
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: unreadable weights record ({exc})") from None
    if not isinstance(record, dict):
        raise ValueError(f"{path}: unreadable weights record (not a JSON object)")
    return record


def warn_unfingerprinted(cache: ScoreCache) -> None:
    """Warn (one line) when ``cache`` holds a model's scores without a weights fingerprint, or
    when a fingerprinted cache has such an older folder beside it (never mixed with it)."""
    key = cache.key
    if key.source != "lmm":
        return
    if not key.weights:
        warnings.warn(
            f"{cache.path}: scores of {key.model!r} without a weights fingerprint (written before "
            "cache keys named the weights, or by a scorer without one): which weights made them "
            "is not checked",
            stacklevel=3,
        )
        return
    old = cache.root / ScoreKey(**{**key.to_dict(), "weights": ""}).relpath()
    if (old / "config.json").is_file():
        warnings.warn(
            f"{old}: older scores of {key.model!r} without a weights fingerprint are not reused; "
            f"scoring into {cache.path} (weights {key.weights})",
            stacklevel=3,
        )
