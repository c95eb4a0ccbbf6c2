"""Per-family frame preprocessing with torch ops only (reference-protocol §1.4, §8.2, §8.3).

All functions take uint8 frames ``(N, 3, H, W)`` (CHW, RGB; a 1-channel input has its channel
replicated) and return float32 tensors. torchvision is not used (it is broken beside torch
2.13 here); its uint8 resize is reproduced by :func:`resize_uint8` as ``F.interpolate`` on float
followed by round and clamp to [0, 255], which is what torchvision does for a uint8 input. On
the CPU, InternVL and Qwen frames go through :func:`baglm_nb.models.resample.resize_normalize`
instead, a numba kernel with torch's own filter weights, faster and equal to
:func:`resize_uint8` up to one uint8 level at a few values per million (its module notes say
why; ``benchmarks/decode_speed.py`` measures both); on other devices the torch path runs.

* :func:`preprocess_internvl` - one 448x448 tile per frame (squash, no thumbnail), bicubic
  antialiased, ImageNet mean/std (§1.4). Output ``(N, 3, 448, 448)``.
* :func:`preprocess_qwen25vl` - Qwen's ``smart_resize`` (multiples of 28 within the pixel
  bounds), bicubic antialiased, CLIP mean/std, then the video patch layout of Qwen2-VL/2.5-VL:
  ``pixel_values_videos (grid_t*grid_h*grid_w, 3*temporal_patch*patch*patch)`` and
  ``video_grid_thw`` (§8.2).
* :func:`preprocess_llava_onevision` - bilinear (no antialias) 384x384 on [0, 1] floats, then
  mean = std = 0.5 -> [-1, 1]; ``skip_normalization_like_published=True`` reproduces the
  published no-op normalisation (pixels left in [0, 1]) (§8.3).

Known difference: transformers' Qwen2-VL processors resize with PIL (the ``-Pil`` image
processor) or torchvision; torch's antialiased bicubic kernel matches PIL's to within one uint8
level on most pixels but not bit-for-bit, so after normalisation values can differ by up to
about 1/255/std (~0.015) at a few pixels. Frames already at the target size are not resized (as
in torchvision and PIL), so then the outputs agree exactly.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from baglm_nb.models.resample import resize_normalize

__all__ = [
    "CLIP_MEAN",
    "CLIP_STD",
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "preprocess_internvl",
    "preprocess_llava_onevision",
    "preprocess_qwen25vl",
    "qwen_patchify",
    "resize_uint8",
    "smart_resize",
]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


def _check_frames(frames: torch.Tensor) -> torch.Tensor:
    if not isinstance(frames, torch.Tensor):
        raise TypeError(f"frames must be a torch.Tensor, got {type(frames).__name__}")
    if frames.ndim != 4:
        raise ValueError(f"frames must be (N, C, H, W), got shape {tuple(frames.shape)}")
    if frames.dtype != torch.uint8:
        raise ValueError(f"frames must be uint8, got {frames.dtype}")
    if frames.shape[1] == 1:
        frames = frames.expand(-1, 3, -1, -1)
    elif frames.shape[1] != 3:
        raise ValueError(f"frames must have 1 or 3 channels, got {frames.shape[1]}")
    return frames


def _normalize(x: torch.Tensor, mean: tuple[float, ...], std: tuple[float, ...]) -> torch.Tensor:
    m = torch.tensor(mean, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    s = torch.tensor(std, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    return x.sub(m).div_(s)  # one temporary: same values as (x - m) / s


def resize_uint8(
    frames: torch.Tensor, size: tuple[int, int], mode: str = "bicubic"
) -> torch.Tensor:
    """Antialiased resize of uint8 frames to ``size = (h, w)``, like torchvision on uint8.

    Interpolates in float32 (``align_corners=False, antialias=True``), then rounds and clamps
    to [0, 255] and casts back to uint8. Frames already at ``size`` are returned unchanged.
    """
    frames = _check_frames(frames)
    h, w = int(size[0]), int(size[1])
    if tuple(frames.shape[-2:]) == (h, w):
        return frames
    out = F.interpolate(frames.float(), size=(h, w), mode=mode, align_corners=False, antialias=True)
    return out.round_().clamp_(0, 255).to(torch.uint8)


def preprocess_internvl(frames: torch.Tensor, size: int = 448) -> torch.Tensor:
    """InternVL frames: one ``size`` x ``size`` tile each, as the published code (§1.4).

    Bicubic antialiased squash to ``size`` x ``size`` (no aspect preservation) on uint8, then
    ``/255`` and ImageNet mean/std.

    Returns
    -------
    torch.Tensor
        float32 ``(N, 3, size, size)``.
    """
    return _resize_and_normalize(frames, (size, size), IMAGENET_MEAN, IMAGENET_STD)


def _resize_and_normalize(
    frames: torch.Tensor, size: tuple[int, int], mean: tuple[float, ...], std: tuple[float, ...]
) -> torch.Tensor:
    """``resize_uint8`` + ``/255`` + mean/std: numba kernel on the CPU, torch elsewhere."""
    frames = _check_frames(frames)
    if frames.device.type == "cpu":
        return resize_normalize(frames, size, mean, std)
    x = resize_uint8(frames, size)
    return _normalize(x.float().div_(255.0), mean, std)


def smart_resize(
    height: int,
    width: int,
    factor: int = 28,
    min_pixels: int = 128 * 28 * 28,
    max_pixels: int = 360 * 420,
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
    min_pixels: int = 128 * 28 * 28,
    max_pixels: int = 360 * 420,
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
    frames = _check_frames(frames)
    h, w = smart_resize(
        frames.shape[-2],
        frames.shape[-1],
        factor=patch_size * merge_size,
        min_pixels=min_pixels,
        max_pixels=max_pixels,
    )
    x = _resize_and_normalize(frames, (h, w), CLIP_MEAN, CLIP_STD)
    patches, thw = qwen_patchify(x, temporal_patch_size, patch_size, merge_size)
    return {
        "pixel_values_videos": patches,
        "video_grid_thw": torch.tensor([thw], dtype=torch.long),
    }


def preprocess_llava_onevision(
    frames: torch.Tensor, size: int = 384, skip_normalization_like_published: bool = False
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
    frames = _check_frames(frames)
    x = frames.float() / 255.0
    if tuple(x.shape[-2:]) != (size, size):
        x = F.interpolate(
            x, size=(size, size), mode="bilinear", align_corners=False, antialias=False
        )
    if skip_normalization_like_published:
        return x
    return (x - 0.5) / 0.5
