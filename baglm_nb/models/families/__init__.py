"""LMM families: one :class:`~.base.FamilySpec` per family, and every registry table derived.

A family is one module: :mod:`.internvl` (InternVL 2.5 / 3), :mod:`.qwen2_5_vl` (Qwen2.5-VL),
:mod:`.llava_onevision` (LLaVA-OneVision), each with its ``SPEC`` (registry rows, options, frame
preprocessing, adapter, special tokens, served layout and pixel bounds, tiny test config;
:mod:`.base`). Adding a family is one such module and its line in :data:`SPECS` (+ its tests);
the tables below, the tiny models, the served defaults and the command line's help strings
follow. Importing the specs loads no heavy library (torch only inside their functions).

**Prompt building.** ``prompt_style="chat"`` renders ``[system?, user: [video, text]]`` with the
model's chat template and then expands the template's video placeholder the way each model
expects a 4-frame segment (:meth:`~.base.Adapter.expansion`); ``prompt_style="published"``
writes the published strings directly (:meth:`~.base.Adapter.published_text`).

Exports :data:`SPECS` (family name -> spec), the derived :data:`FAMILIES`, :data:`MODELS`,
:data:`ADAPTERS` and :data:`DEFAULT_SYSTEM`, :func:`family_spec`,
:func:`family_of_model_type`, :func:`family_of_name`, :func:`in_words` (the families or models
as a help string writes them) and :data:`INTERNVL_SYSTEM_MESSAGE`.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

from baglm_nb.models.families import internvl, llava_onevision, qwen2_5_vl
from baglm_nb.models.families.base import Adapter, FamilySpec, ModelSpec
from baglm_nb.models.families.internvl import INTERNVL_SYSTEM_MESSAGE

__all__ = [
    "ADAPTERS",
    "DEFAULT_SYSTEM",
    "FAMILIES",
    "INTERNVL_SYSTEM_MESSAGE",
    "MODELS",
    "SPECS",
    "family_of_model_type",
    "family_of_name",
    "family_spec",
    "in_words",
]

SPECS: MappingProxyType[str, FamilySpec] = MappingProxyType(
    {s.name: s for s in (internvl.SPEC, qwen2_5_vl.SPEC, llava_onevision.SPEC)}
)
"""Family name -> :class:`~.base.FamilySpec`, the one table every other is derived from."""

FAMILIES: tuple[str, ...] = tuple(SPECS)
"""Model families with a native transformers back-end."""

MODELS: MappingProxyType[str, ModelSpec] = MappingProxyType(
    {m.short_id: m for s in SPECS.values() for m in s.models}
)
"""Short id -> :class:`~.base.ModelSpec`, every family's registry rows."""

_REMOTE: dict[str, FamilySpec] = {s.remote_name: s for s in SPECS.values() if s.remote_name}

ADAPTERS: MappingProxyType[str, type[Adapter]] = MappingProxyType(
    {
        **{name: s.adapter for name, s in SPECS.items()},
        **{name: s.remote_adapter for name, s in _REMOTE.items() if s.remote_adapter},
    }
)
"""Family name (``"internvl-remote"``: the original InternVL repository format) -> adapter."""

DEFAULT_SYSTEM: MappingProxyType[str, str | None] = MappingProxyType(
    {name: s.system_message for name, s in {**SPECS, **_REMOTE}.items()}
)
"""Family name -> default system message of its prompts."""


def family_spec(family: str) -> FamilySpec:
    """The spec of a family name of :data:`ADAPTERS` (a ``"-remote"`` name: its family's)."""
    spec = SPECS.get(family) or _REMOTE.get(family)
    if spec is None:
        raise ValueError(f"unknown family {family!r}; use one of {sorted(ADAPTERS)}")
    return spec


def family_of_model_type(model_type: str) -> tuple[str, bool] | None:
    """``(family, remote)`` of a config's ``model_type`` (``remote``: the original repository
    format, which needs ``trust_remote_code``); ``None`` when no family has it."""
    for spec in SPECS.values():
        if model_type in spec.model_types:
            return spec.name, False
        if model_type in spec.remote_model_types:
            return spec.name, True
    return None


def family_of_name(model: str) -> str | None:
    """The family whose :attr:`~.base.FamilySpec.served_names` occur in a model name
    (case-insensitive), in :data:`SPECS` order; ``None`` when none does."""
    name = model.lower()
    for spec in SPECS.values():
        if any(hint in name for hint in spec.served_names):
            return spec.name
    return None


def in_words(names: Sequence[str]) -> str:
    """``"a, b or c"``: names as a message or a help string lists them (``FAMILIES``, the ids
    of ``MODELS``), so that no text lists them by hand."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
