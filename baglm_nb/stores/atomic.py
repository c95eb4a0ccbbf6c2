"""The one atomic file writer: write a temp file beside the target, fsync, then rename over it.

A reader (or a crash, or a kill) never sees a half-written file: it sees the old file or the
new one. Temp files are named ``.tmp-<random>.tmp`` in the target's folder (never ``*.parquet``
or ``*.json``), so a folder scan never mistakes one for a stored entry.

Exports :func:`atomic_write` (any writer callback), :func:`atomic_write_text`,
:func:`atomic_write_json` and :func:`atomic_save` (a library's ``save(path)`` method).
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

__all__ = ["atomic_save", "atomic_write", "atomic_write_json", "atomic_write_text", "publish_dir"]


def _temp_beside(path: Path) -> Path:
    return path.parent / f".tmp-{secrets.token_hex(8)}.tmp"


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # e.g. Windows
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _replace(tmp: Path, path: Path) -> None:
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _naming(exc: OSError, path: Path) -> OSError:
    """``exc`` with ``path`` named (a full disk, a quota: the OS error names no file)."""
    if exc.filename is not None:
        return exc
    if exc.errno is None:
        return OSError(f"{path}: {exc}")
    return OSError(exc.errno, exc.strerror or str(exc), str(path))


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], object]) -> Path:
    """Call ``write(fileobj)`` on a binary temp file beside ``path``, fsync it, rename it.

    The parent folder is created. On any error the temp file is removed and ``path`` is left
    as it was; an ``OSError`` that names no file (a full disk) is raised naming ``path``. The
    file gets the usual umask permissions. Returns the path.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_beside(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _naming(exc, path) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _replace(tmp, path)
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns the path."""
    return atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def atomic_write_json(path: str | os.PathLike, data: Any) -> Path:
    """Write ``data`` as indented JSON with sorted keys and a final newline, atomically."""
    return atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def atomic_save(path: str | os.PathLike, save: Callable[[str], object]) -> Path:
    """Atomically write a file that a library saves by name: ``save(temp_path)``, then rename.

    For writers that take a path rather than a file object (e.g. ``tokenizers.Tokenizer.save``).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_beside(path)
    try:
        save(str(tmp))
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _replace(tmp, path)
    return path


def publish_dir(
    tmp: str | os.PathLike, folder: str | os.PathLike, marker: str = ".complete"
) -> None:
    """Rename the finished folder ``tmp`` (holding ``marker``) to ``folder``, readable by all.

    Another process that published ``folder`` first wins: its copy is kept (``tmp`` is left
    for the caller to remove). Any other failure is raised.
    """
    tmp, folder = Path(tmp), Path(folder)
    os.chmod(tmp, 0o755)  # mkdtemp makes it private
    try:
        os.replace(tmp, folder)
    except OSError:  # another process finished first
        if not (folder / marker).is_file():
            raise
