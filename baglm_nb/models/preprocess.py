"""The frame operations every family's preprocessing shares (torch ops only).

Each family's own preprocessing is its spec's (:attr:`~baglm_nb.models.families.base.FamilySpec.
preprocess`, a function of its module in :mod:`baglm_nb.models.families`: InternVL's 448x448
tiles, Qwen2.5-VL's ``smart_resize`` and video patches, LLaVA-OneVision's SigLIP frames); they
are built from the operations here. All take uint8 frames ``(N, 3, H, W)`` (CHW, RGB; a
1-channel input has its channel replicated, :func:`check_frames`).

torchvision is not used (it is broken beside torch 2.13 here); its uint8 resize is reproduced by
:func:`resize_uint8` as ``F.interpolate`` on float followed by round and clamp to [0, 255],
which is what torchvision does for a uint8 input. On the CPU, :func:`resize_and_normalize`
runs :func:`baglm_nb.models.resample.resize_normalize` instead, a numba kernel with torch's own
filter weights, faster and equal to :func:`resize_uint8` up to one uint8 level at a few values
per million (its module notes say why; ``benchmarks/decode_speed.py`` measures both); on other
devices the torch path runs.

Known difference: transformers' Qwen2-VL processors resize with PIL (the ``-Pil`` image
processor) or torchvision; torch's antialiased bicubic kernel matches PIL's to within one uint8
level on most pixels but not bit-for-bit, so after normalisation values can differ by up to
about 1/255/std (~0.015) at a few pixels. Frames already at the target size are not resized (as
in torchvision and PIL), so then the outputs agree exactly.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from baglm_nb.models.resample import resize_normalize

__all__ = ["check_frames", "resize_and_normalize", "resize_uint8"]


def check_frames(frames: torch.Tensor) -> torch.Tensor:
    """uint8 ``(N, 3, H, W)`` frames (a 1-channel input expanded); ``TypeError`` /
    ``ValueError`` naming what is wrong otherwise."""
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
    frames: torch.Tensor, size: tuple[int, int], mode: str = "bicubic", antialias: bool = True
) -> torch.Tensor:
    """Resize of uint8 frames to ``size = (h, w)``, like torchvision on uint8.

    Interpolates in float32 (``align_corners=False``, antialiased by default), then rounds and
    clamps to [0, 255] and casts back to uint8. Frames already at ``size`` are returned
    unchanged.
    """
    frames = check_frames(frames)
    h, w = int(size[0]), int(size[1])
    if tuple(frames.shape[-2:]) == (h, w):
        return frames
    out = F.interpolate(
        frames.float(), size=(h, w), mode=mode, align_corners=False, antialias=antialias
    )
    return out.round_().clamp_(0, 255).to(torch.uint8)


def resize_and_normalize(
    frames: torch.Tensor, size: tuple[int, int], mean: tuple[float, ...], std: tuple[float, ...]
) -> torch.Tensor:
    """``resize_uint8`` + ``/255`` + mean/std: numba kernel on the CPU, torch elsewhere."""
    frames = check_frames(frames)
    if frames.device.type == "cpu":
        return resize_normalize(frames, size, mean, std)
    x = resize_uint8(frames, size)
    return _normalize(x.float().div_(255.0), mean, std)
