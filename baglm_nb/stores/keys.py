"""Cache keys: what identifies one set of stored scores or dependency matrices, and its folder.

A key is a frozen dataclass; its :meth:`relpath` is the cache folder under a root (each name
sanitised into one path component) and its :meth:`to_dict` is what ``config.json`` stores.

Exports :data:`SOURCES`, :data:`PUBLISHED_LMM` / :data:`PUBLISHED_LLM` (the default names of an
import), :class:`ScoreKey` (dataset, LMM, prompt version, sampling, source) and
:class:`DependencyKey` (dataset, LLM, prompt version).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar, Self

import numpy as np

from baglm_nb.inputs.variants import SAMPLING_FPS, SEGMENT_DURATION

__all__ = ["PUBLISHED_LLM", "PUBLISHED_LMM", "SOURCES", "DependencyKey", "ScoreKey"]

SOURCES: tuple[str, ...] = ("lmm", "simulated", "imported")
"""Allowed values of :attr:`ScoreKey.source`."""

#: The model names of the authors' published files (the paper's default LMM and LLM): the
#: default keys of an import.
PUBLISHED_LMM = "internvl2.5-8b"
PUBLISHED_LLM = "llama-3.3-70b-instruct"

_UNSAFE = re.compile(r"[^A-Za-z0-9._+=@-]")
_HEX = re.compile(r"[0-9a-f]{0,64}")
_NAMED = ("dataset", "model", "prompt_version")


def _safe_component(value: object, name: str) -> str:
    """One path component: ``/`` and ``\\`` become ``__``, other unsafe characters ``_``."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    safe = _UNSAFE.sub("_", value.replace("/", "__").replace("\\", "__"))
    if not safe.strip("."):
        raise ValueError(f"{name} {value!r} is not a usable folder name")
    return safe


@dataclass(frozen=True)
class _NamedKey:
    """The fields and folder logic both keys share: dataset, model and prompt version."""

    dataset: str
    model: str
    prompt_version: str

    #: The first folder of :meth:`relpath` (``scores`` or ``deps``).
    _kind_folder: ClassVar[str]

    def __post_init__(self) -> None:
        for name in _NAMED:
            _safe_component(getattr(self, name), name)

    def _folders(self) -> list[str]:
        """``[<kind folder>, <dataset>, <model>, <prompt_version>]``, sanitised."""
        return [self._kind_folder, *(_safe_component(getattr(self, n), n) for n in _NAMED)]

    def relpath(self) -> str:
        """The cache folder under a root (``/``-separated)."""
        return "/".join(self._folders())

    def to_dict(self) -> dict[str, Any]:
        """The key as a JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Inverse of :meth:`to_dict`; unknown fields raise ``ValueError``."""
        if not isinstance(data, Mapping):
            raise ValueError(
                f"{cls.__name__}.from_dict expects a mapping, got {type(data).__name__}"
            )
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"{cls.__name__}.from_dict: unknown field(s) {unknown}")
        return cls(**data)


def _check_number(value: object, name: str, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be {what}, got {value!r}")


@dataclass(frozen=True)
class ScoreKey(_NamedKey):
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
    weights
        Fingerprint of the model's weights (:mod:`baglm_nb.models.fingerprints`, hex digits),
        or ``""``: a cache written before fingerprints, an import, simulated scores. A
        fingerprinted key's model folder is ``<model>@<weights>``, so scores of other weights
        never share a folder with it, nor with an older cache without a fingerprint.
    """

    segment_duration: int = SEGMENT_DURATION
    sampling_fps: float = SAMPLING_FPS
    source: str = "lmm"
    weights: str = ""

    _kind_folder: ClassVar[str] = "scores"

    def __post_init__(self) -> None:
        super().__post_init__()
        d = self.segment_duration
        _check_number(d, "segment_duration", "a whole number")
        if int(d) != d or int(d) < 1:
            raise ValueError(f"segment_duration must be a whole number >= 1, got {d!r}")
        fps = self.sampling_fps
        _check_number(fps, "sampling_fps", "a number")
        if not math.isfinite(fps) or fps <= 0:
            raise ValueError(f"sampling_fps must be finite and > 0, got {fps!r}")
        if self.source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}, got {self.source!r}")
        if not isinstance(self.weights, str) or not _HEX.fullmatch(self.weights):
            raise ValueError(f"weights must be a hex fingerprint or '', got {self.weights!r}")
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
        """``scores/<dataset>/<model>[@<weights>]/<prompt_version>/seg<d>s_fps<f>``
        (``/``-separated)."""
        sampling = f"seg{self.segment_duration}s_fps{self.sampling_fps:g}"
        folders = self._folders()
        if self.weights:
            folders[2] += f"@{self.weights}"
        return "/".join([*folders, sampling])


@dataclass(frozen=True)
class DependencyKey(_NamedKey):
    """Identity of one set of dependency matrices: ``deps/<dataset>/<model>/<prompt_version>``.

    ``model`` is the LLM name, ``"oracle"``, ``"none"`` or an imported model's name.
    """

    _kind_folder: ClassVar[str] = "deps"
