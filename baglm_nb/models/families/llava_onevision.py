"""The LLaVA-OneVision family: its options, spec, adapter, served layout and tiny config.

A segment is one video (F x pooled patches + 1 newline token) of SigLIP frames, bilinear
384x384 and mean = std = 0.5 (:func:`preprocess_llava_onevision`); the published prompt is the
``qwen_1_5`` conversation ``"<image>\\n" + question`` (§8.3). A server gets the frames at
384x384 too (:func:`served_frames`, the same bilinear squash: the size of one SigLIP crop, so
the server's ``anyres`` processor keeps one crop and the base image, both that size).

Exports :data:`SPEC`, :data:`SPECIAL_TOKENS`, :class:`LlavaOptions`,
:class:`LlavaOneVisionAdapter`, :func:`preprocess_llava_onevision` and :func:`served_frames`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from baglm_nb.models.families.base import (
    Adapter,
    FamilySpec,
    ModelSpec,
    image_part,
    resized_frames,
)
from baglm_nb.models.tokenizers import QWEN2_SPECIAL, chatml

if TYPE_CHECKING:
    import numpy as np
    import torch

__all__ = [
    "SPEC",
    "SPECIAL_TOKENS",
    "LlavaOneVisionAdapter",
    "LlavaOptions",
    "preprocess_llava_onevision",
    "served_frames",
]

_HELPFUL = "You are a helpful assistant."
FRAME_SIDE = 384
"""The side of a SigLIP frame, in pixels."""
SPECIAL_TOKENS = (*QWEN2_SPECIAL, "<image>", "<video>")
"""The Qwen2 set, then LLaVA's image and video tokens, in id order from 151643."""


@dataclass(frozen=True)
class LlavaOptions:
    """LLaVA-OneVision's settings (§8.3).

    Parameters
    ----------
    skip_normalization_like_published
        Feed pixels in [0, 1] like the published bug (its normalisation result is discarded).
    """

    skip_normalization_like_published: bool = False


def preprocess_llava_onevision(
    frames: torch.Tensor, size: int = FRAME_SIDE, skip_normalization_like_published: bool = False
) -> torch.Tensor:
    """LLaVA-OneVision frames (SigLIP): bilinear 384x384 and mean = std = 0.5 (§8.3).

    ``float / 255`` first, then bilinear resize (``align_corners=False``, no antialias), then
    ``(x - 0.5) / 0.5`` -> [-1, 1].

    Parameters
    ----------
    skip_normalization_like_published
        Leave pixels in [0, 1], reproducing the published code, whose normalisation result is
        discarded (a bug).

    Returns
    -------
    torch.Tensor
        float32 ``(N, 3, size, size)``.
    """
    import torch.nn.functional as F

    from baglm_nb.models.preprocess import check_frames

    frames = check_frames(frames)
    x = frames.float() / 255.0
    if tuple(x.shape[-2:]) != (size, size):
        x = F.interpolate(
            x, size=(size, size), mode="bilinear", align_corners=False, antialias=False
        )
    if skip_normalization_like_published:
        return x
    return (x - 0.5) / 0.5


class LlavaOneVisionAdapter(Adapter):
    """LLaVA-OneVision: one video of ``<video>`` tokens per segment."""

    name = "llava_onevision"
    placeholder = "<video>"
    vision_token, vision_id_field = "<video>", "video_token_index"

    def tokens_for(self, frames: int) -> int:
        """Vision tokens of ``frames`` frames (pooled patches + one newline token)."""
        vc = self.config.vision_config
        side = math.ceil((vc.image_size // vc.patch_size) / 2)
        return frames * side * side + 1

    def expansion(self, info: dict) -> str:
        return "<video>" * self.tokens_for(info["frames"])

    def published_text(self, question: str, info: dict) -> str:
        return (
            f"<|im_start|>system\n{self.system_message or _HELPFUL}<|im_end|>\n"
            f"<|im_start|>user\n{self.expansion(info)}\n{question}<|im_end|>\n"
            "<|im_start|>assistant\n"
        )

    def pixel_inputs(self, frames: torch.Tensor) -> tuple[dict, dict]:
        s, f = frames.shape[:2]
        size = int(self.config.vision_config.image_size)
        pv = preprocess_llava_onevision(
            frames.reshape(s * f, *frames.shape[2:]),
            size=size,
            skip_normalization_like_published=self.options.skip_normalization_like_published,
        )
        pv = pv.reshape(s, f, 3, size, size).to(self.device, self.dtype)
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


def served_content(question: str, images: Sequence[str]) -> list[dict]:
    """The images, then ``"\\n" + question`` (``"<image>\\n" + question``, §8.3)."""
    return [*(image_part(url) for url in images), {"type": "text", "text": "\n" + question}]


def served_frames(frames: np.ndarray, pixels: tuple[int, int]) -> np.ndarray:
    """``(S, F, 3, H, W)`` uint8 frames squashed to a square of ``max`` pixels
    (``pixels = (min, max)``; 384x384 by default), bilinear without antialiasing and rounded:
    the resize of :func:`preprocess_llava_onevision`."""
    side = math.isqrt(int(pixels[1]))
    return resized_frames(frames, (side, side), mode="bilinear", antialias=False)


def tiny_config(
    tokenizer: Any, text: dict, vision: dict, vision_layers: int, vision_heads: int, image_size: int
) -> Any:
    """The config of a tiny random LLaVA-OneVision (SigLIP vision, Qwen2 text)."""
    import transformers

    return transformers.LlavaOnevisionConfig(
        vision_config={
            "model_type": "siglip_vision_model",
            **vision,
            "num_hidden_layers": vision_layers,
            "num_attention_heads": vision_heads,
            "image_size": image_size,
            "patch_size": 14,
        },
        text_config={"model_type": "qwen2", **text},
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        video_token_index=tokenizer.convert_tokens_to_ids("<video>"),
    )


SPEC = FamilySpec(
    name="llava_onevision",
    adapter=LlavaOneVisionAdapter,
    models=(
        ModelSpec(
            "llava-onevision-7b", "llava-hf/llava-onevision-qwen2-7b-ov-hf", "llava_onevision"
        ),
    ),
    model_types=("llava_onevision",),
    model_class="LlavaOnevisionForConditionalGeneration",
    preprocess=preprocess_llava_onevision,
    special_tokens=SPECIAL_TOKENS,
    # "<video>\n" + text, as the published "<image>\n" + question
    chat_template=chatml(_HELPFUL, "<video>\n", "<image>\n"),
    served_names=("llava-onevision", "llava_onevision"),
    served_content=served_content,
    tiny_config=tiny_config,
    options=LlavaOptions,
    system_message=_HELPFUL,
    served_pixels=(FRAME_SIDE * FRAME_SIDE, FRAME_SIDE * FRAME_SIDE),
    served_frames=served_frames,
)
"""LLaVA-OneVision."""
