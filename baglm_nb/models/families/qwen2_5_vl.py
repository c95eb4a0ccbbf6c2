"""The Qwen2.5-VL family: its options, spec, adapter, served layout and tiny config.

A segment is one video of ``<|video_pad|>`` tokens: Qwen's ``smart_resize`` within the pixel
bounds, CLIP normalisation and the video patch layout
(:func:`~baglm_nb.models.preprocess.preprocess_qwen25vl`), with 3-D mrope positions from the
model's own ``get_rope_index``; ``fps`` gives the seconds per temporal grid (§8.2). The
published wrapper already rendered the processor's chat template, so its published prompt is
the chat prompt. A server receives the F frames as images at the processor's size.

Exports :data:`SPEC`, :class:`QwenOptions` and :class:`Qwen25VLAdapter`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from baglm_nb.models.families.base import Adapter, FamilySpec, ModelSpec, image_part
from baglm_nb.models.preprocess import preprocess_qwen25vl, resize_uint8, smart_resize

__all__ = ["SPEC", "Qwen25VLAdapter", "QwenOptions"]


@dataclass(frozen=True)
class QwenOptions:
    """Qwen2.5-VL's video settings (§8.2); the defaults are the published ones.

    Parameters
    ----------
    fps
        Frames per second of the video the model is told it sees: 2 gives 1 s per temporal grid.
    min_pixels, max_pixels
        The pixel bounds of ``smart_resize``.
    """

    fps: float = 2.0
    min_pixels: int = 128 * 28 * 28
    max_pixels: int = 360 * 420


class Qwen25VLAdapter(Adapter):
    """Qwen2.5-VL: one video of ``<|video_pad|>`` tokens per segment, mrope positions."""

    name = "qwen2_5_vl"
    placeholder = "<|video_pad|>"
    vision_token, vision_id_field = "<|video_pad|>", "video_token_id"
    published_is_chat = True  # the published Qwen wrapper rendered the chat template (§8.2)

    def expansion(self, info: dict) -> str:
        return "<|video_pad|>" * info["n_tokens"]

    def pixel_inputs(self, frames: torch.Tensor) -> tuple[dict, dict]:
        vc, opt = self.config.vision_config, self.options
        outs = [
            preprocess_qwen25vl(
                seg,
                min_pixels=opt.min_pixels,
                max_pixels=opt.max_pixels,
                temporal_patch_size=vc.temporal_patch_size,
                patch_size=vc.patch_size,
                merge_size=vc.spatial_merge_size,
            )
            for seg in frames
        ]
        pv = torch.cat([o["pixel_values_videos"] for o in outs]).to(self.device, self.dtype)
        thw = torch.cat([o["video_grid_thw"] for o in outs]).to(self.device)
        spg = torch.full((len(outs),), vc.temporal_patch_size / opt.fps, device=self.device)
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


def served_content(question: str, images: Sequence[str]) -> list[dict]:
    """The images, then the question (§8.2's video-first order)."""
    return [*(image_part(url) for url in images), {"type": "text", "text": question}]


def served_frames(frames: np.ndarray, pixels: tuple[int, int]) -> np.ndarray:
    """``(S, F, 3, H, W)`` uint8 frames at the processor's size: ``smart_resize`` to multiples
    of 28 within ``pixels = (min, max)``, then :func:`~baglm_nb.models.preprocess.resize_uint8`
    (bicubic, antialiased, rounded), the local scorer's own resize."""
    size = smart_resize(frames.shape[-2], frames.shape[-1], 28, *pixels)
    if size == tuple(frames.shape[-2:]):
        return frames
    flat = torch.from_numpy(np.ascontiguousarray(frames.reshape(-1, *frames.shape[2:])))
    return resize_uint8(flat, size).numpy().reshape(*frames.shape[:3], *size)


def tiny_config(
    tokenizer: Any, text: dict, vision: dict, vision_layers: int, vision_heads: int, image_size: int
) -> Any:
    """The config of a tiny random Qwen2.5-VL (mrope sections from the head size)."""
    import transformers

    half = text["hidden_size"] // text["num_attention_heads"] // 2
    section = [half - 2 * (half // 3), half // 3, half // 3]
    return transformers.Qwen2_5_VLConfig(
        vision_config={
            **vision,
            "depth": vision_layers,
            "num_heads": vision_heads,
            "out_hidden_size": text["hidden_size"],
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


def tiny_options(image_size: int) -> QwenOptions:
    """The tiny model's frames at ``image_size`` squared pixels."""
    return QwenOptions(min_pixels=image_size * image_size, max_pixels=image_size * image_size)


SPEC = FamilySpec(
    name="qwen2_5_vl",
    adapter=Qwen25VLAdapter,
    models=(ModelSpec("qwen2.5-vl-7b", "Qwen/Qwen2.5-VL-7B-Instruct", "qwen2_5_vl"),),
    model_types=("qwen2_5_vl",),
    model_class="Qwen2_5_VLForConditionalGeneration",
    served_names=("qwen2.5-vl", "qwen2_5_vl", "qwen2.5vl"),
    served_content=served_content,
    tokenizer="qwen2.5-vl",
    tiny_config=tiny_config,
    options=QwenOptions,
    system_message=None,  # the chat template adds "You are a helpful assistant."
    tiny_options=tiny_options,
    served_frames=served_frames,
)
"""Qwen2.5-VL."""
