"""Fingerprints of a model's weights, so that a score cache's key follows the weights.

A model id alone does not name weights: two tiny random Qwen2.5-VL models that differ only in
their vision depth had the same id, and a served name says nothing of what the server loaded.
Each scorer therefore carries a ``fingerprint`` (16 hex digits) that
:func:`baglm_nb.models.scoring.score_dataset` puts in the :class:`~baglm_nb.stores.keys.ScoreKey`:

* :func:`config_fingerprint`: a tiny randomly initialised model: its whole config (vision
  layers included) and its model id (which holds the seed);
* :func:`folder_fingerprint`: local weights: ``config.json`` and each weight file's name, size
  and safetensors header (the tensors' names, dtypes, shapes and offsets), read in
  milliseconds without reading the weights; a ``.bin`` file by name and size;
* :func:`served_fingerprint`: a model behind a server: the model name, what the server reports
  about it on ``/v1/models`` (:func:`served_metadata`: llama.cpp's ``meta``, vLLM's ``root``
  and ``max_model_len``) and the strategy.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path
from typing import Any

__all__ = [
    "config_fingerprint",
    "digest",
    "folder_fingerprint",
    "served_fingerprint",
    "served_metadata",
]

_SERVED_FIELDS = ("id", "root", "max_model_len", "meta", "owned_by")
"""The ``/v1/models`` fields of one model that describe its weights (not the time it started)."""
_MAX_HEADER = 100_000_000
"""Largest safetensors header read (the format's own limit)."""


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


def _safetensors_header(path: Path) -> str:
    """The SHA-256 of a safetensors file's JSON header (8-byte length, then the header)."""
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise ValueError(f"{path}: not a safetensors file (shorter than 8 bytes)")
        (n,) = struct.unpack("<Q", head)
        if n > _MAX_HEADER:
            raise ValueError(f"{path}: not a safetensors file (header of {n} bytes)")
        return hashlib.sha256(f.read(n)).hexdigest()


def folder_fingerprint(folder: str | os.PathLike) -> str:
    """``config.json`` and the weight files of a model folder (see the module docs)."""
    folder = Path(folder)
    parts: list[Any] = []
    config = folder / "config.json"
    if config.is_file():
        parts.append(["config.json", hashlib.sha256(config.read_bytes()).hexdigest()])
    for path in sorted(folder.glob("*.safetensors")) + sorted(folder.glob("*.bin")):
        entry: list[Any] = [path.name, path.stat().st_size]
        if path.suffix == ".safetensors":
            entry.append(_safetensors_header(path))
        parts.append(entry)
    return digest(parts)


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
