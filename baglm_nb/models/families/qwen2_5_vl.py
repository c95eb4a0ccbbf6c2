"""The Qwen2.5-VL family: its options, spec, adapter, served layout and tiny config.

A segment is one video of ``<|video_pad|>`` tokens: Qwen's :func:`smart_resize` within the
pixel bounds, CLIP normalisation and the video patch layout (:func:`preprocess_qwen25vl`), with
3-D mrope positions from the model's own ``get_rope_index``; ``fps`` gives the seconds per
temporal grid (§8.2). The published wrapper already rendered the processor's chat template, so
its published prompt is the chat prompt. A server receives the F frames as images at the
processor's size (:func:`served_frames`, within the published pixel bounds).

Exports :data:`SPEC`, :data:`SPECIAL_TOKENS`, :data:`PIXELS`, :class:`QwenOptions`,
:class:`Qwen25VLAdapter`, :func:`preprocess_qwen25vl`, :func:`qwen_patchify`,
:func:`smart_resize` and :func:`served_frames`.
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
from baglm_nb.models.tokenizers import QWEN25_SPECIAL, chatml

if TYPE_CHECKING:
    import numpy as np
    import torch

__all__ = [
    "CLIP_MEAN",
    "CLIP_STD",
    "PIXELS",
    "SPEC",
    "SPECIAL_TOKENS",
    "Qwen25VLAdapter",
    "QwenOptions",
    "preprocess_qwen25vl",
    "qwen_patchify",
    "served_frames",
    "smart_resize",
]

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
PIXELS = (128 * 28 * 28, 360 * 420)
"""The published (min, max) pixels per frame (§8.2): the local scorer's and a server's."""
SPECIAL_TOKENS = QWEN25_SPECIAL
"""Qwen2.5-VL's special tokens: the Qwen2.5 set."""


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
    min_pixels: int = PIXELS[0]
    max_pixels: int = PIXELS[1]


def smart_resize(
    height: int,
    width: int,
    factor: int = 28,
    min_pixels: int = PIXELS[0],
    max_pixels: int = PIXELS[1],
) -> tuple[int, int]:
    """Qwen2-VL's target size: multiples of ``factor``, pixel count within the bounds.

    Rounds each side to the nearest multiple of ``factor``; if the area exceeds
    ``max_pixels`` both sides are scaled down (floor), if below ``min_pixels`` scaled up
    (ceil), keeping the aspect ratio as closely as possible. 1280x720 -> (280, 504).

    Returns
    -------
    (height, width)
    """
    if min(height, width) <= 0:
        raise ValueError(f"bad frame size {height}x{width}")
    if max(height, width) / min(height, width) > 200:
        raise ValueError(
            f"aspect ratio must be < 200, got {max(height, width) / min(height, width)}"
        )
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def qwen_patchify(
    pixels: torch.Tensor, temporal_patch_size: int = 2, patch_size: int = 14, merge_size: int = 2
) -> tuple[torch.Tensor, tuple[int, int, int]]:
    """Qwen2-VL video patch layout of normalised frames ``(N, 3, H, W)`` of one video.

    Frames are grouped in consecutive temporal pairs (the last frame is repeated when N is not a
    multiple of ``temporal_patch_size``), each ``patch_size`` patch becomes one row, and rows are
    ordered (t, h-block, w-block, h-in-block, w-in-block) so that each ``merge_size`` x
    ``merge_size`` group is contiguous; each row holds (channel, t-in-patch, y, x). This is the
    reshape/permute of transformers' ``Qwen2VLVideoProcessor.patchify``.

    Returns
    -------
    patches
        ``(grid_t * grid_h * grid_w, 3 * temporal_patch_size * patch_size**2)``.
    (grid_t, grid_h, grid_w)
    """
    import torch

    n, c, h, w = pixels.shape
    if h % (patch_size * merge_size) or w % (patch_size * merge_size):
        raise ValueError(f"frame size {h}x{w} is not a multiple of {patch_size * merge_size}")
    if pad := -n % temporal_patch_size:
        pixels = torch.cat([pixels, pixels[-1:].expand(pad, -1, -1, -1)], dim=0)
        n += pad
    gt, gh, gw = n // temporal_patch_size, h // patch_size, w // patch_size
    x = pixels.reshape(
        gt,
        temporal_patch_size,
        c,
        gh // merge_size,
        merge_size,
        patch_size,
        gw // merge_size,
        merge_size,
        patch_size,
    )
    # (gt, gh/m, gw/m, mh, mw, C, tp, ph, pw)
    x = x.permute(0, 3, 6, 4, 7, 2, 1, 5, 8)
    patches = x.reshape(gt * gh * gw, c * temporal_patch_size * patch_size * patch_size)
    return patches.contiguous(), (gt, gh, gw)


def preprocess_qwen25vl(
    frames: torch.Tensor,
    min_pixels: int = PIXELS[0],
    max_pixels: int = PIXELS[1],
    temporal_patch_size: int = 2,
    patch_size: int = 14,
    merge_size: int = 2,
) -> dict[str, torch.Tensor]:
    """Qwen2.5-VL input for the frames of one video (one segment), as §8.2.

    ``smart_resize`` to multiples of ``patch_size * merge_size`` within
    [``min_pixels``, ``max_pixels``], bicubic antialiased resize on uint8 (rounded), ``/255``,
    CLIP mean/std, then :func:`qwen_patchify`.

    Returns
    -------
    dict
        ``pixel_values_videos`` float32 ``(grid_t*grid_h*grid_w, 3*temporal_patch*patch**2)``
        and ``video_grid_thw`` int64 ``(1, 3)``.
    """
    import torch

    from baglm_nb.models.preprocess import check_frames, resize_and_normalize

    frames = check_frames(frames)
    h, w = smart_resize(
        frames.shape[-2],
        frames.shape[-1],
        factor=patch_size * merge_size,
        min_pixels=min_pixels,
        max_pixels=max_pixels,
    )
    x = resize_and_normalize(frames, (h, w), CLIP_MEAN, CLIP_STD)
    patches, thw = qwen_patchify(x, temporal_patch_size, patch_size, merge_size)
    return {
        "pixel_values_videos": patches,
        "video_grid_thw": torch.tensor([thw], dtype=torch.long),
    }


class Qwen25VLAdapter(Adapter):
    """Qwen2.5-VL: one video of ``<|video_pad|>`` tokens per segment, mrope positions."""

    name = "qwen2_5_vl"
    placeholder = "<|video_pad|>"
    vision_token, vision_id_field = "<|video_pad|>", "video_token_id"
    published_is_chat = True  # the published Qwen wrapper rendered the chat template (§8.2)

    def expansion(self, info: dict) -> str:
        return "<|video_pad|>" * info["n_tokens"]

    def pixel_inputs(self, frames: torch.Tensor) -> tuple[dict, dict]:
        import torch

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
        import torch

        out = self.model.model.get_video_features(
            pixel_values_videos=pix["pixel_values_videos"],
            video_grid_thw=pix["video_grid_thw"],
            return_dict=True,
        )
        return torch.cat(list(out.pooler_output), dim=0)

    def positions(self, ids: torch.Tensor, pix: dict) -> torch.Tensor:
        import torch

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
        import torch

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
    return resized_frames(frames, smart_resize(frames.shape[-2], frames.shape[-1], 28, *pixels))


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
    preprocess=preprocess_qwen25vl,
    special_tokens=SPECIAL_TOKENS,
    # default system turn; a video as <|vision_start|><|video_pad|><|vision_end|>
    chat_template=chatml(
        "You are a helpful assistant.",
        "<|vision_start|><|video_pad|><|vision_end|>",
        "<|vision_start|><|image_pad|><|vision_end|>",
    ),
    served_names=("qwen2.5-vl", "qwen2_5_vl", "qwen2.5vl"),
    served_content=served_content,
    tiny_config=tiny_config,
    options=QwenOptions,
    system_message=None,  # the chat template adds "You are a helpful assistant."
    served_pixels=PIXELS,
    served_frames=served_frames,
    tiny_options=tiny_options,
)
"""Qwen2.5-VL."""
