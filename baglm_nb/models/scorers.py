"""LMM scorers behind one ``score_segments`` interface (reference-protocol §2, §3, §8).

A scorer turns S video segments of F frames (uint8 ``(S, F, 3, H, W)``) plus a task goal and its
K steps into:

* ``vsg`` ``(S, K+1)``: the multiple-choice VSG probabilities, K steps in list order then the
  "None of the above." option last (§2);
* ``progress`` ``(S, K, 10)``: per step, the probabilities of the digits "0".."9" (§3);
* optionally ``next_step`` ``(S, K+1)``: the next-step question of the paper's appendix.

Every score is read at the **first generated position**: a softmax over the full vocabulary of the
logits after the prompt, gathered at the first token of each option label / digit (§2.3). The
values are raw (not renormalised), as in the published code; ``renormalise=True`` divides each
row by its sum over the options (digits; Yes/No for the binary prompt). Arrays are float64 numpy.

Back-ends (:class:`TransformersScorer`) use transformers' native classes:
``InternVLForConditionalGeneration`` (the ``-hf`` InternVL checkpoints),
``Qwen2_5_VLForConditionalGeneration`` and ``LlavaOnevisionForConditionalGeneration``.
:func:`load_scorer` loads one from a local folder or the Hugging Face cache (never from the
network by default) by short id (:data:`MODELS`) or HF id. :func:`make_random_scorer` builds a
tiny randomly initialised model of any family for tests and benchmarks; its outputs always carry
``label="random-init"`` and must never be presented as a real model's scores.

**Shared prefix.** The K progress prompts, the VSG prompt and the optional next-step prompt of one
segment share everything up to the first differing token: the system turn, the frames and the
beginning of the question. With ``shared_prefix=True`` (default) the frames are encoded once, the
common token prefix (longest common prefix of the tokenised full prompts, so the split is always
on a token boundary) runs once with a KV cache, and the question-specific suffixes are scored in
batches from copies of that cache (rows = segment x question). Qwen2.5-VL's 3-D mrope positions
of the suffix come from the model's own ``get_rope_index`` over the full prompt. The published
code instead runs K + 1 full passes per segment (``shared_prefix=False`` reproduces that; the two
agree to float rounding).

**Prompt building.** ``prompt_style="chat"`` (default) renders ``[system?, user: [video, text]]``
with the model's chat template (the processor's, else the tokenizer's) and then expands the
template's video placeholder the way each model expects a 4-frame segment: InternVL
``"Frame1: <img><IMG_CONTEXT>*n</img>\\nFrame2: ..."`` (§8.1), Qwen2.5-VL one video of
``<|video_pad|>`` tokens, LLaVA-OneVision one video (F x pooled patches + 1 newline token).
``prompt_style="published"`` writes the published strings directly (§8.1's InternVL FastChat
string with the InternVL system message; LLaVA's ``qwen_1_5`` conversation ``"<image>\\n" +
question``; Qwen already used its chat template). Either way the question text is exactly the
:mod:`baglm_nb.models.prompts` text (checked at run time).
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import torch

from baglm_nb.inputs.preprocess import (
    preprocess_internvl,
    preprocess_llava_onevision,
    preprocess_qwen25vl,
)
from baglm_nb.models.prompts import (
    DIGITS,
    check_single_tokens,
    common_prefix_length,
    format_choices,
    get_prompt,
    option_labels,
)

__all__ = [
    "FAMILIES",
    "INTERNVL_SYSTEM_MESSAGE",
    "MODELS",
    "PRETRAINED",
    "RANDOM_INIT",
    "ModelSpec",
    "ScoreResult",
    "Scorer",
    "TransformersScorer",
    "WeightsNotFoundError",
    "load_scorer",
    "make_random_scorer",
]

FAMILIES: tuple[str, ...] = ("internvl", "qwen2_5_vl", "llava_onevision")
"""Model families with a native transformers back-end."""

RANDOM_INIT = "random-init"
"""Label of every output of a randomly initialised model."""
PRETRAINED = "pretrained"
"""Label of outputs of a model loaded from real weights."""

INTERNVL_SYSTEM_MESSAGE = (
    "你是书生·万象，英文名是InternVL，"
    "是由上海人工智能实验室、清华大学及多家合作单位联合开发的多模态大语言模型。"
)
"""InternVL 2.5/3 system message used by the published prompts (§8.1)."""

_HELPFUL = "You are a helpful assistant."


@dataclass(frozen=True)
class ModelSpec:
    """One registered LMM.

    Parameters
    ----------
    short_id
        Project name (``"internvl3-8b"``); also the ``model_id`` of its scores.
    hf_id
        Hugging Face repository id.
    family
        One of :data:`FAMILIES`.
    remote_code
        True when the repository is in the original (non ``-hf``) format, which only loads with
        ``trust_remote_code=True``.
    """

    short_id: str
    hf_id: str
    family: str
    remote_code: bool = False


MODELS: dict[str, ModelSpec] = {
    s.short_id: s
    for s in (
        ModelSpec("internvl2.5-8b", "OpenGVLab/InternVL2_5-8B", "internvl", remote_code=True),
        ModelSpec("internvl3-8b", "OpenGVLab/InternVL3-8B-hf", "internvl"),
        ModelSpec("qwen2.5-vl-7b", "Qwen/Qwen2.5-VL-7B-Instruct", "qwen2_5_vl"),
        ModelSpec(
            "llava-onevision-7b", "llava-hf/llava-onevision-qwen2-7b-ov-hf", "llava_onevision"
        ),
    )
}
"""Short id -> :class:`ModelSpec`."""

_FAMILY_BY_MODEL_TYPE = {
    "internvl": "internvl",
    "internvl_chat": "internvl",
    "qwen2_5_vl": "qwen2_5_vl",
    "llava_onevision": "llava_onevision",
}


class WeightsNotFoundError(FileNotFoundError):
    """The model's weights are not on this machine (they are never downloaded implicitly)."""


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
        Which model produced the scores, and ``"random-init"`` or ``"pretrained"``.
    family, vsg_prompt, renormalised, prompt_versions
        How the scores were produced; the prompt versions belong in cache keys.
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

    @property
    def is_random(self) -> bool:
        """True for scores of a randomly initialised model."""
        return self.label == RANDOM_INIT


@runtime_checkable
class Scorer(Protocol):
    """Anything that scores segments; see :meth:`TransformersScorer.score_segments`."""

    model_id: str
    label: str

    def score_segments(
        self,
        frames_batch: Any,
        goal: str,
        steps: Sequence[str],
        *,
        prompt: str | None = "vsg",
        progress: bool = True,
        vsg_prompt: Literal["multiple_choice", "binary"] = "multiple_choice",
        next_step: bool = False,
        renormalise: bool = False,
    ) -> ScoreResult: ...


# --------------------------------------------------------------------------------------------
# family adapters


class _Family:
    """Family-specific input building and model calls (one instance per scorer)."""

    name = ""
    placeholder = ""  # the video placeholder the chat template renders
    vision_token = ""  # the token the visual features replace ...
    vision_id_field = ""  # ... and the config field that names its id

    def __init__(self, scorer: TransformersScorer) -> None:
        self.s = scorer
        self.model = scorer.model
        self.config = scorer.model.config
        self.tok = scorer.tokenizer

    # -- tokens -------------------------------------------------------------------------
    @property
    def vision_id(self) -> int:
        return int(getattr(self.config, self.vision_id_field))

    def check_tokens(self) -> None:
        """The tokenizer's vision token must be the id the model scatters features into."""
        tid = self.token_id(self.vision_token)
        if tid != self.vision_id:
            raise ValueError(
                f"{self.vision_token} is token {tid} but the model expects {self.vision_id} "
                f"(config.{self.vision_id_field})"
            )

    def token_id(self, token: str) -> int:
        tid = self.tok.convert_tokens_to_ids(token)
        if tid is None or tid == getattr(self.tok, "unk_token_id", None):
            raise ValueError(f"tokenizer {self.tok.name_or_path!r} has no token {token!r}")
        return int(tid)

    def expansion(self, info: dict) -> str:
        """What replaces the template's video placeholder."""
        raise NotImplementedError

    def published_text(self, question: str, info: dict) -> str:
        raise NotImplementedError

    def chat_messages(self, question: str) -> list[dict]:
        msgs: list[dict] = []
        if self.s.system_message:
            msgs.append(
                {"role": "system", "content": [{"type": "text", "text": self.s.system_message}]}
            )
        msgs.append(
            {"role": "user", "content": [{"type": "video"}, {"type": "text", "text": question}]}
        )
        return msgs

    # -- pixels -------------------------------------------------------------------------
    def pixel_inputs(self, frames: torch.Tensor) -> tuple[dict, dict]:
        """Model inputs for segments ``(S, F, 3, H, W)`` uint8, and shape info for the text."""
        raise NotImplementedError

    def vision_features(self, pix: dict) -> torch.Tensor:
        """Visual embeddings ``(n_tokens_total, hidden)`` in placeholder order."""
        raise NotImplementedError

    # -- language model -----------------------------------------------------------------
    def embed(self, ids: torch.Tensor, pix: dict | None) -> torch.Tensor:
        emb = self.model.get_input_embeddings()(ids)
        if pix is None:
            return emb
        mask = ids == self.vision_id
        feats = self.vision_features(pix).to(emb.device, emb.dtype)
        if int(mask.sum()) != feats.shape[0]:
            raise RuntimeError(
                f"{int(mask.sum())} vision placeholders but {feats.shape[0]} features"
            )
        return emb.masked_scatter(mask[..., None], feats)

    def positions(self, ids: torch.Tensor, pix: dict) -> torch.Tensor | None:
        """Position ids of one full prompt ``(L,)``; ``None`` for plain 1-D positions."""
        return None

    def language_model(self) -> Any:
        return self.model.model.language_model

    def lm(
        self, emb: torch.Tensor, pos: torch.Tensor | None, cache: Any
    ) -> tuple[torch.Tensor, Any]:
        out = self.language_model()(
            inputs_embeds=emb, position_ids=pos, past_key_values=cache, use_cache=cache is not None
        )
        return out.last_hidden_state, out.past_key_values

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.model.get_output_embeddings()(hidden)

    def full_logits(self, ids: torch.Tensor, pix: dict) -> torch.Tensor:
        """The model's own full forward pass; logits at the last position ``(B, V)``."""
        out = self.model(input_ids=ids, use_cache=False, logits_to_keep=1, **pix)
        return out.logits[:, -1]


class _InternVL(_Family):
    name = "internvl"
    placeholder = "<video>"
    vision_token, vision_id_field = "<IMG_CONTEXT>", "image_token_id"

    def tokens_per_frame(self) -> int:
        vc = self.config.vision_config
        patch = vc.patch_size[0] if isinstance(vc.patch_size, (list, tuple)) else vc.patch_size
        return int((self.image_size() // patch) ** 2 * self.config.downsample_ratio**2)

    def image_size(self) -> int:
        vc = self.config.vision_config
        return int(vc.image_size[0] if isinstance(vc.image_size, (list, tuple)) else vc.image_size)

    def _frame(self, n: int) -> str:
        return "<img>" + "<IMG_CONTEXT>" * n + "</img>"

    def expansion(self, info: dict) -> str:
        n = self.tokens_per_frame()
        return "\n".join(f"Frame{i + 1}: {self._frame(n)}" for i in range(info["frames"]))

    def published_text(self, question: str, info: dict) -> str:
        n = self.tokens_per_frame()
        frames = "".join(f"Frame{i + 1}: {self._frame(n)}\n" for i in range(info["frames"]))
        system = self.s.system_message or ""
        return (
            f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{frames}{question}"
            "<|im_end|>\n<|im_start|>assistant\n"
        )

    def pixel_inputs(self, frames: torch.Tensor) -> tuple[dict, dict]:
        s, f = frames.shape[:2]
        pv = preprocess_internvl(frames.reshape(s * f, *frames.shape[2:]), size=self.image_size())
        return {"pixel_values": pv.to(self.s.device, self.s.dtype)}, {"frames": f}

    def vision_features(self, pix: dict) -> torch.Tensor:
        out = self.model.model.get_image_features(
            pixel_values=pix["pixel_values"],
            vision_feature_layer=self.config.vision_feature_layer,
            vision_feature_select_strategy=self.config.vision_feature_select_strategy,
            return_dict=True,
        )
        feats = out.pooler_output
        return feats.reshape(-1, feats.shape[-1])


class _InternVLRemote(_InternVL):
    """The original InternVL repository format (``trust_remote_code=True``), best effort.

    Uses the repository's ``extract_feature`` and its ``language_model``; only the published
    prompt string is supported. Not testable offline (no remote code here).
    """

    name = "internvl-remote"

    @property
    def vision_id(self) -> int:
        return self.token_id("<IMG_CONTEXT>")

    def tokens_per_frame(self) -> int:
        return int(self.model.num_image_token)

    def image_size(self) -> int:
        return int(self.config.vision_config.image_size)

    def check_tokens(self) -> None:
        self.model.img_context_token_id = self.vision_id

    def vision_features(self, pix: dict) -> torch.Tensor:
        feats = self.model.extract_feature(pix["pixel_values"])
        return feats.reshape(-1, feats.shape[-1])

    def embed(self, ids: torch.Tensor, pix: dict | None) -> torch.Tensor:
        lm = self.model.language_model
        emb = lm.get_input_embeddings()(ids)
        if pix is None:
            return emb
        feats = self.vision_features(pix).to(emb.device, emb.dtype)
        return emb.masked_scatter((ids == self.vision_id)[..., None], feats)

    def language_model(self) -> Any:
        return self.model.language_model.model

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.model.language_model.get_output_embeddings()(hidden)

    def full_logits(self, ids: torch.Tensor, pix: dict) -> torch.Tensor:
        hidden, _ = self.lm(self.embed(ids, pix), None, None)
        return self.head(hidden[:, -1])


class _Qwen25VL(_Family):
    name = "qwen2_5_vl"
    placeholder = "<|video_pad|>"
    vision_token, vision_id_field = "<|video_pad|>", "video_token_id"

    def expansion(self, info: dict) -> str:
        return "<|video_pad|>" * info["n_tokens"]

    def published_text(self, question: str, info: dict) -> str:
        # The published Qwen wrapper already rendered the processor's chat template (§8.2).
        return self.s.render_chat(self.chat_messages(question)).replace(
            self.placeholder, self.expansion(info), 1
        )

    def pixel_inputs(self, frames: torch.Tensor) -> tuple[dict, dict]:
        vc = self.config.vision_config
        outs = [
            preprocess_qwen25vl(
                seg,
                min_pixels=self.s.qwen_min_pixels,
                max_pixels=self.s.qwen_max_pixels,
                temporal_patch_size=vc.temporal_patch_size,
                patch_size=vc.patch_size,
                merge_size=vc.spatial_merge_size,
            )
            for seg in frames
        ]
        pv = torch.cat([o["pixel_values_videos"] for o in outs]).to(self.s.device, self.s.dtype)
        thw = torch.cat([o["video_grid_thw"] for o in outs]).to(self.s.device)
        spg = torch.full(
            (len(outs),), vc.temporal_patch_size / self.s.qwen_fps, device=self.s.device
        )
        n = int(thw[0].prod()) // vc.spatial_merge_size**2
        pix = {"pixel_values_videos": pv, "video_grid_thw": thw, "second_per_grid_ts": spg}
        return pix, {"frames": frames.shape[1], "n_tokens": n}

    def vision_features(self, pix: dict) -> torch.Tensor:
        out = self.model.model.get_video_features(
            pixel_values_videos=pix["pixel_values_videos"],
            video_grid_thw=pix["video_grid_thw"],
            return_dict=True,
        )
        return torch.cat(list(out.pooler_output), dim=0)

    def positions(self, ids: torch.Tensor, pix: dict) -> torch.Tensor:
        ids = ids[None]
        types = (ids == self.vision_id).to(torch.int32) * 2
        pos, _ = self.model.model.get_rope_index(
            ids,
            mm_token_type_ids=types,
            video_grid_thw=pix["video_grid_thw"][:1],
            second_per_grid_ts=pix["second_per_grid_ts"][:1],
        )
        return pos[:, 0]  # (3, L)

    def full_logits(self, ids: torch.Tensor, pix: dict) -> torch.Tensor:
        types = (ids == self.vision_id).to(torch.int32) * 2
        self.model.model.rope_deltas = None
        out = self.model(
            input_ids=ids, mm_token_type_ids=types, use_cache=False, logits_to_keep=1, **pix
        )
        return out.logits[:, -1]


class _LlavaOneVision(_Family):
    name = "llava_onevision"
    placeholder = "<video>"
    vision_token, vision_id_field = "<video>", "video_token_index"

    def tokens_for(self, frames: int) -> int:
        vc = self.config.vision_config
        side = math.ceil((vc.image_size // vc.patch_size) / 2)
        return frames * side * side + 1

    def expansion(self, info: dict) -> str:
        return "<video>" * self.tokens_for(info["frames"])

    def published_text(self, question: str, info: dict) -> str:
        return (
            f"<|im_start|>system\n{self.s.system_message or _HELPFUL}<|im_end|>\n"
            f"<|im_start|>user\n{self.expansion(info)}\n{question}<|im_end|>\n"
            "<|im_start|>assistant\n"
        )

    def pixel_inputs(self, frames: torch.Tensor) -> tuple[dict, dict]:
        s, f = frames.shape[:2]
        size = int(self.config.vision_config.image_size)
        pv = preprocess_llava_onevision(
            frames.reshape(s * f, *frames.shape[2:]),
            size=size,
            skip_normalization_like_published=self.s.llava_skip_normalization_like_published,
        )
        pv = pv.reshape(s, f, 3, size, size).to(self.s.device, self.s.dtype)
        return {"pixel_values_videos": pv}, {"frames": f}

    def vision_features(self, pix: dict) -> torch.Tensor:
        out = self.model.model.get_video_features(
            pixel_values_videos=pix["pixel_values_videos"],
            vision_feature_layer=self.config.vision_feature_layer,
            vision_feature_select_strategy=self.config.vision_feature_select_strategy,
            return_dict=True,
        )
        feats = out.pooler_output
        return feats.reshape(-1, feats.shape[-1])


_ADAPTERS = {
    "internvl": _InternVL,
    "internvl-remote": _InternVLRemote,
    "qwen2_5_vl": _Qwen25VL,
    "llava_onevision": _LlavaOneVision,
}

_DEFAULT_SYSTEM = {
    "internvl": INTERNVL_SYSTEM_MESSAGE,
    "internvl-remote": INTERNVL_SYSTEM_MESSAGE,
    "qwen2_5_vl": None,  # the chat template adds "You are a helpful assistant."
    "llava_onevision": _HELPFUL,
}

_DEFAULT = object()


# --------------------------------------------------------------------------------------------
# the scorer


def _as_frames(frames_batch: Any) -> torch.Tensor:
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
        An ``InternVLForConditionalGeneration``, ``Qwen2_5_VLForConditionalGeneration`` or
        ``LlavaOnevisionForConditionalGeneration`` (or the remote-code InternVL chat model with
        ``family="internvl-remote"``), in eval mode on its device.
    tokenizer
        The model's tokenizer.
    family
        ``"internvl"``, ``"qwen2_5_vl"``, ``"llava_onevision"`` or ``"internvl-remote"``.
    model_id
        Name written into every :class:`ScoreResult`.
    label
        ``"pretrained"`` or ``"random-init"``; default from the model (a model built by
        :func:`make_random_scorer` is always ``"random-init"``, and cannot be relabelled).
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
        Rows (segment x question) per suffix pass in the shared-prefix path.
    repetition_penalty
        If set, applied to the first-position logits over the prompt's tokens before the softmax,
        as transformers' ``RepetitionPenaltyLogitsProcessor`` (Qwen2.5-VL's shipped generation
        config has 1.05, §8.2). Default ``None``: raw logits.
    qwen_fps, qwen_min_pixels, qwen_max_pixels
        Qwen2.5-VL video settings (§8.2): fps 2 gives 1 s per temporal grid.
    llava_skip_normalization_like_published
        Feed LLaVA-OneVision pixels in [0, 1] like the published bug (§8.3).
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
        suffix_batch_size: int = 64,
        repetition_penalty: float | None = None,
        qwen_fps: float = 2.0,
        qwen_min_pixels: int = 128 * 28 * 28,
        qwen_max_pixels: int = 360 * 420,
        llava_skip_normalization_like_published: bool = False,
    ) -> None:
        if family not in _ADAPTERS:
            raise ValueError(f"unknown family {family!r}; use one of {sorted(_ADAPTERS)}")
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
        if family == "internvl-remote":
            prompt_style = "published"
        self.model = model
        self.tokenizer = tokenizer
        self.processor = processor
        self.chat_template = chat_template
        self.family = family
        self.model_id = model_id
        self.label = label
        self.system_message = (
            _DEFAULT_SYSTEM[family] if system_message is _DEFAULT else system_message
        )
        self.prompt_style = prompt_style
        self.shared_prefix = bool(shared_prefix)
        self.segment_batch_size = int(segment_batch_size)
        self.suffix_batch_size = int(suffix_batch_size)
        self.repetition_penalty = repetition_penalty
        self.qwen_fps = float(qwen_fps)
        self.qwen_min_pixels = int(qwen_min_pixels)
        self.qwen_max_pixels = int(qwen_max_pixels)
        self.llava_skip_normalization_like_published = bool(llava_skip_normalization_like_published)
        p = next(model.parameters())
        self.device, self.dtype = p.device, p.dtype
        self._fam = _ADAPTERS[family](self)
        self._fam.check_tokens()
        self._labels: dict[int, list[str]] = {}
        self._ids_cache: dict[tuple, list[int]] = {}
        self._yes_no: list[int] | None = None
        self._digit_ids = list(check_single_tokens(tokenizer, [], DIGITS).values())

    def __repr__(self) -> str:
        return (
            f"TransformersScorer({self.model_id!r}, family={self.family!r}, label={self.label!r})"
        )

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
            self._yes_no = list(check_single_tokens(self.tokenizer, ["Yes", "No"], None).values())
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
        fam = self._fam
        if self.prompt_style == "published":
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
        """Token ids of :meth:`prompt_text` (BOS added only for the published InternVL string)."""
        key = (question, tuple(sorted(info.items())))
        ids = self._ids_cache.get(key)
        if ids is None:
            text = self.prompt_text(question, info)
            add_special = self.prompt_style == "published" and self.family.startswith("internvl")
            ids = list(self.tokenizer(text, add_special_tokens=add_special)["input_ids"])
            if len(self._ids_cache) > 4096:
                self._ids_cache.clear()
            self._ids_cache[key] = ids
        return ids

    # -- scoring ------------------------------------------------------------------------
    def score_segments(
        self,
        frames_batch: Any,
        goal: str,
        steps: Sequence[str],
        *,
        prompt: str | None = "vsg",
        progress: bool = True,
        vsg_prompt: Literal["multiple_choice", "binary"] = "multiple_choice",
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
        k = len(steps)
        if k == 0:
            raise ValueError("steps is empty")
        if vsg_prompt not in ("multiple_choice", "binary"):
            raise ValueError(
                f"vsg_prompt must be 'multiple_choice' or 'binary', got {vsg_prompt!r}"
            )
        labels = self.labels(k + 1)
        label_ids = self._label_ids(labels)
        choices = format_choices(steps, labels)

        questions: list[tuple[str, str, list[int]]] = []  # (kind, text, target ids)
        versions: dict[str, str] = {}
        if prompt is not None:
            if vsg_prompt == "multiple_choice":
                p = get_prompt(prompt)
                questions.append(("vsg", p.format(goal=goal, choices=choices), label_ids))
            else:
                p = get_prompt("vsg_binary" if prompt == "vsg" else prompt)
                yn = self._yes_no_ids()
                questions += [("vsg_bin", p.format(goal=goal, step=s), yn) for s in steps]
            versions["vsg"] = p.version
        if progress:
            p = get_prompt("prog")
            questions += [("prog", p.format(goal=goal, step=s), self._digit_ids) for s in steps]
            versions["prog"] = p.version
        if next_step:
            p = get_prompt("next")
            questions.append(("next", p.format(goal=goal, choices=choices), label_ids))
            versions["next"] = p.version
        if not questions:
            raise ValueError("nothing to score: prompt=None, progress=False, next_step=False")

        probs = self._score(frames, [q[1] for q in questions], [q[2] for q in questions])
        kinds = [q[0] for q in questions]

        def take(kind: str) -> np.ndarray:
            return np.stack([p for p, kd in zip(probs, kinds, strict=True) if kd == kind], axis=1)

        vsg = prog = nxt = None
        if prompt is not None:
            if vsg_prompt == "multiple_choice":
                vsg = take("vsg")[:, 0]
                if renormalise:
                    vsg = vsg / vsg.sum(-1, keepdims=True)
            else:
                yn = take("vsg_bin")  # (S, K, 2)
                yes = yn[..., 0] / yn.sum(-1) if renormalise else yn[..., 0]
                vsg = np.concatenate([yes, 1.0 - yes.max(-1, keepdims=True)], axis=1)
        if progress:
            prog = take("prog")
            if renormalise:
                prog = prog / prog.sum(-1, keepdims=True)
        if next_step:
            nxt = take("next")[:, 0]
            if renormalise:
                nxt = nxt / nxt.sum(-1, keepdims=True)
        return ScoreResult(
            vsg=vsg,
            progress=prog,
            next_step=nxt,
            labels=tuple(labels),
            model_id=self.model_id,
            label=self.label,
            family=self.family,
            vsg_prompt=vsg_prompt,
            renormalised=bool(renormalise),
            prompt_versions=versions,
        )

    @torch.inference_mode()
    def _score(
        self, frames: torch.Tensor, texts: list[str], targets: list[list[int]]
    ) -> list[np.ndarray]:
        """Probabilities ``(S, len(targets[q]))`` per question q."""
        n_seg = frames.shape[0]
        out = [np.empty((n_seg, len(t)), dtype=np.float64) for t in targets]
        for s0 in range(0, n_seg, self.segment_batch_size):
            chunk = frames[s0 : s0 + self.segment_batch_size]
            pix, info = self._fam.pixel_inputs(chunk)
            ids = [self.prompt_ids(t, info) for t in texts]
            if self.shared_prefix:
                res = self._score_shared(pix, ids, targets, chunk.shape[0])
            else:
                res = self._score_naive(pix, ids, targets, chunk.shape[0])
            for q, r in enumerate(res):
                out[q][s0 : s0 + chunk.shape[0]] = r
        return out

    def _probs(
        self, logits: torch.Tensor, full_ids: torch.Tensor, target: torch.Tensor
    ) -> np.ndarray:
        """Full-vocabulary softmax of ``logits (R, V)`` gathered at ``target (R, T)``."""
        logits = logits.float()
        if self.repetition_penalty is not None and self.repetition_penalty != 1.0:
            full_ids = full_ids.to(logits.device)
            score = logits.gather(1, full_ids)
            pen = float(self.repetition_penalty)
            score = torch.where(score < 0, score * pen, score / pen)
            logits = logits.scatter(1, full_ids, score)
        p = torch.softmax(logits, dim=-1).gather(1, target.to(logits.device))
        return p.double().cpu().numpy()

    def _score_naive(
        self, pix: dict, ids: list[list[int]], targets: list[list[int]], n_seg: int
    ) -> list[np.ndarray]:
        """One full forward pass per question (the published way)."""
        res = []
        for q, seq in enumerate(ids):
            input_ids = torch.tensor(seq, device=self.device)[None].expand(n_seg, -1)
            logits = self._fam.full_logits(input_ids, pix)
            tgt = torch.tensor(targets[q])[None].expand(n_seg, -1)
            res.append(self._probs(logits, input_ids, tgt))
        return res

    def _score_shared(
        self, pix: dict, ids: list[list[int]], targets: list[list[int]], n_seg: int
    ) -> list[np.ndarray]:
        """Shared prefix once per segment batch, question suffixes from copies of its cache."""
        from transformers import DynamicCache

        fam = self._fam
        plen = min(common_prefix_length(ids), min(len(s) for s in ids) - 1)
        vid = fam.vision_id
        if plen <= 0 or any(vid in s[plen:] for s in ids):
            warnings.warn(
                "the questions share no prefix holding all vision tokens; scoring each in full",
                stacklevel=3,
            )
            return self._score_naive(pix, ids, targets, n_seg)
        dev = self.device
        full_pos = [fam.positions(torch.tensor(s, device=dev), pix) for s in ids]
        prefix = torch.tensor(ids[0][:plen], device=dev)[None].expand(n_seg, -1)
        pos0 = None if full_pos[0] is None else full_pos[0][:, None, :plen].expand(-1, n_seg, -1)
        # remote-code configs may not describe their layers to transformers: plain layers then
        cache_cfg = None if self.family == "internvl-remote" else self.model.config
        cache = DynamicCache(config=cache_cfg)
        _, cache = fam.lm(fam.embed(prefix, pix), pos0, cache)
        layers = [(k_, v_) for k_, v_, *_ in cache]

        per_chunk = max(1, self.suffix_batch_size // n_seg)
        res: list[np.ndarray] = [None] * len(ids)  # type: ignore[list-item]
        for q0 in range(0, len(ids), per_chunk):
            qs = list(range(q0, min(len(ids), q0 + per_chunk)))
            c = len(qs)
            lens = [len(ids[q]) - plen for q in qs]
            width = max(lens)
            suf = torch.zeros((c, width), dtype=torch.long)
            full = torch.zeros((c, max(len(ids[q]) for q in qs)), dtype=torch.long)
            for j, q in enumerate(qs):
                suf[j, : lens[j]] = torch.tensor(ids[q][plen:])
                suf[j, lens[j] :] = ids[q][-1]
                full[j, : len(ids[q])] = torch.tensor(ids[q])
                full[j, len(ids[q]) :] = ids[q][0]  # harmless for the repetition penalty
            suf = suf.to(dev).repeat(n_seg, 1)  # row = segment * c + j
            pos = None
            if full_pos[0] is not None:
                pos = torch.zeros((3, c, width), dtype=full_pos[0].dtype, device=dev)
                for j, q in enumerate(qs):
                    p = full_pos[q][:, plen:]
                    pos[:, j, : lens[j]] = p
                    if lens[j] < width:  # padding: continue the positions (never attended to)
                        extra = torch.arange(1, width - lens[j] + 1, device=dev)
                        pos[:, j, lens[j] :] = p[:, -1:] + extra
                pos = pos.repeat(1, n_seg, 1)
            cache_c = DynamicCache(
                [(k_.repeat_interleave(c, 0), v_.repeat_interleave(c, 0)) for k_, v_ in layers],
                config=cache_cfg,
            )
            hidden, _ = fam.lm(fam.embed(suf, None), pos, cache_c)
            last = torch.tensor(lens, device=dev).repeat(n_seg) - 1
            h = hidden[torch.arange(hidden.shape[0], device=dev), last]
            logits = fam.head(h)
            for j, q in enumerate(qs):
                rows = torch.arange(n_seg, device=dev) * c + j
                tgt = torch.tensor(targets[q])[None].expand(n_seg, -1)
                full_q = full[j : j + 1].expand(n_seg, -1)
                res[q] = self._probs(logits[rows], full_q, tgt)
            del cache_c
        return res


# --------------------------------------------------------------------------------------------
# loading


def _hf_cache_hint(hf_id: str) -> str:
    folder = "models--" + hf_id.replace("/", "--")
    return (
        "Weights are never downloaded here. Put them in the Hugging Face cache: on a machine with "
        f"network run `hf download {hf_id}` (or huggingface_hub.snapshot_download), then copy "
        f"the folder hub/{folder} into this machine's $HF_HOME/hub (default "
        "~/.cache/huggingface/hub), or pass a local model directory."
    )


def _resolve_weights(source: str, *, local_files_only: bool, cache_dir: str | None) -> Path:
    """Local folder holding the model (config + weights), or :class:`WeightsNotFoundError`."""
    path = Path(source).expanduser()
    if path.is_dir():
        folder = path
    else:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

        try:
            folder = Path(
                snapshot_download(source, local_files_only=local_files_only, cache_dir=cache_dir)
            )
        except (LocalEntryNotFoundError, FileNotFoundError, HFValidationError) as exc:
            raise WeightsNotFoundError(
                f"no local copy of model {source!r}. {_hf_cache_hint(source)}"
            ) from exc
    weights = [
        p
        for pattern in ("*.safetensors", "*.bin", "*.safetensors.index.json", "*.bin.index.json")
        for p in folder.glob(pattern)
    ]
    if not (folder / "config.json").is_file() or not weights:
        raise WeightsNotFoundError(
            f"{folder} has no config.json or no weight files for model {source!r}. "
            f"{_hf_cache_hint(source)}"
        )
    return folder


def load_scorer(
    model: str,
    *,
    family: str | None = None,
    device: str | torch.device | None = None,
    dtype: torch.dtype | None = None,
    trust_remote_code: bool = False,
    local_files_only: bool = True,
    cache_dir: str | None = None,
    **scorer_kwargs: Any,
) -> TransformersScorer:
    """Load a real LMM (weights already on disk) as a :class:`TransformersScorer`.

    Parameters
    ----------
    model
        A short id of :data:`MODELS`, a Hugging Face id, or a local model folder.
    family
        Override the family (default from the registry or the config's ``model_type``).
    device, dtype
        Default CUDA with bfloat16 when available, else CPU with float32.
    trust_remote_code
        Run the repository's own Python code. Needed only for the original InternVL format
        (e.g. ``OpenGVLab/InternVL2_5-8B``); off by default, and a warning when on.
    local_files_only
        Never contact the Hub (default). Set False to allow a download on a machine with network.
    cache_dir
        Hugging Face cache folder (default ``$HF_HOME/hub``).
    **scorer_kwargs
        Passed to :class:`TransformersScorer`.

    Raises
    ------
    WeightsNotFoundError
        When the weights are not on disk, with instructions.
    ValueError
        For an original-format InternVL without ``trust_remote_code=True``.
    """
    if trust_remote_code:
        warnings.warn(
            f"trust_remote_code=True: loading {model!r} runs Python code from the model "
            "repository; only do this for a repository you trust",
            stacklevel=2,
        )
    spec = MODELS.get(model)
    source = spec.hf_id if spec else model
    model_id = spec.short_id if spec else model
    folder = _resolve_weights(source, local_files_only=local_files_only, cache_dir=cache_dir)
    with open(folder / "config.json", encoding="utf-8") as f:
        raw_config = json.load(f)
    model_type = raw_config.get("model_type", "")
    random_init = bool(raw_config.get("baglm_random_init", False))
    fam = family or (spec.family if spec else None) or _FAMILY_BY_MODEL_TYPE.get(model_type)
    if fam is None:
        raise ValueError(f"cannot tell the family of model_type {model_type!r}; pass family=...")
    remote = model_type == "internvl_chat"
    if remote and not trust_remote_code:
        raise ValueError(
            f"{source} is in the original InternVL repository format, which needs "
            "trust_remote_code=True (it runs the repository's code); or use an '-hf' checkpoint "
            "such as OpenGVLab/InternVL3-8B-hf"
        )
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(device)
    if dtype is None:
        dtype = torch.bfloat16 if device.type == "cuda" else torch.float32

    import transformers

    load_kw: dict[str, Any] = {"dtype": dtype, "local_files_only": True}
    tok_kw: dict[str, Any] = {"local_files_only": True}
    if remote:
        load_kw["trust_remote_code"] = tok_kw["trust_remote_code"] = True
        tok_kw["use_fast"] = False
        net = transformers.AutoModel.from_pretrained(str(folder), low_cpu_mem_usage=True, **load_kw)
        fam = "internvl-remote"
    else:
        cls = {
            "internvl": transformers.InternVLForConditionalGeneration,
            "qwen2_5_vl": transformers.Qwen2_5_VLForConditionalGeneration,
            "llava_onevision": transformers.LlavaOnevisionForConditionalGeneration,
        }[fam]
        net = cls.from_pretrained(str(folder), **load_kw)
    net = net.to(device).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder), **tok_kw)
    processor = None
    try:  # the processor only supplies the chat template; its image side may need torchvision
        processor = transformers.AutoProcessor.from_pretrained(str(folder), **tok_kw)
    except Exception:  # noqa: BLE001
        processor = None
    chat_template = scorer_kwargs.pop("chat_template", None) or _template_from_files(folder)
    return TransformersScorer(
        net,
        tokenizer,
        family=fam,
        model_id=model_id,
        label=RANDOM_INIT if random_init else PRETRAINED,
        processor=processor,
        chat_template=chat_template,
        **scorer_kwargs,
    )


def _template_from_files(folder: Path) -> str | None:
    """A chat template shipped beside the weights (``chat_template.jinja`` / ``.json``)."""
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    js = folder / "chat_template.json"
    if js.is_file():
        with open(js, encoding="utf-8") as f:
            return json.load(f).get("chat_template")
    return None


# --------------------------------------------------------------------------------------------
# tiny random models


def _tiny_config(
    family: str,
    vocab: int,
    *,
    hidden_size: int,
    num_layers: int,
    num_heads: int,
    vision_hidden_size: int,
    vision_layers: int,
    image_size: int,
    tokenizer: Any,
) -> Any:
    import transformers

    text = {
        "vocab_size": vocab,
        "hidden_size": hidden_size,
        "intermediate_size": 2 * hidden_size,
        "num_hidden_layers": num_layers,
        "num_attention_heads": num_heads,
        "num_key_value_heads": max(1, num_heads // 2),
        "max_position_embeddings": 32768,
    }
    vis = {"hidden_size": vision_hidden_size, "intermediate_size": 2 * vision_hidden_size}
    vheads = max(1, vision_hidden_size // 16)
    if family == "internvl":
        return transformers.InternVLConfig(
            vision_config={
                **vis,
                "num_hidden_layers": vision_layers,
                "num_attention_heads": vheads,
                "image_size": [image_size, image_size],
                "patch_size": [14, 14],
            },
            text_config={"model_type": "qwen2", **text},
            image_token_id=tokenizer.convert_tokens_to_ids("<IMG_CONTEXT>"),
        )
    if family == "qwen2_5_vl":
        half = hidden_size // num_heads // 2
        section = [half - 2 * (half // 3), half // 3, half // 3]
        return transformers.Qwen2_5_VLConfig(
            vision_config={
                **vis,
                "depth": vision_layers,
                "num_heads": vheads,
                "out_hidden_size": hidden_size,
                "fullatt_block_indexes": [vision_layers - 1],
                "window_size": 56,
                "tokens_per_second": 2,
            },
            text_config={
                **text,
                "rope_parameters": {
                    "rope_type": "default",
                    "mrope_section": section,
                    "rope_theta": 1e6,
                },
            },
            video_token_id=tokenizer.convert_tokens_to_ids("<|video_pad|>"),
            image_token_id=tokenizer.convert_tokens_to_ids("<|image_pad|>"),
            vision_start_token_id=tokenizer.convert_tokens_to_ids("<|vision_start|>"),
            vision_end_token_id=tokenizer.convert_tokens_to_ids("<|vision_end|>"),
        )
    if family == "llava_onevision":
        return transformers.LlavaOnevisionConfig(
            vision_config={
                "model_type": "siglip_vision_model",
                **vis,
                "num_hidden_layers": vision_layers,
                "num_attention_heads": vheads,
                "image_size": image_size,
                "patch_size": 14,
            },
            text_config={"model_type": "qwen2", **text},
            image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
            video_token_index=tokenizer.convert_tokens_to_ids("<video>"),
        )
    raise ValueError(f"unknown family {family!r}; use one of {FAMILIES}")


_TOKENIZER_FAMILY = {
    "internvl": "internvl",
    "qwen2_5_vl": "qwen2.5-vl",
    "llava_onevision": "llava-onevision",
}


def make_random_scorer(
    family: str,
    tokenizer: Any | None = None,
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    vision_hidden_size: int = 32,
    vision_layers: int = 2,
    image_size: int = 56,
    initializer_range: float = 0.2,
    seed: int = 0,
    **scorer_kwargs: Any,
) -> TransformersScorer:
    """A tiny randomly initialised model of ``family`` as a scorer (tests, benchmarks).

    Its scores are meaningless and always labelled ``"random-init"`` (``model_id`` starts with
    ``"random-init/"``); the mark is also written into the model config
    (``baglm_random_init``), so a saved and reloaded copy stays labelled. The vocabulary is
    the tokenizer's (default: the offline Qwen BPE tokenizer of
    :func:`baglm_nb.models.tokenizers.build_tokenizer` for the family).

    Parameters
    ----------
    family
        One of :data:`FAMILIES`.
    image_size
        Vision input side (InternVL, LLaVA-OneVision; a multiple of 28). For Qwen2.5-VL the
        default pixel bounds become ``image_size**2`` (override with ``qwen_min_pixels`` /
        ``qwen_max_pixels``).
    initializer_range
        Weight init std; larger than transformers' 0.02 so that the first-token distribution is
        far from uniform and score differences are visible in tests.
    seed
        Seed of the weight initialisation.
    """
    import transformers

    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; use one of {FAMILIES}")
    if tokenizer is None:
        from baglm_nb.models.tokenizers import build_tokenizer

        tokenizer = build_tokenizer(_TOKENIZER_FAMILY[family])
    cfg = _tiny_config(
        family,
        len(tokenizer),
        hidden_size=hidden_size,
        num_layers=num_layers,
        num_heads=num_heads,
        vision_hidden_size=vision_hidden_size,
        vision_layers=vision_layers,
        image_size=image_size,
        tokenizer=tokenizer,
    )
    cfg.initializer_range = initializer_range
    cfg.get_text_config().initializer_range = initializer_range
    cfg.baglm_random_init = True  # saved with the model: reloaded copies stay "random-init"
    cls = {
        "internvl": transformers.InternVLForConditionalGeneration,
        "qwen2_5_vl": transformers.Qwen2_5_VLForConditionalGeneration,
        "llava_onevision": transformers.LlavaOnevisionForConditionalGeneration,
    }[family]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = cls(cfg).eval()
    net._baglm_random_init = True
    if family == "qwen2_5_vl":
        scorer_kwargs.setdefault("qwen_min_pixels", image_size * image_size)
        scorer_kwargs.setdefault("qwen_max_pixels", image_size * image_size)
    scorer_kwargs.setdefault("label", RANDOM_INIT)
    model_id = f"{RANDOM_INIT}/{family}-h{hidden_size}-l{num_layers}-seed{seed}"
    return TransformersScorer(net, tokenizer, family=family, model_id=model_id, **scorer_kwargs)
