"""The InternVL 2.5 / 3 family: its spec, adapters, served layout and tiny config.

Chat prompts expand the template's ``<video>`` placeholder into ``"Frame1: <img><IMG_CONTEXT>*n
</img>\\nFrame2: ..."`` (§8.1); the published string is §8.1's FastChat string with the InternVL
system message, tokenised with its BOS. Frames are one 448x448 tile each
(:func:`preprocess_internvl`); a server gets them at that size too (:func:`served_frames`: a
448x448 image is one tile for InternVL's dynamic tiling, no thumbnail, so a server's processor
has nothing left to resize or split). The ``-hf`` checkpoints run
``InternVLForConditionalGeneration``; the original repository format (``model_type``
``internvl_chat``, ``trust_remote_code``) runs :class:`InternVLRemoteAdapter`, best effort.

Exports :data:`SPEC`, :data:`INTERNVL_SYSTEM_MESSAGE`, :data:`SPECIAL_TOKENS`,
:class:`InternVLAdapter`, :class:`InternVLRemoteAdapter`, :func:`preprocess_internvl` and
:func:`served_frames`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from baglm_nb.models.families.base import (
    Adapter,
    FamilySpec,
    ModelSpec,
    image_part,
    resized_frames,
)
from baglm_nb.models.tokenizers import QWEN25_SPECIAL, chatml

if TYPE_CHECKING:
    import numpy as np
    import torch

__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "INTERNVL_SYSTEM_MESSAGE",
    "SPEC",
    "SPECIAL_TOKENS",
    "InternVLAdapter",
    "InternVLRemoteAdapter",
    "preprocess_internvl",
    "served_frames",
]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
TILE_SIDE = 448
"""The side of InternVL's tile, in pixels."""

SPECIAL_TOKENS = (
    *QWEN25_SPECIAL,
    "<img>",
    "</img>",
    "<IMG_CONTEXT>",
    "<quad>",
    "</quad>",
    "<ref>",
    "</ref>",
    "<box>",
    "</box>",
    "<video>",
)
"""The Qwen2.5 set, then InternVL3's own (the ``-hf`` layout), in id order from 151643."""

INTERNVL_SYSTEM_MESSAGE = (
    "你是书生·万象，英文名是InternVL，"
    "是由上海人工智能实验室、清华大学及多家合作单位联合开发的多模态大语言模型。"
)
"""InternVL 2.5/3 system message used by the published prompts (§8.1)."""


def preprocess_internvl(frames: torch.Tensor, size: int = TILE_SIDE) -> torch.Tensor:
    """InternVL frames: one ``size`` x ``size`` tile each, as the published code (§1.4).

    Bicubic antialiased squash to ``size`` x ``size`` (no aspect preservation) on uint8, then
    ``/255`` and ImageNet mean/std.

    Returns
    -------
    torch.Tensor
        float32 ``(N, 3, size, size)``.
    """
    from baglm_nb.models.preprocess import resize_and_normalize

    return resize_and_normalize(frames, (size, size), IMAGENET_MEAN, IMAGENET_STD)


class InternVLAdapter(Adapter):
    """InternVL (``-hf`` checkpoints): one tile per frame, frames numbered in the prompt."""

    name = "internvl"
    placeholder = "<video>"
    vision_token, vision_id_field = "<IMG_CONTEXT>", "image_token_id"
    published_adds_bos = True

    def tokens_per_frame(self) -> int:
        """Vision tokens of one frame (one tile)."""
        vc = self.config.vision_config
        patch = vc.patch_size[0] if isinstance(vc.patch_size, (list, tuple)) else vc.patch_size
        return int((self.image_size() // patch) ** 2 * self.config.downsample_ratio**2)

    def image_size(self) -> int:
        """The tile side."""
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
        system = self.system_message or ""
        return (
            f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{frames}{question}"
            "<|im_end|>\n<|im_start|>assistant\n"
        )

    def pixel_inputs(self, frames: torch.Tensor) -> tuple[dict, dict]:
        s, f = frames.shape[:2]
        pv = preprocess_internvl(frames.reshape(s * f, *frames.shape[2:]), size=self.image_size())
        return {"pixel_values": pv.to(self.device, self.dtype)}, {"frames": f}

    def vision_features(self, pix: dict) -> torch.Tensor:
        out = self.model.model.get_image_features(
            pixel_values=pix["pixel_values"],
            vision_feature_layer=self.config.vision_feature_layer,
            vision_feature_select_strategy=self.config.vision_feature_select_strategy,
            return_dict=True,
        )
        feats = out.pooler_output
        return feats.reshape(-1, feats.shape[-1])


class InternVLRemoteAdapter(InternVLAdapter):
    """The original InternVL repository format (``trust_remote_code=True``), best effort.

    Uses the repository's ``extract_feature`` and its ``language_model``; only the published
    prompt string is supported. Not testable offline (no remote code here).
    """

    name = "internvl-remote"
    published_only = True

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

    def cache_config(self) -> Any:
        """``None``: remote-code configs may not describe their layers to transformers, which
        then uses plain layers."""
        return None

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.model.language_model.get_output_embeddings()(hidden)

    def full_logits(self, ids: torch.Tensor, pix: dict) -> torch.Tensor:
        hidden, _ = self.lm(self.embed(ids, pix), None, None)
        return self.head(hidden[:, -1])


def served_content(question: str, images: Sequence[str]) -> list[dict]:
    """``"Frame1: " <image> "\\nFrame2: " <image> ... "\\n" question`` (§8.1)."""
    parts: list[dict] = []
    for i, url in enumerate(images):
        parts += [
            {"type": "text", "text": ("\n" if i else "") + f"Frame{i + 1}: "},
            image_part(url),
        ]
    return [*parts, {"type": "text", "text": "\n" + question}]


def served_frames(frames: np.ndarray, pixels: tuple[int, int]) -> np.ndarray:
    """``(S, F, 3, H, W)`` uint8 frames squashed to one square tile of ``max`` pixels
    (``pixels = (min, max)``; 448x448 by default), bicubic antialiased and rounded: the resize
    of :func:`preprocess_internvl`."""
    side = math.isqrt(int(pixels[1]))
    return resized_frames(frames, (side, side))


def tiny_config(
    tokenizer: Any, text: dict, vision: dict, vision_layers: int, vision_heads: int, image_size: int
) -> Any:
    """The config of a tiny random InternVL (a Qwen2 text model)."""
    import transformers

    return transformers.InternVLConfig(
        vision_config={
            **vision,
            "num_hidden_layers": vision_layers,
            "num_attention_heads": vision_heads,
            "image_size": [image_size, image_size],
            "patch_size": [14, 14],
        },
        text_config={"model_type": "qwen2", **text},
        image_token_id=tokenizer.convert_tokens_to_ids("<IMG_CONTEXT>"),
    )


SPEC = FamilySpec(
    name="internvl",
    adapter=InternVLAdapter,
    models=(
        ModelSpec("internvl2.5-8b", "OpenGVLab/InternVL2_5-8B", "internvl", remote_code=True),
        ModelSpec("internvl3-8b", "OpenGVLab/InternVL3-8B-hf", "internvl"),
    ),
    model_types=("internvl",),
    model_class="InternVLForConditionalGeneration",
    preprocess=preprocess_internvl,
    special_tokens=SPECIAL_TOKENS,
    # no default system turn; the processor expands "<video>" into Frame lines
    chat_template=chatml("", "<video>\n", "<IMG_CONTEXT>\n"),
    served_names=("internvl",),
    served_content=served_content,
    tiny_config=tiny_config,
    system_message=INTERNVL_SYSTEM_MESSAGE,
    served_pixels=(TILE_SIDE * TILE_SIDE, TILE_SIDE * TILE_SIDE),
    served_frames=served_frames,
    remote_adapter=InternVLRemoteAdapter,
    remote_model_types=("internvl_chat",),
)
"""InternVL 2.5 / 3."""
