"""The LMM scoring engine: segments + a goal and its steps -> VSG and progress probabilities.

A scorer turns S video segments of F frames (uint8 ``(S, F, 3, H, W)``) plus a task goal and its
K steps into (reference-protocol §2, §3):

* ``vsg`` ``(S, K+1)``: the multiple-choice VSG probabilities, K steps in list order then the
  "None of the above." option last (§2);
* ``progress`` ``(S, K, 10)``: per step, the probabilities of the digits "0".."9" (§3);
* optionally ``next_step`` ``(S, K+1)``: the next-step question of the paper's appendix.

Every score is read at the **first generated position**: a softmax over the full vocabulary of the
logits after the prompt, gathered at the first token of each option label / digit (§2.3). The
values are raw (not renormalised), as in the published code; ``renormalise=True`` divides each
row by its sum over the options (digits; Yes/No for the binary prompt). Arrays are float64 numpy.
The question text is exactly the :mod:`baglm_nb.models.prompts` text (checked at run time); how
each family renders it is its adapter's job (:mod:`baglm_nb.models.families`).

**Shared prefix.** The K progress prompts, the VSG prompt and the optional next-step prompt of one
segment share everything up to the first differing token: the system turn, the frames and the
beginning of the question. With ``shared_prefix=True`` (default) the frames are encoded once, the
common token prefix (longest common prefix of the tokenised full prompts, so the split is always
on a token boundary) runs once with a KV cache, the text the questions of one kind share beyond it
(the progress prompt up to the step) once more, and each kind's suffixes in one batched pass from
copies of that cache (rows = segment x question; :mod:`baglm_nb.models.passes`,
:mod:`baglm_nb.models.kv_prefix`). Qwen2.5-VL's 3-D mrope positions of the suffix come from the
model's own ``get_rope_index`` over the full prompt. The published code instead runs K + 1 full
passes per segment (``shared_prefix=False`` reproduces that; the two agree to float rounding).

Exports :class:`ScoreResult` (built by :meth:`ScoreResult.from_answers` from what a
:class:`ScorerStamp` answered), the :class:`Scorer` protocol (its argument types :data:`Frames`,
:data:`VsgPrompt`), :class:`TransformersScorer` (its family's ``adapter`` and its
``answer_probs`` are what :mod:`baglm_nb.models.passes` uses; built by
:func:`baglm_nb.models.registry.load_scorer` from real weights, or
:func:`baglm_nb.models.testing.make_random_scorer`) and the labels :data:`RANDOM_INIT` /
:data:`PRETRAINED`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

import numpy as np
import torch

from baglm_nb.models.families import ADAPTERS, family_spec
from baglm_nb.models.families.base import Adapter
from baglm_nb.models.logprobs import check_logits
from baglm_nb.models.passes import naive_passes, shared_passes
from baglm_nb.models.prompts import DIGITS, check_single_tokens, check_task_text, option_labels
from baglm_nb.models.questions import YES_NO, Question, build_questions, combine

__all__ = [
    "PRETRAINED",
    "RANDOM_INIT",
    "Frames",
    "ScoreResult",
    "Scorer",
    "ScorerStamp",
    "TransformersScorer",
    "VsgPrompt",
]

RANDOM_INIT = "random-init"
"""Label of every output of a randomly initialised model."""
PRETRAINED = "pretrained"
"""Label of outputs of a model loaded from real weights."""

Frames: TypeAlias = np.ndarray | torch.Tensor
"""S segments of F frames, uint8 ``(S, F, 3, H, W)`` (a 1-channel frame is replicated)."""
VsgPrompt: TypeAlias = Literal["multiple_choice", "binary"]
"""How VSG is asked: one multiple-choice question, or K Yes/No questions."""


class ScorerStamp(Protocol):
    """What a :class:`ScoreResult` records of the scorer that produced it."""

    model_id: str
    label: str
    family: str


@dataclass
class ScoreResult:
    """Scores of S segments for one goal and its K steps.

    Attributes
    ----------
    vsg
        ``(S, K+1)`` float64, steps in list order then none last; ``None`` if not asked. With
        the binary prompt, column k is P("Yes" | step k) and the none column is
        ``1 - max_k`` of them (our choice; the paper does not define it).
    progress
        ``(S, K, 10)`` float64 digit probabilities; ``None`` if not asked.
    next_step
        ``(S, K+1)`` float64 next-step probabilities; ``None`` if not asked.
    labels
        The K+1 option labels used (§2.2).
    model_id, label
        Which model produced the scores, and ``"random-init"`` or ``"pretrained"`` (``"served"``
        for :class:`~baglm_nb.models.served.ServedScorer`'s).
    family, vsg_prompt, renormalised, prompt_versions
        How the scores were produced; the prompt versions belong in cache keys.
    timings
        Seconds this call spent by phase: ``"shared"`` (pixel preprocessing, the vision
        encoding and the prefix all questions share) and one entry per question kind
        (``"vsg"``, ``"bin"``, ``"prog"``, ``"next"``: that kind's own passes). Empty when the
        scorer does not measure them.
    """

    vsg: np.ndarray | None
    progress: np.ndarray | None
    next_step: np.ndarray | None
    labels: tuple[str, ...]
    model_id: str
    label: str
    family: str
    vsg_prompt: str
    renormalised: bool
    prompt_versions: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def is_random(self) -> bool:
        """True for scores of a randomly initialised model."""
        return self.label == RANDOM_INIT

    @classmethod
    def from_answers(
        cls,
        scorer: ScorerStamp,
        questions: Sequence[Question],
        probs: Sequence[np.ndarray],
        *,
        vsg_kind: str | None,
        labels: Sequence[str],
        versions: dict[str, str],
        vsg_prompt: str,
        renormalise: bool,
        timings: dict[str, float] | None = None,
    ) -> ScoreResult:
        """The scores of answered questions (:func:`~baglm_nb.models.questions.combine` of
        :func:`~baglm_nb.models.questions.build_questions`' questions), stamped with the
        ``model_id``, ``label`` and ``family`` of the ``scorer`` that answered them: the one
        builder of every scorer's results."""
        vsg, prog, nxt = combine(questions, probs, vsg_kind, renormalise=renormalise)
        return cls(
            vsg=vsg,
            progress=prog,
            next_step=nxt,
            labels=tuple(labels),
            model_id=scorer.model_id,
            label=scorer.label,
            family=scorer.family,
            vsg_prompt=vsg_prompt,
            renormalised=bool(renormalise),
            prompt_versions=versions,
            timings=timings or {},
        )


@runtime_checkable
class Scorer(Protocol):
    """Anything that scores segments like :meth:`TransformersScorer.score_segments`.

    Attributes
    ----------
    model_id
        Which model scores (written into every :class:`ScoreResult` and the cache key).
    label
        ``"random-init"``, ``"pretrained"`` or ``"served"``: what its scores are.
    """

    model_id: str
    label: str

    def score_segments(
        self,
        frames_batch: Frames,
        goal: str,
        steps: Sequence[str],
        *,
        prompt: str | None = "vsg",
        progress: bool = True,
        vsg_prompt: VsgPrompt = "multiple_choice",
        next_step: bool = False,
        renormalise: bool = False,
    ) -> ScoreResult:
        """Scores of S segments of one video for a goal and its K steps, as
        :meth:`TransformersScorer.score_segments`; a segment it cannot score raises
        :class:`~baglm_nb.models.questions.ScoringError`."""
        ...


_DEFAULT = object()


# --------------------------------------------------------------------------------------------
# the scorer


def _as_frames(frames_batch: Frames) -> torch.Tensor:
    x = (
        torch.from_numpy(np.asarray(frames_batch))
        if not isinstance(frames_batch, torch.Tensor)
        else frames_batch
    )
    if x.dtype != torch.uint8:
        raise ValueError(f"frames_batch must be uint8, got {x.dtype}")
    if x.ndim != 5 or x.shape[2] not in (1, 3):
        raise ValueError(f"frames_batch must be (S, F, 3, H, W), got shape {tuple(x.shape)}")
    if x.shape[2] == 1:
        x = x.expand(-1, -1, 3, -1, -1)
    return x


class TransformersScorer:
    """A transformers LMM as a :class:`Scorer`.

    Parameters
    ----------
    model
        The family's transformers model (its spec's ``model_class``; or the remote-code
        InternVL chat model with ``family="internvl-remote"``), in eval mode on its device.
    tokenizer
        The model's tokenizer.
    family
        A family name of :data:`~baglm_nb.models.families.ADAPTERS` (a family of ``FAMILIES``,
        or ``"internvl-remote"``: the original InternVL repository format).
    model_id
        Name written into every :class:`ScoreResult`.
    label
        ``"pretrained"`` or ``"random-init"``; default from the model (a model built by
        :func:`~baglm_nb.models.testing.make_random_scorer` is always ``"random-init"``, and
        cannot be relabelled).
    processor
        Optional processor whose ``apply_chat_template`` renders the prompts.
    chat_template
        Template used when neither the processor nor the tokenizer has one.
    system_message
        System turn; default per family (InternVL's system message, none for Qwen whose template
        adds its default, "You are a helpful assistant." for LLaVA-OneVision). ``None`` for none.
    prompt_style
        ``"chat"`` (model chat template) or ``"published"`` (the published strings, §8).
    shared_prefix
        Score all questions of a segment from one shared-prefix KV cache (see module docs).
    segment_batch_size
        Segments per batch (published: 16).
    suffix_batch_size
        Rows (segment x question) per suffix pass in the shared-prefix path (default 256: the
        16 segments x K progress questions of a batch in one pass for K <= 16).
    repetition_penalty
        If set, applied to the first-position logits over the prompt's tokens before the softmax,
        as transformers' ``RepetitionPenaltyLogitsProcessor`` (Qwen2.5-VL's shipped generation
        config has 1.05, §8.2). Default ``None``: raw logits.
    options
        The family's options (an instance of its spec's
        :attr:`~baglm_nb.models.families.base.FamilySpec.options`, e.g.
        :class:`~baglm_nb.models.families.qwen2_5_vl.QwenOptions`); default the published ones.
    fingerprint
        What the weights are (:mod:`baglm_nb.models.fingerprints`), for the score cache's key;
        ``""`` when unknown.
    weights_record
        What the fingerprint digests, kept beside the scores (``weights.json``): a local
        folder's :func:`~baglm_nb.models.fingerprints.weights_record` (its files' SHA-256 and
        the Hugging Face revision); ``None`` when there is none.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        family: str,
        model_id: str,
        label: str | None = None,
        processor: Any | None = None,
        chat_template: str | None = None,
        system_message: Any = _DEFAULT,
        prompt_style: Literal["chat", "published"] = "chat",
        shared_prefix: bool = True,
        segment_batch_size: int = 16,
        suffix_batch_size: int = 256,
        repetition_penalty: float | None = None,
        options: Any = None,
        fingerprint: str = "",
        weights_record: dict[str, Any] | None = None,
    ) -> None:
        spec = family_spec(family)
        options = spec.options() if options is None else options
        if not isinstance(options, spec.options):
            raise ValueError(
                f"family {family!r} takes {spec.options.__name__} options, "
                f"got {type(options).__name__}"
            )
        random_init = bool(getattr(model, "_baglm_random_init", False)) or bool(
            getattr(getattr(model, "config", None), "baglm_random_init", False)
        )
        if label is None:
            label = RANDOM_INIT if random_init else PRETRAINED
        if label not in (RANDOM_INIT, PRETRAINED):
            raise ValueError(f"label must be {RANDOM_INIT!r} or {PRETRAINED!r}, got {label!r}")
        if random_init and label != RANDOM_INIT:
            raise ValueError("a randomly initialised model must be labelled 'random-init'")
        if prompt_style not in ("chat", "published"):
            raise ValueError(f"prompt_style must be 'chat' or 'published', got {prompt_style!r}")
        adapter_class = ADAPTERS[family]
        if adapter_class.published_only:
            prompt_style = "published"
        self.model = model
        self.tokenizer = tokenizer
        self.processor = processor
        self.chat_template = chat_template
        self.family = family
        self.model_id = model_id
        self.fingerprint = str(fingerprint)
        self.weights_record = weights_record
        self.label = label
        self.prompt_style = prompt_style
        self.shared_prefix = bool(shared_prefix)
        self.segment_batch_size = int(segment_batch_size)
        self.suffix_batch_size = int(suffix_batch_size)
        self.repetition_penalty = repetition_penalty
        system = spec.system_message if system_message is _DEFAULT else system_message
        self.adapter: Adapter = adapter_class(model, tokenizer, options, system)
        self.adapter.check_tokens()
        self.device, self.dtype = self.adapter.device, self.adapter.dtype
        self._labels: dict[int, list[str]] = {}
        self._ids_cache: dict[tuple, list[int]] = {}
        self._yes_no: list[int] | None = None
        self._digit_ids = list(check_single_tokens(tokenizer, [], DIGITS).values())

    def __repr__(self) -> str:
        return (
            f"TransformersScorer({self.model_id!r}, family={self.family!r}, label={self.label!r})"
        )

    @property
    def options(self) -> Any:
        """The family's options (see the ``options`` parameter)."""
        return self.adapter.options

    @property
    def system_message(self) -> str | None:
        """The system turn of the prompts (``None``: none, or the chat template's own)."""
        return self.adapter.system_message

    # -- answers ------------------------------------------------------------------------
    def labels(self, n: int) -> list[str]:
        """The ``n`` option labels for this tokenizer (§2.2), checked once per ``n``."""
        if n not in self._labels:
            labels = option_labels(n, self.tokenizer)
            check_single_tokens(self.tokenizer, labels, None)
            self._labels[n] = labels
        return self._labels[n]

    def _label_ids(self, labels: Sequence[str]) -> list[int]:
        return [int(self.tokenizer.encode(s, add_special_tokens=False)[0]) for s in labels]

    def _yes_no_ids(self) -> list[int]:
        if self._yes_no is None:
            self._yes_no = list(check_single_tokens(self.tokenizer, YES_NO, None).values())
        return self._yes_no

    # -- prompts ------------------------------------------------------------------------
    def render_chat(self, messages: list[dict]) -> str:
        """The chat template applied to ``messages`` (text, generation prompt added)."""
        kwargs = {"tokenize": False, "add_generation_prompt": True}
        if self.processor is not None and getattr(self.processor, "chat_template", None):
            return self.processor.apply_chat_template(messages, **kwargs)
        template = self.chat_template or getattr(self.tokenizer, "chat_template", None)
        if not template:
            raise ValueError(
                f"{self.model_id}: no chat template on the processor or tokenizer; pass "
                "chat_template=... or prompt_style='published'"
            )
        return self.tokenizer.apply_chat_template(messages, chat_template=template, **kwargs)

    def prompt_text(self, question: str, info: dict) -> str:
        """The full model input text of ``question`` for a segment described by ``info``."""
        fam = self.adapter
        if self.prompt_style == "published" and not fam.published_is_chat:
            text = fam.published_text(question, info)
        else:
            text = self.render_chat(fam.chat_messages(question))
            count = text.count(fam.placeholder)
            if count != 1:
                raise ValueError(
                    f"the chat template rendered {count} video placeholders {fam.placeholder!r}, "
                    "expected 1"
                )
            text = text.replace(fam.placeholder, fam.expansion(info), 1)
        if question not in text:
            raise ValueError(
                "the rendered prompt does not contain the question text verbatim (did the chat "
                "template trim it?); use prompt_style='published'"
            )
        return text

    def prompt_ids(self, question: str, info: dict) -> list[int]:
        """Token ids of :meth:`prompt_text` (BOS added only for a published string whose adapter
        says so: InternVL's)."""
        key = (question, tuple(sorted(info.items())))
        ids = self._ids_cache.get(key)
        if ids is None:
            text = self.prompt_text(question, info)
            add_special = self.prompt_style == "published" and self.adapter.published_adds_bos
            ids = list(self.tokenizer(text, add_special_tokens=add_special)["input_ids"])
            if len(self._ids_cache) > 4096:
                self._ids_cache.clear()
            self._ids_cache[key] = ids
        return ids

    # -- scoring ------------------------------------------------------------------------
    @property
    def context_tokens(self) -> int | None:
        """The language model's context length (``max_position_embeddings``), if known."""
        cfg = getattr(self.model, "config", None)
        text = getattr(cfg, "text_config", None) or getattr(cfg, "llm_config", None) or cfg
        value = getattr(text, "max_position_embeddings", None)
        return int(value) if isinstance(value, int) else None

    def score_segments(
        self,
        frames_batch: Frames,
        goal: str,
        steps: Sequence[str],
        *,
        prompt: str | None = "vsg",
        progress: bool = True,
        vsg_prompt: VsgPrompt = "multiple_choice",
        next_step: bool = False,
        renormalise: bool = False,
    ) -> ScoreResult:
        """Score S segments of one video for a goal and its K steps.

        Parameters
        ----------
        frames_batch
            uint8 ``(S, F, 3, H, W)`` (torch or numpy): S segments of F frames (F = 4 in the
            published setting).
        goal, steps
            The task goal and its K candidate steps, in column order.
        prompt
            Registry key (:data:`~baglm_nb.models.prompts.PROMPTS`) of the VSG question;
            ``None`` skips VSG. The default ``"vsg"`` means ``"vsg_binary"`` when
            ``vsg_prompt="binary"``.
        progress
            Also score the K progress questions.
        vsg_prompt
            ``"multiple_choice"`` (one question over K+1 options) or ``"binary"`` (K Yes/No
            questions; VSG column k = P("Yes"), none = 1 - max_k).
        next_step
            Also score the next-step question.
        renormalise
            Divide each row by its sum over the options (digits; Yes+No for binary) instead of
            returning raw full-vocabulary probabilities.

        Returns
        -------
        ScoreResult
        """
        frames = _as_frames(frames_batch)
        steps = [str(s) for s in steps]
        check_task_text(goal, steps, context_tokens=self.context_tokens)
        labels = self.labels(len(steps) + 1) if steps else []
        questions, versions, vsg_kind = build_questions(
            goal,
            steps,
            labels,
            prompt=prompt,
            vsg_prompt=vsg_prompt,
            progress=progress,
            next_step=next_step,
        )
        targets = [self._answer_ids(q.kind, labels) for q in questions]
        probs, timings = self._score(
            frames, [q.kind for q in questions], [q.text for q in questions], targets
        )
        return ScoreResult.from_answers(
            self,
            questions,
            probs,
            vsg_kind=vsg_kind,
            labels=labels,
            versions=versions,
            vsg_prompt=vsg_prompt,
            renormalise=renormalise,
            timings=timings,
        )

    def _answer_ids(self, kind: str, labels: list[str]) -> list[int]:
        """Token ids of the answers of a question of ``kind`` (labels, Yes/No or digits)."""
        if kind in ("vsg", "next"):
            return self._label_ids(labels)
        return self._yes_no_ids() if kind == "bin" else self._digit_ids

    @torch.inference_mode()
    def _score(
        self, frames: torch.Tensor, kinds: Sequence[str], texts: Sequence[str], targets: Sequence
    ) -> tuple[list[np.ndarray], dict[str, float]]:
        """Probabilities ``(S, len(targets[q]))`` per question q, and seconds per phase."""
        n_seg = frames.shape[0]
        out = [np.empty((n_seg, len(t)), dtype=np.float64) for t in targets]
        timings: dict[str, float] = {}
        passes = shared_passes if self.shared_prefix else naive_passes
        for s0 in range(0, n_seg, self.segment_batch_size):
            chunk = frames[s0 : s0 + self.segment_batch_size]
            t0 = time.perf_counter()
            pix, info = self.adapter.pixel_inputs(chunk)
            ids = [self.prompt_ids(t, info) for t in texts]
            timings["shared"] = timings.get("shared", 0.0) + time.perf_counter() - t0
            res = passes(self, pix, ids, kinds, list(targets), chunk.shape[0], timings)
            for q, r in enumerate(res):
                out[q][s0 : s0 + chunk.shape[0]] = r
        return out, timings

    def answer_probs(
        self, logits: torch.Tensor, full_ids: torch.Tensor, target: torch.Tensor
    ) -> np.ndarray:
        """Full-vocabulary softmax of first-position ``logits (R, V)`` gathered at the answer
        tokens ``target (R, T)``, after the repetition penalty over the prompt ``full_ids``;
        float64 ``(R, T)``."""
        logits = logits.float()
        if self.repetition_penalty is not None and self.repetition_penalty != 1.0:
            full_ids = full_ids.to(logits.device)
            score = logits.gather(1, full_ids)
            pen = float(self.repetition_penalty)
            score = torch.where(score < 0, score * pen, score / pen)
            logits = logits.scatter(1, full_ids, score)
        check_logits(logits, what=f"{self.model_id}: first-position logits")
        p = torch.softmax(logits, dim=-1).gather(1, target.to(logits.device))
        return p.double().cpu().numpy()
