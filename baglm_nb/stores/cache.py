"""Parquet storage for BaGLM scores: VSG and progress per video, dependency matrices per group.

Layout under a cache ``root``::

    scores/<dataset>/<model>/<prompt_version>/seg<d>s_fps<f>/
        config.json                       # the ScoreKey (+ "label": "simulated" when simulated)
        videos/<quote(uid)>.parquet       # one file per video, one row per segment
    deps/<dataset>/<model>/<prompt_version>/
        config.json                       # the DependencyKey
        groups/<quote(group)>.parquet     # one file per group, one row per ordered step pair

Scores are stored **per segment** (S rows); :meth:`ScoreCache.per_second` rebuilds the published
per-second layout (reference-protocol §2.5), where every segment row is repeated
``segment_duration`` times, so row t is second t of the video. Dependency matrices keep the
published orientation (§4.2): ``D[i, j] = P(step j is a prerequisite of step i)``, row = target.

Every file is written atomically (temp file in the same folder, fsync, :func:`os.replace`), so a
reader never sees a half-written file and adding one video never touches another video's file.
:func:`import_reference_results` converts the authors' published ``.pt`` files into these caches.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from baglm_nb.inputs import grid
from baglm_nb.stores.atomic import atomic_write, atomic_write_json

if TYPE_CHECKING:
    from baglm_nb.inputs.datasets import Video

__all__ = [
    "SOURCES",
    "DependencyCache",
    "DependencyKey",
    "ScoreCache",
    "ScoreKey",
    "VideoScores",
    "import_reference_results",
]

SOURCES: tuple[str, ...] = ("lmm", "simulated", "imported")
"""Allowed values of :attr:`ScoreKey.source`."""

FORMAT_VERSION = 1
_META_PREFIX = "baglm."
_SCORE_COLUMNS = ("video_uid", "segment", "t_start", "t_end", "vsg", "progress")
_DEP_COLUMNS = ("group", "target_index", "prereq_index", "target_step", "prereq_step", "p_yes")
_LIST_F64 = pa.list_(pa.float64())
_UNSAFE = re.compile(r"[^A-Za-z0-9._+=@-]")


# --------------------------------------------------------------------------------------------
# keys


def _safe_component(value: object, name: str) -> str:
    """One path component: ``/`` and ``\\`` become ``__``, other unsafe characters ``_``."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    safe = _UNSAFE.sub("_", value.replace("/", "__").replace("\\", "__"))
    if not safe.strip("."):
        raise ValueError(f"{name} {value!r} is not a usable folder name")
    return safe


def _check_strings(obj: object, names: Iterable[str]) -> None:
    for name in names:
        _safe_component(getattr(obj, name), name)


def _key_from_dict(cls: type, data: Mapping[str, Any]):
    if not isinstance(data, Mapping):
        raise ValueError(f"{cls.__name__}.from_dict expects a mapping, got {type(data).__name__}")
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"{cls.__name__}.from_dict: unknown field(s) {unknown}")
    return cls(**data)


@dataclass(frozen=True)
class ScoreKey:
    """Identity of one set of scores: which dataset, LMM, prompt and sampling produced them.

    Parameters
    ----------
    dataset, model, prompt_version
        Free-form names; each becomes one sanitised folder (``"OpenGVLab/InternVL2_5-8B"`` ->
        ``"OpenGVLab__InternVL2_5-8B"``). Empty names are rejected.
    segment_duration
        Seconds per segment (a whole number >= 1).
    sampling_fps
        Frames sampled per second (> 0).
    source
        ``"lmm"`` (scored here), ``"simulated"`` (synthetic, always labelled as such) or
        ``"imported"`` (the authors' published files).
    """

    dataset: str
    model: str
    prompt_version: str
    segment_duration: int = 2
    sampling_fps: float = 2.0
    source: str = "lmm"

    def __post_init__(self) -> None:
        _check_strings(self, ("dataset", "model", "prompt_version"))
        d = self.segment_duration
        if isinstance(d, bool) or not isinstance(d, (int, float, np.integer, np.floating)):
            raise ValueError(f"segment_duration must be a whole number, got {d!r}")
        if int(d) != d or int(d) < 1:
            raise ValueError(f"segment_duration must be a whole number >= 1, got {d!r}")
        fps = self.sampling_fps
        if isinstance(fps, bool) or not isinstance(fps, (int, float, np.integer, np.floating)):
            raise ValueError(f"sampling_fps must be a number, got {fps!r}")
        if not math.isfinite(fps) or fps <= 0:
            raise ValueError(f"sampling_fps must be finite and > 0, got {fps!r}")
        if self.source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}, got {self.source!r}")
        object.__setattr__(self, "segment_duration", int(d))
        object.__setattr__(self, "sampling_fps", float(fps))

    @property
    def label(self) -> str | None:
        """``"simulated"`` for simulated scores, else ``None``."""
        return "simulated" if self.source == "simulated" else None

    @property
    def source_label(self) -> str:
        """The label every output carries: ``simulated``, or ``<source>:<model>``."""
        return "simulated" if self.source == "simulated" else f"{self.source}:{self.model}"

    def relpath(self) -> str:
        """``scores/<dataset>/<model>/<prompt_version>/seg<d>s_fps<f>`` (``/``-separated)."""
        parts = [
            _safe_component(getattr(self, n), n) for n in ("dataset", "model", "prompt_version")
        ]
        return "/".join(["scores", *parts, f"seg{self.segment_duration}s_fps{self.sampling_fps:g}"])

    def to_dict(self) -> dict[str, Any]:
        """The key as a JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScoreKey:
        """Inverse of :meth:`to_dict`; unknown fields raise ``ValueError``."""
        return _key_from_dict(cls, data)


@dataclass(frozen=True)
class DependencyKey:
    """Identity of one set of dependency matrices.

    ``model`` is the LLM name, ``"oracle"``, ``"none"`` or an imported model's name.
    """

    dataset: str
    model: str
    prompt_version: str

    def __post_init__(self) -> None:
        _check_strings(self, ("dataset", "model", "prompt_version"))

    def relpath(self) -> str:
        """``deps/<dataset>/<model>/<prompt_version>`` (``/``-separated)."""
        parts = [
            _safe_component(getattr(self, n), n) for n in ("dataset", "model", "prompt_version")
        ]
        return "/".join(["deps", *parts])

    def to_dict(self) -> dict[str, Any]:
        """The key as a JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DependencyKey:
        """Inverse of :meth:`to_dict`; unknown fields raise ``ValueError``."""
        return _key_from_dict(cls, data)


def _open_config(folder: Path, config: dict, key_cls: type, key: Any) -> None:
    """Create ``folder/config.json`` or check that the existing one holds ``key``."""
    path = folder / "config.json"
    if path.exists():
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
            stored_key = key_cls.from_dict(stored["key"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}: unreadable cache config ({exc})") from None
        if stored_key != key:
            raise ValueError(
                f"{path}: cache folder holds key {stored_key.to_dict()}, not {key.to_dict()}"
            )
        return
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, config)


def _open_existing(cls: type, folder: str | os.PathLike, kind: str, key_cls: type):
    """An existing cache folder (with ``config.json``) as an instance of ``cls``."""
    folder = Path(folder)
    path = folder / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{folder}: not a cache folder (no config.json)") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: unreadable cache config ({exc})") from None
    if config.get("kind") != kind:
        raise ValueError(f"{path}: holds a {config.get('kind')!r} cache, not {kind!r}")
    try:
        key = key_cls.from_dict(config["key"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: bad cache key ({exc})") from None
    root = folder
    for _ in key.relpath().split("/"):
        root = root.parent
    if (root / key.relpath()).resolve() == folder.resolve():
        return cls(root, key)
    obj = cls.__new__(cls)  # a moved or renamed folder: use it where it is
    obj.root, obj.key, obj.path = folder, key, folder
    return obj


def _entry_file(folder: Path, name: str) -> Path:
    return folder / (quote(name, safe="") + ".parquet")


def _list_entries(folder: Path) -> list[str]:
    """Sorted, unquoted names of the ``*.parquet`` files in ``folder`` (temp files excluded)."""
    if not folder.is_dir():
        return []
    out = []
    with os.scandir(folder) as it:
        for e in it:
            if e.name.endswith(".parquet") and e.is_file():
                out.append(unquote(e.name[: -len(".parquet")]))
    return sorted(out)


def _write_parquet_atomic(path: Path, table: pa.Table, dictionary: list[str]) -> None:
    # Uncompressed, dictionary only on the repeated string columns: float scores barely
    # compress, and plain pages decode several times faster (read_all speed).
    atomic_write(
        path, lambda f: pq.write_table(table, f, compression="none", use_dictionary=dictionary)
    )


def _parquet_file(path: Path) -> pq.ParquetFile:
    """Open ``path`` from its bytes (one read call; the fastest route for small files)."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        return pq.ParquetFile(pa.BufferReader(data))
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise ValueError(f"{path}: not a readable Parquet file ({exc})") from None


def _read_parquet(path: Path, columns: Callable[[list[str]], list[str]] | None = None) -> pa.Table:
    """Read ``path``; ``FileNotFoundError`` passes through, corruption is ``ValueError``.

    ``columns`` picks the columns to read from the file's column names.
    """
    pf = _parquet_file(path)
    try:
        names = None if columns is None else columns(pf.schema_arrow.names)
        return pf.read(columns=names, use_threads=False)
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise ValueError(f"{path}: not a readable Parquet file ({exc})") from None


def _meta(table: pa.Table, path: Path, names: Iterable[str]) -> dict[str, Any]:
    """The JSON-decoded ``baglm.<name>`` schema metadata entries that are present.

    ``ValueError`` (naming the file) when ``baglm.num_steps`` is missing or an entry is bad.
    """
    raw = table.schema.metadata or {}
    if (_META_PREFIX + "num_steps").encode() not in raw:
        raise ValueError(f"{path}: not a BaGLM cache file (metadata missing)")
    out = {}
    for name in names:
        value = raw.get((_META_PREFIX + name).encode())
        if value is not None:
            try:
                out[name] = json.loads(value)
            except ValueError:
                raise ValueError(f"{path}: bad metadata entry {_META_PREFIX + name!r}") from None
    return out


def _encode_meta(meta: Mapping[str, Any]) -> dict[bytes, bytes]:
    return {(_META_PREFIX + k).encode(): json.dumps(v).encode() for k, v in meta.items()}


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


# --------------------------------------------------------------------------------------------
# scores


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
        One of :data:`SOURCES`.
    segment_duration : int
        Seconds per segment (the repeat factor of :meth:`per_second`).
    """

    uid: str
    vsg: np.ndarray
    progress: np.ndarray | None
    t_start: np.ndarray
    t_end: np.ndarray
    timings: dict[str, np.ndarray] = field(default_factory=dict)
    steps: tuple[str, ...] | None = None
    source: str = "lmm"
    segment_duration: int = 2

    @property
    def num_segments(self) -> int:
        """S."""
        return int(self.vsg.shape[0])

    @property
    def num_steps(self) -> int:
        """K (the none column excluded)."""
        return int(self.vsg.shape[1]) - 1

    def per_second(self) -> tuple[np.ndarray, np.ndarray | None]:
        """The published per-second layout: (T, K+1) and (T, K, 10), T = S * segment_duration."""
        d = self.segment_duration
        prog = None if self.progress is None else grid.per_second(self.progress, d)
        return grid.per_second(self.vsg, d), prog


def _timing_columns(names: list[str]) -> list[str]:
    return ["video_uid", "segment", *(n for n in names if n not in _SCORE_COLUMNS)]


class ScoreCache:
    """VSG/progress scores of one :class:`ScoreKey`, one Parquet file per video.

    Parameters
    ----------
    root
        The cache root; files live under ``root / key.relpath()``.
    key
        The score key. Creating the cache writes ``config.json``; an existing ``config.json``
        with a different key raises ``ValueError``.
    """

    def __init__(self, root: str | os.PathLike, key: ScoreKey) -> None:
        if not isinstance(key, ScoreKey):
            raise TypeError(f"key must be a ScoreKey, got {type(key).__name__}")
        self.root = Path(root)
        self.key = key
        self.path = self.root / key.relpath()
        self.videos_dir = self.path / "videos"
        config = {"kind": "scores", "format_version": FORMAT_VERSION, "key": key.to_dict()}
        if key.label:
            config["label"] = key.label
        _open_config(self.path, config, ScoreKey, key)
        self.videos_dir.mkdir(parents=True, exist_ok=True)

    @classmethod
    def open(cls, folder: str | os.PathLike) -> ScoreCache:
        """Open an existing score cache folder (the one holding ``config.json``)."""
        cache = _open_existing(cls, folder, "scores", ScoreKey)
        cache.videos_dir = cache.path / "videos"
        return cache

    def __repr__(self) -> str:
        return f"ScoreCache({str(self.path)!r}, videos={len(self)})"

    @property
    def label(self) -> str | None:
        """``"simulated"`` when the scores are simulated, else ``None``."""
        return self.key.label

    def file(self, uid: str) -> Path:
        """The Parquet file of video ``uid`` (which may not exist yet)."""
        return _entry_file(self.videos_dir, uid)

    def has(self, uid: str) -> bool:
        """Whether video ``uid`` is stored."""
        return self.file(uid).is_file()

    __contains__ = has

    def uids(self) -> list[str]:
        """Sorted uids of the stored videos."""
        return _list_entries(self.videos_dir)

    def __len__(self) -> int:
        return len(self.uids())

    def write_video(
        self,
        uid: str,
        vsg: np.ndarray,
        progress: np.ndarray | None = None,
        *,
        steps: Sequence[str] | None = None,
        timings: Mapping[str, np.ndarray] | None = None,
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

        Returns
        -------
        Path
            The written file.

        Raises
        ------
        ValueError
            Bad shapes, NaN/inf or negative values; the message names ``uid`` and the argument.
        """
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

        d = float(self.key.segment_duration)
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
        meta: dict[str, Any] = {
            "format_version": FORMAT_VERSION,
            "key": self.key.to_dict(),
            "uid": uid,
            "num_steps": k,
            "source": self.key.source,
            "has_progress": p is not None,
            "steps": steps,
            "timings": list(timing_cols),
        }
        if self.key.label:
            meta["label"] = self.key.label
        table = pa.table(columns).replace_schema_metadata(_encode_meta(meta))
        path = self.file(uid)
        _write_parquet_atomic(path, table, ["video_uid"])
        return path

    def _missing(self, uid: str) -> KeyError:
        return KeyError(f"video {uid!r} is not in the score cache {self.path}")

    def read_video(self, uid: str) -> VideoScores:
        """Read one video's scores.

        Raises
        ------
        KeyError
            ``uid`` is not stored (names the uid and the cache folder).
        ValueError
            The file is corrupt (names the file).
        """
        path = self.file(uid)
        try:
            table = _read_parquet(path)
        except FileNotFoundError:
            raise self._missing(uid) from None
        return self._decode(uid, table, path)

    def _decode(self, uid: str, table: pa.Table, path: Path) -> VideoScores:
        meta = _meta(table, path, ("uid", "num_steps", "steps", "source", "has_progress"))
        names = table.column_names
        missing = [c for c in _SCORE_COLUMNS if c not in names]
        if missing:
            raise ValueError(f"{path}: missing column(s) {missing}")
        if meta.get("uid", uid) != uid:
            raise ValueError(f"{path}: file holds video {meta.get('uid')!r}, not {uid!r}")
        try:
            k = int(meta["num_steps"])
        except (TypeError, ValueError):
            raise ValueError(f"{path}: bad num_steps metadata") from None
        rows = table.num_rows
        vsg = _flat_values(table.column("vsg"), rows, k + 1, path, "vsg").reshape(rows, k + 1)
        prog_col = table.column("progress")
        if not meta.get("has_progress", prog_col.null_count < rows or rows == 0):
            progress = None
        else:
            progress = _flat_values(prog_col, rows, k * 10, path, "progress").reshape(rows, k, 10)
        timings = {
            name: table.column(name).to_numpy().astype(np.float64, copy=True)
            for name in names
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
        # large files (about 1 ms per file is Python overhead, so few cores gain nothing).
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
                table = _read_parquet(path, _timing_columns)
            except FileNotFoundError:
                continue  # removed meanwhile
            frames.append(table.to_pandas())
        if not frames:
            return pd.DataFrame(
                {"video_uid": pd.Series(dtype=str), "segment": pd.Series(dtype="int32")}
            )
        return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------------------------
# dependencies


class DependencyCache:
    """Dependency matrices of one :class:`DependencyKey`, one Parquet file per group.

    Each file holds one row per ordered step pair (K*K rows, diagonal included) with columns
    ``group, target_index, prereq_index, target_step, prereq_step, p_yes``, where
    ``D[target_index, prereq_index] = p_yes = P(prereq step is a prerequisite of target step)``.
    """

    def __init__(self, root: str | os.PathLike, key: DependencyKey) -> None:
        if not isinstance(key, DependencyKey):
            raise TypeError(f"key must be a DependencyKey, got {type(key).__name__}")
        self.root = Path(root)
        self.key = key
        self.path = self.root / key.relpath()
        self.groups_dir = self.path / "groups"
        config = {"kind": "dependencies", "format_version": FORMAT_VERSION, "key": key.to_dict()}
        _open_config(self.path, config, DependencyKey, key)
        self.groups_dir.mkdir(parents=True, exist_ok=True)

    @classmethod
    def open(cls, folder: str | os.PathLike) -> DependencyCache:
        """Open an existing dependency cache folder (the one holding ``config.json``)."""
        cache = _open_existing(cls, folder, "dependencies", DependencyKey)
        cache.groups_dir = cache.path / "groups"
        return cache

    def __repr__(self) -> str:
        return f"DependencyCache({str(self.path)!r}, groups={len(self)})"

    def file(self, group: str) -> Path:
        """The Parquet file of ``group`` (which may not exist yet)."""
        return _entry_file(self.groups_dir, group)

    def has(self, group: str) -> bool:
        """Whether ``group`` is stored."""
        return self.file(group).is_file()

    __contains__ = has

    def groups(self) -> list[str]:
        """Sorted keys of the stored groups."""
        return _list_entries(self.groups_dir)

    def __len__(self) -> int:
        return len(self.groups())

    def write(self, group: str, steps: Sequence[str], matrix: np.ndarray) -> Path:
        """Store (or atomically replace) the (K, K) matrix of ``group``.

        Parameters
        ----------
        group
            Group key (see :attr:`baglm_nb.inputs.datasets.Video.group`).
        steps
            The K step texts, in the matrix's (and the VSG columns') order.
        matrix
            ``D[i, j] = P(step j is a prerequisite of step i)``, values in [0, 1].

        Raises
        ------
        ValueError
            Shape mismatch, NaN or values outside [0, 1]; the message names the group and the
            argument.
        """
        if not isinstance(group, str) or not group:
            raise ValueError(f"group must be a non-empty string, got {group!r}")
        if isinstance(steps, str) or not all(isinstance(s, str) for s in steps):
            raise ValueError(f"group {group!r}: steps must be a sequence of str")
        steps = list(steps)
        k = len(steps)
        if k < 1:
            raise ValueError(f"group {group!r}: steps is empty")
        try:
            m = np.asarray(matrix, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"group {group!r}: matrix is not numeric ({exc})") from None
        if m.shape != (k, k):
            raise ValueError(
                f"group {group!r}: matrix has shape {m.shape}, expected {(k, k)} from "
                f"len(steps)={k}"
            )
        if np.isnan(m).any():
            raise ValueError(f"group {group!r}: matrix contains NaN")
        if (m < 0).any() or (m > 1).any():
            raise ValueError(f"group {group!r}: matrix has values outside [0, 1]")
        ti, pi = np.divmod(np.arange(k * k, dtype=np.int32), np.int32(k))
        step_arr = np.array(steps, dtype=object)
        table = pa.table(
            {
                "group": pa.array([group] * (k * k), type=pa.string()),
                "target_index": pa.array(ti, type=pa.int32()),
                "prereq_index": pa.array(pi, type=pa.int32()),
                "target_step": pa.array(step_arr[ti], type=pa.string()),
                "prereq_step": pa.array(step_arr[pi], type=pa.string()),
                "p_yes": pa.array(m.reshape(-1), type=pa.float64()),
            }
        )
        meta = {
            "format_version": FORMAT_VERSION,
            "key": self.key.to_dict(),
            "group": group,
            "num_steps": k,
            "steps": steps,
        }
        table = table.replace_schema_metadata(_encode_meta(meta))
        path = self.file(group)
        _write_parquet_atomic(path, table, ["group", "target_step", "prereq_step"])
        return path

    def _load(self, group: str) -> tuple[list[str], np.ndarray]:
        path = self.file(group)
        try:
            table = _read_parquet(path)
        except FileNotFoundError:
            raise KeyError(f"group {group!r} is not in the dependency cache {self.path}") from None
        meta = _meta(table, path, ("num_steps", "steps"))
        missing = [c for c in _DEP_COLUMNS if c not in table.column_names]
        if missing:
            raise ValueError(f"{path}: missing column(s) {missing}")
        try:
            k = int(meta["num_steps"])
        except (TypeError, ValueError):
            raise ValueError(f"{path}: bad num_steps metadata") from None
        ti = table.column("target_index").to_numpy()
        pi = table.column("prereq_index").to_numpy()
        p = table.column("p_yes").to_numpy()
        if (
            table.num_rows != k * k
            or ti.size
            and (ti.min() < 0 or pi.min() < 0 or ti.max() >= k or pi.max() >= k)
        ):
            raise ValueError(f"{path}: expected {k * k} rows with indices in [0, {k})")
        m = np.full((k, k), np.nan)
        m[ti, pi] = p
        if np.isnan(m).any():
            raise ValueError(f"{path}: pairs are missing or p_yes has NaN")
        steps = meta.get("steps")
        if steps is None or len(steps) != k:
            names = [""] * k
            for i, s in zip(ti.tolist(), table.column("target_step").to_pylist(), strict=True):
                names[i] = s
            steps = names
        return list(steps), m

    def read(self, group: str) -> np.ndarray:
        """The (K, K) float64 matrix of ``group``; ``KeyError`` if missing."""
        return self._load(group)[1]

    def steps(self, group: str) -> list[str]:
        """The step texts of ``group``, in matrix order."""
        return self._load(group)[0]

    def read_all(self) -> dict[str, np.ndarray]:
        """All stored matrices, as group -> (K, K) float64."""
        return {g: self.read(g) for g in self.groups()}


# --------------------------------------------------------------------------------------------
# import of the published .pt files


def _find_pt(base: Path, sub: str, name: str) -> tuple[Path | None, list[Path]]:
    """``base/sub/name.pt`` if present, else ``base/name.pt``; returns (found, candidates)."""
    candidates = [base / sub / f"{name}.pt", base / f"{name}.pt"]
    for c in candidates:
        if c.is_file():
            return c, candidates
    return None, candidates


def _load_tensor(path: Path) -> np.ndarray:
    import torch

    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # unpickling errors come in many types
        raise ValueError(
            f"{path}: cannot load as a single tensor ({type(exc).__name__}: {exc})"
        ) from None
    if not isinstance(obj, torch.Tensor):
        raise ValueError(f"{path}: expected a single tensor, got {type(obj).__name__}")
    if not obj.is_floating_point():
        raise ValueError(f"{path}: expected a float tensor, got dtype {obj.dtype}")
    return obj.detach().to(torch.float64).numpy()


def _per_segment(arr: np.ndarray, path: Path, expected: tuple[int, ...], d: int) -> np.ndarray:
    """Check the per-second shape and duplicated rows; return every ``d``-th row."""
    if arr.shape != expected:
        raise ValueError(f"{path}: expected shape {expected}, got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{path}: contains NaN or inf values")
    segs = arr.reshape(expected[0] // d, d, *expected[1:])
    same = np.isclose(segs, segs[:, :1]).reshape(segs.shape[0], -1)  # np.allclose tolerances
    if not same.all():
        bad = int(np.argmin(same.all(axis=1)))
        raise ValueError(
            f"{path}: shape {arr.shape} (expected {expected}) but the {d} rows of segment {bad} "
            f"differ; expected each segment row repeated {d} times"
        )
    return np.ascontiguousarray(segs[:, 0])


def import_reference_results(
    src_dir: str | os.PathLike,
    dataset: str,
    model: str,
    *,
    root: str | os.PathLike,
    llm: str = "llama-3.3-70b-instruct",
    segment_duration: int = 2,
    sampling_fps: float = 2.0,
    videos: Sequence[Video] | None = None,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Import the authors' published precomputed ``.pt`` files into the Parquet caches.

    Parameters
    ----------
    src_dir
        Folder with ``vsg/``, ``prog/`` and ``prereq/``. Each file is looked up first in the
        model sub-folder (``vsg/<model>/<uid>.pt``, ``prog/<model>/<uid>.pt``,
        ``prereq/<llm>/<group>.pt``), then flat (``vsg/<uid>.pt`` ...).
    dataset, model
        Dataset name (for :func:`baglm_nb.inputs.datasets.load_dataset`) and LMM key.
    root
        Cache root for :class:`ScoreCache` and :class:`DependencyCache`.
    llm
        LLM key of the prerequisite matrices.
    segment_duration, sampling_fps
        The sampling the files were made with; T must equal ``video.num_rows(...)``.
    videos
        The annotation records (default: ``load_dataset(dataset)``).
    show_progress
        Show tqdm progress bars.

    Returns
    -------
    dict
        ``videos_imported``, ``videos_skipped`` (no VSG file), ``groups_imported``,
        ``scores_path`` and ``dependencies_path``.

    Raises
    ------
    ValueError
        A file that is not a single float tensor, has the wrong shape (T or K) or whose rows
        within a segment differ; a missing progress file for a video with VSG; a missing
        prerequisite file for the group of an imported video. The message names the file.
        Videos written before the error stay in the cache (each file is complete).
    """
    from tqdm.auto import tqdm

    src = Path(src_dir)
    if videos is None:
        from baglm_nb.inputs.datasets import load_dataset

        videos = load_dataset(dataset)
    d = int(segment_duration)
    scores = ScoreCache(
        root, ScoreKey(dataset, model, "published", d, sampling_fps, source="imported")
    )
    deps = DependencyCache(root, DependencyKey(dataset, llm, "published"))

    imported = skipped = 0
    group_steps: dict[str, tuple[str, ...]] = {}
    for video in tqdm(videos, desc=f"import {dataset} scores", disable=not show_progress):
        vsg_path, _ = _find_pt(src / "vsg", model, video.uid)
        if vsg_path is None:
            skipped += 1
            continue
        prog_path, prog_candidates = _find_pt(src / "prog", model, video.uid)
        if prog_path is None:
            raise ValueError(
                f"{prog_candidates[0]}: progress file missing for video {video.uid!r} "
                f"(also tried {prog_candidates[1]})"
            )
        if group_steps.setdefault(video.group, video.steps) != video.steps:
            raise ValueError(
                f"group {video.group!r}: videos of this group have different step lists "
                f"(video {video.uid!r}); one dependency matrix cannot serve them all"
            )
        t, k = video.num_rows(d, sampling_fps), video.num_steps
        vsg = _per_segment(_load_tensor(vsg_path), vsg_path, (t, k + 1), d)
        prog = _per_segment(_load_tensor(prog_path), prog_path, (t, k, 10), d)
        try:
            scores.write_video(video.uid, vsg, prog, steps=video.steps)
        except ValueError as exc:
            raise ValueError(f"{vsg_path} / {prog_path}: {exc}") from None
        imported += 1

    for group, steps in tqdm(
        sorted(group_steps.items()), desc=f"import {dataset} prereqs", disable=not show_progress
    ):
        path, candidates = _find_pt(src / "prereq", llm, group)
        if path is None:
            raise ValueError(
                f"{candidates[0]}: prerequisite file missing for group {group!r} "
                f"(also tried {candidates[1]})"
            )
        m = _load_tensor(path)
        k = len(steps)
        if m.shape != (k, k):
            raise ValueError(f"{path}: expected shape {(k, k)}, got {m.shape}")
        try:
            deps.write(group, steps, m)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None

    return {
        "videos_imported": imported,
        "videos_skipped": skipped,
        "groups_imported": len(group_steps),
        "scores_path": str(scores.path),
        "dependencies_path": str(deps.path),
    }
