"""Fingerprints of a model's weights, so that a score cache's key follows the weights.

A model id alone does not name weights: two tiny random Qwen2.5-VL models that differ only in
their vision depth had the same id, and a served name says nothing of what the server loaded.
Each scorer therefore carries a ``fingerprint`` (16 hex digits) that
:func:`baglm_nb.models.scoring.score_dataset` puts in the :class:`~baglm_nb.stores.keys.ScoreKey`:

* :func:`config_fingerprint`: a tiny randomly initialised model: its whole config (vision
  layers included) and its model id (which holds the seed);
* :func:`folder_fingerprint`: local weights: the content (SHA-256) of every weight, config,
  tokenizer, template and code file of the folder (:func:`weights_record`), so that weights
  saved over in place get another key. A large file is read once per version: its hash is kept
  in a JSON memo (:func:`file_sha256`, :func:`hash_memo_path`) by path, size and modification
  time. A Hugging Face hub snapshot's revision is recorded beside (:func:`hub_revision`);
* :func:`served_fingerprint`: a model behind a server: the model name, what the server reports
  about it on ``/v1/models`` (:func:`served_metadata`: llama.cpp's ``meta``, vLLM's ``root``
  and ``max_model_len``) and the strategy.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from baglm_nb.stores.atomic import atomic_write_json

__all__ = [
    "MEMO_MIN_BYTES",
    "config_fingerprint",
    "digest",
    "file_sha256",
    "folder_fingerprint",
    "hash_memo_path",
    "hub_revision",
    "record_fingerprint",
    "served_fingerprint",
    "served_metadata",
    "weights_record",
]

_SERVED_FIELDS = ("id", "root", "max_model_len", "meta", "owned_by")
"""The ``/v1/models`` fields of one model that describe its weights (not the time it started)."""
MEMO_MIN_BYTES = 1 << 20
"""Files at least this large have their hash kept in the memo (:func:`file_sha256`); smaller
ones are read each time (faster than the memo)."""
_WEIGHT_SUFFIXES = (
    ".safetensors",
    ".bin",
    ".pt",
    ".pth",
    ".gguf",
    ".json",
    ".jinja",
    ".txt",
    ".model",
    ".tiktoken",
    ".py",
)
"""The files of a model folder that make its scores: weights, config, tokenizer, template, code."""


def digest(value: Any) -> str:
    """16 hex digits of the SHA-256 of ``value`` as canonical JSON."""
    text = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def config_fingerprint(config: Any, model_id: str) -> str:
    """A transformers config (as its JSON, every field) and the model id, digested."""
    text = config.to_json_string(use_diff=False) if hasattr(config, "to_json_string") else config
    fields = json.loads(text) if isinstance(text, str) else dict(text)
    fields.pop("transformers_version", None)  # the library's, not the model's
    return digest([model_id, fields])


def hash_memo_path() -> Path:
    """The file-hash memo: ``$BAGLM_HASH_MEMO``, else ``file_hashes.json`` in the user's cache
    folder for this package (``$XDG_CACHE_HOME`` or ``~/.cache``, then ``baglm_nb``)."""
    env = os.environ.get("BAGLM_HASH_MEMO")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    try:
        base = Path(xdg) if xdg else Path.home() / ".cache"
    except RuntimeError:  # no home folder at all: the memo lives beside the system's temp files
        import tempfile

        base = Path(tempfile.gettempdir())
    return base / "baglm_nb" / "file_hashes.json"


def _read_memo(path: Path) -> dict[str, Any]:
    """The memo's entries (``{}`` when it is missing, unreadable or not the memo's shape)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _version(stat: os.stat_result) -> list[int]:
    """What names one version of a file for the memo: size and modification time (ns)."""
    return [stat.st_size, stat.st_mtime_ns]


def file_sha256(path: str | os.PathLike, *, memo: Path | None = None) -> str:
    """The SHA-256 of a file's content, computed once per file version.

    Files of at least :data:`MEMO_MIN_BYTES` are looked up in a JSON memo
    (:func:`hash_memo_path`) by resolved path, size and modification time in nanoseconds; a
    miss reads the file and records it. The memo is written with the atomic writer after
    merging the entries on disk at that moment, so concurrent writers never leave a broken
    file (a lost entry is computed again); a memo that cannot be written (a read-only home)
    only costs that recomputation.
    """
    path = Path(path).resolve()
    stat = path.stat()
    if stat.st_size < MEMO_MIN_BYTES:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    memo = hash_memo_path() if memo is None else memo
    entry = _read_memo(memo).get(str(path))
    if isinstance(entry, dict) and entry.get("version") == _version(stat):
        sha = entry.get("sha256")
        if isinstance(sha, str) and len(sha) == 64:
            return sha
    with open(path, "rb") as f:
        sha = hashlib.file_digest(f, "sha256").hexdigest()
    if _version(path.stat()) != _version(stat):  # written while it was read: not recorded
        return sha
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        entries = _read_memo(memo)
        entries[str(path)] = {"version": _version(stat), "sha256": sha}
        entries = {p: e for p, e in entries.items() if os.path.exists(p)}  # drop removed files
        atomic_write_json(memo, entries)
    except OSError:
        pass
    return sha


def hub_revision(folder: str | os.PathLike) -> str | None:
    """The Hugging Face revision (commit) of a hub-cache snapshot folder
    (``.../models--org--name/snapshots/<revision>``), else ``None``."""
    folder = Path(folder).absolute()
    if folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("models--"):
        return folder.name
    return None


def weights_record(folder: str | os.PathLike) -> dict[str, Any]:
    """What a local model folder holds: ``{"files": {name: sha256}, "hf_revision": ...}``.

    ``files`` are the folder's weight files and every file the loader reads with them (config,
    tokenizer, chat template, processor, the repository's code): the names ending in
    :data:`_WEIGHT_SUFFIXES`, each hashed by :func:`file_sha256`. ``hf_revision`` is
    :func:`hub_revision` (recorded, not digested: a new revision with the same files keeps its
    scores).
    """
    folder = Path(folder)
    files = {
        p.name: file_sha256(p)
        for p in sorted(folder.iterdir())
        if p.name.endswith(_WEIGHT_SUFFIXES) and p.is_file()
    }
    return {"files": files, "hf_revision": hub_revision(folder)}


def record_fingerprint(record: dict[str, Any]) -> str:
    """The fingerprint of a :func:`weights_record`: its files' names and content, digested."""
    return digest(sorted(record["files"].items()))


def folder_fingerprint(folder: str | os.PathLike) -> str:
    """The content of a model folder's files (:func:`weights_record`), digested."""
    return record_fingerprint(weights_record(folder))


def served_metadata(models: Any, model: str) -> dict[str, Any]:
    """What a ``/v1/models`` answer says about ``model``'s weights (``{}`` when nothing).

    The entry whose ``id`` is ``model``, else the only entry (llama.cpp serves one model under
    any name); only :data:`_SERVED_FIELDS` are kept.
    """
    data = models.get("data") if isinstance(models, dict) else None
    entries = [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []
    named = [e for e in entries if e.get("id") == model]
    entry = named[0] if named else (entries[0] if len(entries) == 1 else {})
    return {k: entry[k] for k in _SERVED_FIELDS if k in entry}


def served_fingerprint(model: str, metadata: dict[str, Any], strategy: str) -> str:
    """The served model's name, its server-reported metadata and the strategy, digested."""
    return digest([model, metadata, strategy])
