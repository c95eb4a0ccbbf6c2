"""What a cache entry was computed for, and the one check that it still fits the annotation.

Every score-cache file (one video) and dependency-cache file (one task group) records the step
texts it was computed for, in column order (``steps``), their hash (``steps_sha256``: SHA-256 of
the JSON list, so order and wording both count) and, where the writer knows it, the SHA-256 of
the annotation file in use (``annotation_sha256``). The grid (segment duration, sampling fps) is
the cache key's, stored in ``config.json`` and in every file.

A reader compares an entry's stored steps with the annotation in use (:func:`check_steps`): a
difference (steps reversed, renamed, added or dropped) is a :class:`StaleCacheError` naming the
file, the annotation file and the first differing step; ``score``, ``simulate`` and ``deps``
resume re-compute such an entry (:func:`is_stale`). The annotation's hash is kept as a record
only: an edit to another video of the same file leaves this video's scores valid.

Caches written before the record (files without ``steps``) are read as they are, with one
warning line per cache (:func:`warn_unrecorded`).

Exports :class:`StaleCacheError`, :func:`steps_sha256`, :func:`file_sha256`,
:func:`first_difference`, :func:`check_steps`, :func:`is_stale` and :func:`warn_unrecorded`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "StaleCacheError",
    "check_steps",
    "file_sha256",
    "first_difference",
    "is_stale",
    "steps_sha256",
    "warn_unrecorded",
]


class StaleCacheError(ValueError):
    """A cached video or group was computed for other steps than the annotation in use."""


def steps_sha256(steps: Sequence[str]) -> str:
    """SHA-256 (hex) of the step texts in order, as a JSON list."""
    return hashlib.sha256(json.dumps(list(steps)).encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=64)
def _sha256(path: str, _mtime_ns: int, _size: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_sha256(path: str | os.PathLike) -> str:
    """SHA-256 (hex) of a file's bytes (remembered while the file's mtime and size hold)."""
    st = os.stat(path)
    return _sha256(str(Path(path).resolve()), st.st_mtime_ns, st.st_size)


def first_difference(stored: Sequence[str], wanted: Sequence[str]) -> str | None:
    """The first difference between stored and wanted step lists, in words; ``None``: equal."""
    stored, wanted = list(stored), list(wanted)
    if stored == wanted:
        return None
    for i, (a, b) in enumerate(zip(stored, wanted, strict=False), start=1):
        if a != b:
            return f"step {i} is {a!r} in the cache, {b!r} in the annotation"
    return f"the cache has {len(stored)} steps, the annotation {len(wanted)}"


def is_stale(stored: Sequence[str] | None, wanted: Sequence[str]) -> bool:
    """Whether an entry with ``stored`` steps must be computed again for ``wanted``
    (``None``: written before the record, kept)."""
    return stored is not None and list(stored) != list(wanted)


def check_steps(
    stored: Sequence[str] | None,
    wanted: Sequence[str],
    *,
    file: str | os.PathLike,
    annotation: str | os.PathLike,
    what: str,
    redo: str,
) -> None:
    """Raise :class:`StaleCacheError` when ``stored`` differs from ``wanted``.

    Parameters
    ----------
    stored
        The entry's recorded steps (``None``: not recorded, nothing to check).
    wanted
        The steps of the annotation in use.
    file, annotation
        The cache file and the annotation file (both named in the message).
    what
        The entry, e.g. ``"video 'abc'"`` or ``"group 'task 7'"``.
    redo
        How to bring the entry up to date (the message's last clause).
    """
    if stored is None:
        return
    why = first_difference(stored, wanted)
    if why is not None:
        raise StaleCacheError(
            f"{file}: {what} was computed for other steps than {annotation} ({why}); {redo}"
        )


def warn_unrecorded(folder: str | os.PathLike, count: int) -> None:
    """One warning line on stderr: ``count`` entries of ``folder`` record no step list."""
    if count:
        print(
            f"warning: {folder}: {count} cached entr{'y' if count == 1 else 'ies'} record no "
            "step list (written before the record); they are used unchecked",
            file=sys.stderr,
        )
