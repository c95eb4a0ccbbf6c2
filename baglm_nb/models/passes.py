"""The forward passes of one batch of segments: the published recipe, and the shared path.

A scorer (a :class:`PassScorer`, :class:`~baglm_nb.models.engine.TransformersScorer`) scores Q
questions (the VSG question, the K progress questions, ...) for a batch of S segments with one
of two recipes:

* :func:`naive_passes`: the published recipe, one full forward pass per question (the frames are
  encoded again in each, reference-protocol §2.4, §3.2);
* :func:`shared_passes`: the frames are encoded **once** and the prefix that every question shares
  (system turn, frames, start of the question) runs **once**, with a KV cache. The questions of
  one kind then go on from there as a prefix tree: the text that they share beyond that point
  (e.g. the progress prompt up to the step) runs once more per segment, and their own suffixes run
  in **one** batched pass per kind (rows = segment x question, at most ``suffix_batch_size`` rows
  a pass; the VSG question, whose suffix is longer, has its own pass, so the progress rows are not
  padded to its length). The two recipes agree to float rounding.

Both record the seconds they spend by phase into a ``timings`` dict: ``"shared"`` (pixel
preprocessing is added by the caller; the vision encoding and the common prefix) and one entry per
question kind (``"vsg"``, ``"prog"``, ``"bin"``, ``"next"``). On CUDA the clock is read after a
synchronisation, so each phase is charged its own GPU time.

What the passes use of the scorer is :class:`PassScorer`: its family adapter
(:class:`~baglm_nb.models.families.base.Adapter`: embeddings, decoder, head, positions, cache
config, device), how it reads answer probabilities from logits, and its suffix batch size.

Exports :class:`PassScorer`, :func:`naive_passes` and :func:`shared_passes`.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import torch

from baglm_nb.models.families.base import Adapter
from baglm_nb.models.kv_prefix import (
    Layers,
    dynamic_cache,
    last_real,
    layers_of,
    repeat_rows,
    right_pad,
    shared_length,
)

__all__ = ["PassScorer", "naive_passes", "shared_passes"]


class PassScorer(Protocol):
    """What the passes use of a scorer."""

    @property
    def adapter(self) -> Adapter:
        """The family adapter that runs the model's parts."""
        ...

    @property
    def suffix_batch_size(self) -> int:
        """Rows (segment x question) per suffix pass at most."""
        ...

    def answer_probs(
        self, logits: torch.Tensor, full_ids: torch.Tensor, target: torch.Tensor
    ) -> np.ndarray:
        """Probabilities ``(R, T)`` of the answer tokens ``target`` from first-position
        ``logits (R, V)`` of the prompts ``full_ids``."""
        ...


def _clock(device: torch.device) -> float:
    """``time.perf_counter()`` after the device's queued work has finished."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


def _charge(timings: dict[str, float], phase: str, start: float, device: torch.device) -> float:
    """Add the seconds since ``start`` to ``timings[phase]``; returns the new start."""
    now = _clock(device)
    timings[phase] = timings.get(phase, 0.0) + now - start
    return now


def _by_kind(kinds: Sequence[str]) -> dict[str, list[int]]:
    """Question indices per kind, kinds in order of first appearance."""
    out: dict[str, list[int]] = {}
    for q, kind in enumerate(kinds):
        out.setdefault(kind, []).append(q)
    return out


def naive_passes(
    s: PassScorer,
    pix: dict,
    ids: list[list[int]],
    kinds: Sequence[str],
    targets: list[list[int]],
    n_seg: int,
    timings: dict[str, float],
) -> list[np.ndarray]:
    """One full forward pass per question (the published way): ``(n_seg, len(targets[q]))``."""
    res = []
    fam = s.adapter
    start = _clock(fam.device)
    for q, seq in enumerate(ids):
        input_ids = torch.tensor(seq, device=fam.device)[None].expand(n_seg, -1)
        logits = fam.full_logits(input_ids, pix)
        tgt = torch.tensor(targets[q])[None].expand(n_seg, -1)
        res.append(s.answer_probs(logits, input_ids, tgt))
        start = _charge(timings, kinds[q], start, fam.device)
    return res


def shared_passes(
    s: PassScorer,
    pix: dict,
    ids: list[list[int]],
    kinds: Sequence[str],
    targets: list[list[int]],
    n_seg: int,
    timings: dict[str, float],
) -> list[np.ndarray]:
    """One vision encoding and one common prefix, then a prefix tree per question kind.

    Falls back to :func:`naive_passes` (with a warning) when the questions share no prefix that
    holds every vision token.
    """
    fam = s.adapter
    dev = fam.device
    plen = shared_length(ids)
    if plen <= 0 or any(fam.vision_id in q[plen:] for q in ids):
        warnings.warn(
            "the questions share no prefix holding all vision tokens; scoring each in full",
            stacklevel=4,
        )
        return naive_passes(s, pix, ids, kinds, targets, n_seg, timings)
    start = _clock(dev)
    full_pos = [fam.positions(torch.tensor(q, device=dev), pix) for q in ids]
    prefix = torch.tensor(ids[0][:plen], device=dev)[None].expand(n_seg, -1)
    pos0 = None if full_pos[0] is None else full_pos[0][:, None, :plen].expand(-1, n_seg, -1)
    _, cache = fam.lm(fam.embed(prefix, pix), pos0, dynamic_cache(None, fam.cache_config()))
    root = layers_of(cache)
    start = _charge(timings, "shared", start, dev)
    out: list[np.ndarray | None] = [None] * len(ids)
    for kind, qs in _by_kind(kinds).items():
        layers, glen = root, plen
        if len(qs) > 1:  # the questions of one kind share more text: run it once per segment
            glen = shared_length([ids[q] for q in qs])
            if glen > plen:
                layers = _extend(s, root, plen, ids[qs[0]][plen:glen], full_pos[qs[0]], n_seg)
            else:
                glen = plen
        per_pass = max(1, s.suffix_batch_size // n_seg)
        for c0 in range(0, len(qs), per_pass):
            chunk = qs[c0 : c0 + per_pass]
            probs = _suffixes(
                s,
                layers,
                glen,
                [ids[q] for q in chunk],
                [full_pos[q] for q in chunk],
                [targets[q] for q in chunk],
                n_seg,
            )
            for q, p in zip(chunk, probs, strict=True):
                out[q] = p
        start = _charge(timings, kind, start, dev)
    return out  # type: ignore[return-value]


def _extend(
    s: PassScorer,
    layers: Layers,
    plen: int,
    tokens: list[int],
    full_pos: torch.Tensor | None,
    n_seg: int,
) -> Layers:
    """The ``(n_seg, ...)`` cache ``layers`` of ``plen`` tokens, extended by ``tokens`` (the
    same text after every segment's prefix); ``layers`` is left unchanged."""
    fam = s.adapter
    dev = fam.device
    ids = torch.tensor(tokens, device=dev)[None].expand(n_seg, -1)
    pos = None
    if full_pos is not None:
        pos = full_pos[:, None, plen : plen + len(tokens)].expand(-1, n_seg, -1)
    cache = dynamic_cache(layers, fam.cache_config())
    fam.lm(fam.embed(ids, None), pos, cache)
    return layers_of(cache)


def _suffixes(
    s: PassScorer,
    layers: Layers,
    plen: int,
    ids: list[list[int]],
    full_pos: list[torch.Tensor | None],
    targets: list[list[int]],
    n_seg: int,
) -> list[np.ndarray]:
    """Probabilities of c questions after the ``(n_seg, ...)`` prefix cache ``layers``.

    One pass of n_seg x c rows (row = segment * c + question), suffixes right-padded; the pads
    are a prompt token (harmless for the repetition penalty, never attended to).
    """
    fam, c = s.adapter, len(ids)
    dev = fam.device
    pad = ids[0][0]
    suf, lens = right_pad([q[plen:] for q in ids], pad)
    full, _ = right_pad(ids, pad)
    pos = None
    if full_pos[0] is not None:
        pos = _suffix_positions(full_pos, plen, lens, dev).repeat(1, n_seg, 1)
    cache = dynamic_cache(repeat_rows(layers, c), fam.cache_config())
    hidden, _ = fam.lm(fam.embed(suf.to(dev).repeat(n_seg, 1), None), pos, cache)
    logits = fam.head(last_real(hidden, lens * n_seg))
    out = []
    for j in range(c):
        rows = torch.arange(n_seg, device=dev) * c + j
        tgt = torch.tensor(targets[j])[None].expand(n_seg, -1)
        out.append(s.answer_probs(logits[rows], full[j : j + 1].expand(n_seg, -1), tgt))
    return out


def _suffix_positions(
    full_pos: list[Any], plen: int, lens: list[int], device: torch.device
) -> torch.Tensor:
    """3-D (mrope) positions ``(3, c, width)`` of the suffixes, cut from each full prompt's
    own positions; the pads continue them (never attended to)."""
    width = max(lens)
    pos = torch.zeros((3, len(lens), width), dtype=full_pos[0].dtype, device=device)
    for j, n in enumerate(lens):
        p = full_pos[j][:, plen:]
        pos[:, j, :n] = p
        if n < width:
            extra = torch.arange(1, width - n + 1, device=device)
            pos[:, j, n:] = p[:, -1:] + extra
    return pos
