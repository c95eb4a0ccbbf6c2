"""Shared KV-cache prefixes: run a common prompt prefix once, then each prompt's own suffix.

The LMM scorer (:mod:`baglm_nb.models.engine`: a segment's frames and the start of its
questions) and the local LLM back-end (:mod:`baglm_nb.models.llm_local`: the system turn, the
goal and the start of the prerequisite question) both score many prompts that begin with the
same tokens. The key/value cache of a causal LM at the positions of a prefix depends only on
that prefix, so it is computed once and every prompt runs only its remaining tokens from a copy
of it; the scores agree with full passes to float rounding. This module holds the mechanics
both use, on caches given as per-layer ``(key, value)`` lists of ``(B, heads, L, head_dim)``
tensors (:data:`Layers`):

- :func:`shared_length`: where the common prefix of several token lists ends;
- :func:`reuse`: the part of a previous prefix's cache that a new prefix can keep;
- :func:`right_pad`: suffixes of unequal length in one batch;
- :func:`repeat_rows`, :func:`stack_left_padded`: a cache row per batch row, from one shared
  prefix or from prefixes of unequal length (left-padded, hidden by :func:`suffix_mask`);
- :func:`run_suffixes`: one batched decoder pass of suffixes after their cached prefixes;
- :func:`take_row`: one row's cache cut at its own length; :func:`last_real`: the hidden state
  at each row's last real token;
- :func:`layers_of`, :func:`dynamic_cache`: to and from transformers' ``DynamicCache``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import torch

from baglm_nb.models.prompts import common_prefix_length

__all__ = [
    "Layers",
    "cache_kwargs",
    "dynamic_cache",
    "last_real",
    "layers_of",
    "repeat_rows",
    "returned_cache",
    "reuse",
    "right_pad",
    "run_suffixes",
    "shared_length",
    "stack_left_padded",
    "suffix_mask",
    "take_row",
]

Layers = list[tuple[torch.Tensor, torch.Tensor]]
"""A KV cache as per-layer ``(key, value)`` tensors of shape ``(B, heads, L, head_dim)``."""


def shared_length(seqs: Sequence[Sequence[int]]) -> int:
    """Length of the prefix all ``seqs`` share, leaving every one at least one token of its own.

    The split is always on a token boundary of the tokenised full prompts; the last token of
    each prompt must run in its suffix, since its position gives the prompt's scores.
    """
    return min(common_prefix_length(seqs), min(len(s) for s in seqs) - 1)


def layers_of(cache: Any) -> Layers:
    """The per-layer ``(key, value)`` tensors of a transformers cache."""
    return [(k, v) for k, v, *_ in cache]


def dynamic_cache(layers: Layers | None, config: Any) -> Any:
    """A transformers ``DynamicCache`` holding ``layers`` (empty for ``None``)."""
    from transformers import DynamicCache

    return DynamicCache(layers or None, config=config)


def cache_kwargs(module: Any, cache: Any) -> dict[str, Any]:
    """The KV-cache keyword of ``module``'s forward: ``cache`` where transformers names it so
    (``past_key_values`` is deprecated there), else ``past_key_values`` (earlier 5.x)."""
    params = inspect.signature(module.forward).parameters
    return {"cache" if "cache" in params else "past_key_values": cache}


def returned_cache(out: Any) -> Any:
    """The KV cache a forward pass returned (``cache``, or ``past_key_values`` before)."""
    return out["cache"] if "cache" in out else out.get("past_key_values")


def reuse(
    previous: tuple[Sequence[int], Layers] | None, tokens: Sequence[int]
) -> tuple[int, Layers | None]:
    """``(n, cache of tokens[:n])`` kept from ``previous`` = (its tokens, its cache).

    The cache of a causal LM at positions below the first differing token depends only on the
    tokens before it, so that part of the previous cache is valid for ``tokens`` as is;
    ``(0, None)`` when nothing is shared.
    """
    n = 0 if previous is None else common_prefix_length([list(previous[0]), list(tokens)])
    if n == 0:
        return 0, None
    return n, [(k[:, :, :n], v[:, :, :n]) for k, v in previous[1]]


def right_pad(seqs: Sequence[Sequence[int]], pad: int) -> tuple[torch.Tensor, list[int]]:
    """Token lists as one ``(B, width)`` long tensor padded on the right, and their lengths.

    A real token never attends to the pads after it (causal attention), so the pad value only
    matters where the tokens themselves are read (e.g. a repetition penalty).
    """
    lens = [len(s) for s in seqs]
    out = torch.full((len(seqs), max(lens)), int(pad), dtype=torch.long)
    for r, s in enumerate(seqs):
        out[r, : lens[r]] = torch.tensor(list(s), dtype=torch.long)
    return out, lens


def repeat_rows(layers: Layers, times: int) -> Layers:
    """Each cache row ``times`` times in a row (row r gives rows ``r * times ...``).

    A one-row cache is expanded without a copy; the model appends new keys by concatenation,
    which leaves the shared prefix untouched.
    """
    if layers[0][0].shape[0] == 1:
        return [(k.expand(times, -1, -1, -1), v.expand(times, -1, -1, -1)) for k, v in layers]
    return [(k.repeat_interleave(times, 0), v.repeat_interleave(times, 0)) for k, v in layers]


def stack_left_padded(prefixes: Sequence[tuple[Layers, int]]) -> tuple[Layers, int]:
    """One cache of B rows from B one-row prefix caches ``(layers, length)``, and its length.

    Shorter prefixes are left-padded with zeros up to the longest (hide the pads with
    :func:`suffix_mask`); B rows of one shared prefix are a view of it, with no padding.
    """
    lmax = max(n for _, n in prefixes)
    first = prefixes[0][0]
    b = len(prefixes)
    if all(layers is first for layers, _ in prefixes):
        return repeat_rows(first, b), lmax
    stacked = []
    for n, (k0, v0) in enumerate(first):
        k = k0.new_zeros((b, k0.shape[1], lmax, k0.shape[3]))
        v = v0.new_zeros((b, v0.shape[1], lmax, v0.shape[3]))
        for r, (layers, plen) in enumerate(prefixes):
            k[r, :, lmax - plen :] = layers[n][0][0]
            v[r, :, lmax - plen :] = layers[n][1][0]
        stacked.append((k, v))
    return stacked, lmax


def suffix_mask(plens: Sequence[int], lens: Sequence[int], lmax: int) -> torch.Tensor:
    """Attention mask ``(B, lmax + width)``: each row's right-aligned prefix and real suffix."""
    mask = torch.zeros((len(plens), lmax + max(lens)), dtype=torch.long)
    for r, (plen, n) in enumerate(zip(plens, lens, strict=True)):
        mask[r, lmax - plen : lmax + n] = 1
    return mask


def run_suffixes(
    decoder: Callable[..., Any],
    config: Any,
    items: Sequence[tuple[Layers, int, Sequence[int]]],
    *,
    pad: int,
    device: Any,
) -> tuple[torch.Tensor, Layers, list[int]]:
    """One batched ``decoder`` pass of suffixes, each after its own cached prefix.

    Parameters
    ----------
    decoder
        A transformers decoder (``model.get_decoder()``) taking ``input_ids``,
        ``attention_mask``, ``position_ids`` and ``past_key_values``.
    config
        The model config, for the cache.
    items
        Per row: (one-row prefix cache, prefix length, suffix tokens). Prefixes are
        left-padded (:func:`stack_left_padded`), suffixes right-padded with ``pad``; the mask
        hides the prefix pads and the position ids continue each row's own prefix.

    Returns
    -------
    (hidden, layers, lens)
        Last hidden states ``(B, width, H)``, the batch's cache after the pass (prefix width
        ``max`` of the prefix lengths) and the suffix lengths.
    """
    plens = [plen for _, plen, _ in items]
    input_ids, lens = right_pad([suf for _, _, suf in items], pad)
    stacked, lmax = stack_left_padded([(layers, plen) for layers, plen, _ in items])
    width = input_ids.shape[1]
    pos = torch.stack([torch.arange(plen, plen + width) for plen in plens])
    cache = dynamic_cache(stacked, config)
    out = decoder(
        input_ids=input_ids.to(device),
        attention_mask=suffix_mask(plens, lens, lmax).to(device),
        position_ids=pos.to(device),
        use_cache=True,
        **cache_kwargs(decoder, cache),
    )
    return out.last_hidden_state, layers_of(cache), lens


def take_row(layers: Layers, row: int, end: int) -> Layers:
    """Row ``row`` of a batch cache, cut at its own length ``end`` (a one-row cache)."""
    return [(k[row : row + 1, :, :end], v[row : row + 1, :, :end]) for k, v in layers]


def last_real(hidden: torch.Tensor, lens: Sequence[int]) -> torch.Tensor:
    """``hidden (B, width, H)`` at each row's last real token ``lens[r] - 1``: ``(B, H)``."""
    last = torch.tensor(list(lens), device=hidden.device) - 1
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]
