"""LMM family adapters: how each model family builds its inputs and runs its parts.

One adapter per family turns segments and question texts into what its transformers model
expects, for :class:`baglm_nb.models.engine.TransformersScorer`: the pixel inputs
(:mod:`baglm_nb.inputs.preprocess`), the visual features scattered into the token embeddings,
the language model with a KV cache, the output head, and the model's own full forward pass.

**Prompt building.** ``prompt_style="chat"`` renders ``[system?, user: [video, text]]`` with the
model's chat template and then expands the template's video placeholder the way each model
expects a 4-frame segment: InternVL ``"Frame1: <img><IMG_CONTEXT>*n</img>\\nFrame2: ..."``
(§8.1), Qwen2.5-VL one video of ``<|video_pad|>`` tokens, LLaVA-OneVision one video (F x pooled
patches + 1 newline token). ``prompt_style="published"`` writes the published strings directly
(§8.1's InternVL FastChat string with the InternVL system message; LLaVA's ``qwen_1_5``
conversation ``"<image>\\n" + question``; Qwen already used its chat template).

Exports :data:`ADAPTERS` (family name -> adapter class), :data:`DEFAULT_SYSTEM` (family name ->
default system message) and :data:`INTERNVL_SYSTEM_MESSAGE`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch

from baglm_nb.inputs.preprocess import (
    preprocess_internvl,
    preprocess_llava_onevision,
    preprocess_qwen25vl,
)
from baglm_nb.models.kv_prefix import cache_kwargs, returned_cache

if TYPE_CHECKING:
    from baglm_nb.models.engine import TransformersScorer

__all__ = ["ADAPTERS", "DEFAULT_SYSTEM", "INTERNVL_SYSTEM_MESSAGE"]

INTERNVL_SYSTEM_MESSAGE = (
    "你是书生·万象，英文名是InternVL，"
    "是由上海人工智能实验室、清华大学及多家合作单位联合开发的多模态大语言模型。"
)
"""InternVL 2.5/3 system message used by the published prompts (§8.1)."""

_HELPFUL = "You are a helpful assistant."


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
        model = self.language_model()
        out = model(inputs_embeds=emb, position_ids=pos, use_cache=cache is not None,
                    **cache_kwargs(model, cache))  # fmt: skip
        return out.last_hidden_state, returned_cache(out)

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


ADAPTERS: dict[str, type[_Family]] = {
    "internvl": _InternVL,
    "internvl-remote": _InternVLRemote,
    "qwen2_5_vl": _Qwen25VL,
    "llava_onevision": _LlavaOneVision,
}
"""Family name (``"internvl-remote"``: the original InternVL repository format) -> adapter."""

DEFAULT_SYSTEM: dict[str, str | None] = {
    "internvl": INTERNVL_SYSTEM_MESSAGE,
    "internvl-remote": INTERNVL_SYSTEM_MESSAGE,
    "qwen2_5_vl": None,  # the chat template adds "You are a helpful assistant."
    "llava_onevision": _HELPFUL,
}
"""Family name -> default system message of its prompts."""
