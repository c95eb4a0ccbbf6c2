"""The on-disk layer both caches share: a key's folder of Parquet entries.

A cache folder holds ``config.json`` (``kind``, ``format_version`` and the key) and one Parquet
file per entry (a video, a group) in one sub-folder, named ``quote(name) + ".parquet"``. Each
file carries its BaGLM metadata as JSON values under ``baglm.<name>`` schema-metadata keys.
Every file is written through :func:`baglm_nb.stores.atomic.atomic_write`, so a reader never
sees a half-written file and writing one entry never touches another.

Exports :data:`FORMAT_VERSION`, :class:`ParquetFolder` (the base of
:class:`~baglm_nb.stores.scores.ScoreCache` and
:class:`~baglm_nb.stores.dependencies.DependencyCache`: config, listing, entry files, reading
with checked metadata) and the file helpers :func:`entry_file`, :func:`list_entries`,
:func:`write_parquet`, :func:`read_parquet`, :func:`read_meta` and :func:`encode_meta`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Self
from urllib.parse import quote, unquote

import pyarrow as pa
import pyarrow.parquet as pq

from baglm_nb.stores.atomic import atomic_write, atomic_write_json

__all__ = [
    "FORMAT_VERSION",
    "MissingEntryError",
    "ParquetFolder",
    "encode_meta",
    "entry_file",
    "list_entries",
    "read_meta",
    "read_parquet",
    "write_parquet",
]

#: Version of the folder and file layout, stored in ``config.json`` and every file's metadata.
FORMAT_VERSION = 1
_META_PREFIX = "baglm."


class MissingEntryError(KeyError, ValueError):
    """An entry (a video, a group) that a cache or a mapping does not hold: bad input, and a
    ``KeyError`` for lookups; the message names the entry and where it was looked for."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


# --------------------------------------------------------------------------------------------
# files


def entry_file(folder: Path, name: str) -> Path:
    """The Parquet file of entry ``name`` in ``folder``: ``quote(name, safe="") + ".parquet"``."""
    return folder / (quote(name, safe="") + ".parquet")


def list_entries(folder: Path) -> list[str]:
    """Sorted, unquoted names of the ``*.parquet`` files in ``folder`` (temp files excluded)."""
    if not folder.is_dir():
        return []
    out = []
    with os.scandir(folder) as it:
        for e in it:
            if e.name.endswith(".parquet") and e.is_file():
                out.append(unquote(e.name[: -len(".parquet")]))
    return sorted(out)


def write_parquet(path: Path, table: pa.Table, dictionary: list[str]) -> None:
    """Write ``table`` to ``path`` atomically, uncompressed, dictionary-encoding ``dictionary``."""
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


def read_parquet(path: Path, columns: Callable[[list[str]], list[str]] | None = None) -> pa.Table:
    """Read ``path``; ``FileNotFoundError`` passes through, corruption is ``ValueError``.

    ``columns`` picks the columns to read from the file's column names.
    """
    pf = _parquet_file(path)
    try:
        names = None if columns is None else columns(pf.schema_arrow.names)
        return pf.read(columns=names, use_threads=False)
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise ValueError(f"{path}: not a readable Parquet file ({exc})") from None


def read_meta(table: pa.Table, path: Path, names: Iterable[str]) -> dict[str, Any]:
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


def encode_meta(meta: Mapping[str, Any]) -> dict[bytes, bytes]:
    """``meta`` as schema metadata: ``baglm.<name>`` -> JSON, in the mapping's order."""
    return {(_META_PREFIX + k).encode(): json.dumps(v).encode() for k, v in meta.items()}


# --------------------------------------------------------------------------------------------
# config.json


def _create_or_check_config(folder: Path, config: dict, key_type: type, key: Any) -> None:
    """Create ``folder/config.json`` or check that the existing one holds ``key``."""
    path = folder / "config.json"
    if path.exists():
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
            stored_key = key_type.from_dict(stored["key"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}: unreadable cache config ({exc})") from None
        if stored_key != key:
            raise ValueError(
                f"{path}: cache folder holds key {stored_key.to_dict()}, not {key.to_dict()}"
            )
        return
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, config)


def _read_config_key(folder: Path, kind: str, key_type: type) -> Any:
    """The key in an existing ``folder/config.json`` of a ``kind`` cache."""
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
        return key_type.from_dict(config["key"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: bad cache key ({exc})") from None


# --------------------------------------------------------------------------------------------
# the shared folder


class ParquetFolder:
    """The folder of one cache key: ``config.json`` and one Parquet file per entry.

    Subclasses set :attr:`kind` (``config.json``'s ``kind``), :attr:`key_type` (a key class of
    :mod:`baglm_nb.stores.keys`), :attr:`entries` (the sub-folder, also the entries' name in
    ``repr``), :attr:`entry_word` and :attr:`cache_word` (an entry and the cache in messages).
    Creating an instance writes ``config.json``; an existing one with a different key raises
    ``ValueError``.
    """

    kind: ClassVar[str]
    key_type: ClassVar[type]
    entries: ClassVar[str]
    entry_word: ClassVar[str]
    cache_word: ClassVar[str]
    #: SHA-256 of the annotation file the entries' steps come from, recorded in every entry
    #: written (``None``: not known; :mod:`baglm_nb.stores.provenance`).
    annotation_sha256: str | None = None

    def __init__(self, root: str | os.PathLike, key: Any) -> None:
        if not isinstance(key, self.key_type):
            raise TypeError(f"key must be a {self.key_type.__name__}, got {type(key).__name__}")
        self.root = Path(root)
        self.key = key
        self.path = self.root / key.relpath()
        _create_or_check_config(self.path, self._config(), self.key_type, key)
        self.entries_dir.mkdir(parents=True, exist_ok=True)

    def _config(self) -> dict[str, Any]:
        """What ``config.json`` holds."""
        return {"kind": self.kind, "format_version": FORMAT_VERSION, "key": self.key.to_dict()}

    @classmethod
    def open(cls, folder: str | os.PathLike) -> Self:
        """Open an existing cache folder (the one holding ``config.json``)."""
        folder = Path(folder)
        key = _read_config_key(folder, cls.kind, cls.key_type)
        root = folder
        for _ in key.relpath().split("/"):
            root = root.parent
        if (root / key.relpath()).resolve() == folder.resolve():
            return cls(root, key)
        obj = cls.__new__(cls)  # a moved or renamed folder: use it where it is
        obj.root, obj.key, obj.path = folder, key, folder
        return obj

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r}, {self.entries}={len(self)})"

    @property
    def entries_dir(self) -> Path:
        """The sub-folder holding the entries' Parquet files."""
        return self.path / self.entries

    def file(self, name: str) -> Path:
        """The Parquet file of entry ``name`` (which may not exist yet)."""
        return entry_file(self.entries_dir, name)

    def has(self, name: str) -> bool:
        """Whether entry ``name`` is stored."""
        return self.file(name).is_file()

    __contains__ = has

    def is_readable(self, name: str) -> bool:
        """Whether entry ``name`` is stored with a readable Parquet footer (a truncated or
        overwritten file is not: a resumed run redoes it)."""
        try:
            pq.read_metadata(self.file(name))
        except (OSError, pa.ArrowException):
            return False
        return True

    def names(self) -> list[str]:
        """Sorted names of the stored entries."""
        return list_entries(self.entries_dir)

    def __len__(self) -> int:
        return len(self.names())

    def _write_entry(
        self, name: str, table: pa.Table, meta: Mapping[str, Any], dictionary: list[str]
    ) -> Path:
        """Write entry ``name``: ``table`` with ``format_version``, ``key`` and ``meta``."""
        meta = {"format_version": FORMAT_VERSION, "key": self.key.to_dict(), **meta}
        path = self.file(name)
        write_parquet(path, table.replace_schema_metadata(encode_meta(meta)), dictionary)
        return path

    def _read_entry(self, name: str) -> tuple[pa.Table, Path]:
        """The table of entry ``name``; ``KeyError`` (naming it and the folder) when missing."""
        path = self.file(name)
        try:
            return read_parquet(path), path
        except FileNotFoundError:
            raise MissingEntryError(
                f"{self.entry_word} {name!r} is not in the {self.cache_word} cache {self.path}"
            ) from None

    def entry_meta(self, name: str, names: Iterable[str]) -> dict[str, Any]:
        """The ``names`` metadata of entry ``name``, read from its footer only (no data).

        ``KeyError`` when the entry is missing, ``ValueError`` (naming the file) when unreadable.
        """
        path = self.file(name)
        try:
            schema = pq.read_schema(path)
        except FileNotFoundError:
            raise MissingEntryError(
                f"{self.entry_word} {name!r} is not in the {self.cache_word} cache {self.path}"
            ) from None
        except (OSError, pa.ArrowException) as exc:
            raise ValueError(f"{path}: not a readable Parquet file ({exc})") from None
        return read_meta(schema.empty_table(), path, names)

    @staticmethod
    def _checked_meta(
        table: pa.Table, path: Path, names: Iterable[str], columns: Iterable[str]
    ) -> dict[str, Any]:
        """:func:`read_meta` of ``names``; ``ValueError`` when one of ``columns`` is missing."""
        meta = read_meta(table, path, names)
        missing = [c for c in columns if c not in table.column_names]
        if missing:
            raise ValueError(f"{path}: missing column(s) {missing}")
        return meta

    @staticmethod
    def _num_steps(meta: Mapping[str, Any], path: Path) -> int:
        """K from the ``num_steps`` metadata; ``ValueError`` naming the file when bad."""
        try:
            return int(meta["num_steps"])
        except (TypeError, ValueError):
            raise ValueError(f"{path}: bad num_steps metadata") from None
