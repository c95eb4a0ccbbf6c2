"""Per-family frame preprocessing (torch only) against references."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from baglm_nb.models.families.internvl import IMAGENET_MEAN, IMAGENET_STD, preprocess_internvl
from baglm_nb.models.families.llava_onevision import preprocess_llava_onevision
from baglm_nb.models.families.qwen2_5_vl import (
    CLIP_MEAN,
    CLIP_STD,
    preprocess_qwen25vl,
    qwen_patchify,
    smart_resize,
)
from baglm_nb.models.preprocess import resize_uint8

ONE_LEVEL_CLIP = 1.0 / 255.0 / min(CLIP_STD) + 1e-6


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _frames(n: int, h: int, w: int, seed: int = 0) -> torch.Tensor:
    """Smooth-ish uint8 frames (random low-res noise upsampled), like natural images."""
    g = torch.Generator().manual_seed(seed)
    low = torch.rand(n, 3, h // 8 + 2, w // 8 + 2, generator=g) * 255
    x = F.interpolate(low, size=(h, w), mode="bilinear", align_corners=False)
    return x.round().clamp(0, 255).to(torch.uint8)


def _norm(x: torch.Tensor, mean, std) -> torch.Tensor:
    return (x - torch.tensor(mean).view(1, 3, 1, 1)) / torch.tensor(std).view(1, 3, 1, 1)


# --------------------------------------------------------------------------------------------
# InternVL


def test_internvl_shape_dtype_and_reference():
    fr = _frames(2, 90, 160)
    out = preprocess_internvl(fr)
    assert out.shape == (2, 3, 448, 448) and out.dtype == torch.float32
    ref = F.interpolate(fr.float(), (448, 448), mode="bicubic", antialias=True, align_corners=False)
    ref = ref.round().clamp(0, 255)
    torch.testing.assert_close(resize_uint8(fr, (448, 448)).float(), ref, rtol=0, atol=0)
    # the CPU kernel (baglm_nb.models.resample): one uint8 level at a few pixels, else equal
    levels = ((out - _norm(ref / 255.0, IMAGENET_MEAN, IMAGENET_STD)) * 255).abs()
    levels *= torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    assert levels.max() <= 1.001 and (levels > 1e-3).float().mean() < 1e-4


def test_internvl_no_resize_at_target_size_and_gray():
    fr = _frames(1, 56, 56)
    out = preprocess_internvl(fr, size=56)
    torch.testing.assert_close(out, _norm(fr.float() / 255, IMAGENET_MEAN, IMAGENET_STD))
    gray = fr[:, :1]
    out_g = preprocess_internvl(gray, size=56)
    torch.testing.assert_close(
        out_g[:, 0],
        _norm(gray.expand(-1, 3, -1, -1).float() / 255, IMAGENET_MEAN, IMAGENET_STD)[:, 0],
    )  # noqa: E501


def test_resize_uint8_close_to_pil_bicubic():
    from PIL import Image

    fr = _frames(1, 120, 200, seed=3)
    ours = resize_uint8(fr, (64, 96))[0].permute(1, 2, 0).numpy().astype(int)
    pil = np.asarray(
        Image.fromarray(fr[0].permute(1, 2, 0).numpy()).resize((96, 64), Image.Resampling.BICUBIC)
    ).astype(int)
    diff = np.abs(ours - pil)
    assert diff.max() <= 1 and diff.mean() < 0.5


def test_bad_inputs():
    with pytest.raises(ValueError, match="uint8"):
        preprocess_internvl(torch.zeros(1, 3, 8, 8))
    with pytest.raises(ValueError, match=r"\(N, C, H, W\)"):
        preprocess_internvl(torch.zeros(3, 8, 8, dtype=torch.uint8))
    with pytest.raises(ValueError, match="channels"):
        preprocess_internvl(torch.zeros(1, 4, 8, 8, dtype=torch.uint8))


# --------------------------------------------------------------------------------------------
# Qwen2.5-VL


def test_smart_resize_examples():
    assert smart_resize(720, 1280) == (280, 504)  # §8.2: 10 x 18 blocks of 28 px
    assert smart_resize(280, 504) == (280, 504)
    h, w = smart_resize(100, 100)  # upscaled to reach min_pixels
    assert h % 28 == 0 and w % 28 == 0 and h * w >= 128 * 28 * 28
    h, w = smart_resize(1080, 1920)
    assert h * w <= 360 * 420 and (h, w) == (280, 504)
    with pytest.raises(ValueError, match="aspect"):
        smart_resize(10, 2500)


def test_qwen_1280x720_layout():
    fr = _frames(4, 720, 1280)
    out = preprocess_qwen25vl(fr)
    assert out["video_grid_thw"].tolist() == [[2, 20, 36]]
    assert out["pixel_values_videos"].shape == (2 * 20 * 36, 3 * 2 * 14 * 14)
    assert out["pixel_values_videos"].dtype == torch.float32
    # 180 merged tokens per temporal pair, 360 per segment (§8.2)
    assert int(out["video_grid_thw"].prod()) // 4 == 360


def _pil_image_processor(min_pixels: int, max_pixels: int):
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    return Qwen2VLImageProcessorPil(min_pixels=min_pixels, max_pixels=max_pixels)


@pytest.mark.parametrize(
    "size, exact", [((112, 168), True), ((150, 230), False), ((90, 140), False)]
)
def test_qwen_layout_matches_transformers_processor(size, exact):
    """Each temporal slot of our video layout equals transformers' Qwen2-VL image processor
    output for that frame (the image processor repeats one image over the temporal patch)."""
    lo, hi = 56 * 84, 112 * 168
    fr = _frames(4, *size, seed=1)
    out = preprocess_qwen25vl(fr, min_pixels=lo, max_pixels=hi)
    gt, gh, gw = out["video_grid_thw"][0].tolist()
    h, w = smart_resize(*size, min_pixels=lo, max_pixels=hi)
    assert (gt, gh, gw) == (2, h // 14, w // 14)
    mine = out["pixel_values_videos"].reshape(gt, gh * gw, 3, 2, 14, 14)
    proc = _pil_image_processor(lo, hi)
    for f in range(4):
        ref = proc(images=[fr[f].numpy()], return_tensors="pt", input_data_format="channels_first")
        assert ref["image_grid_thw"].tolist() == [[1, gh, gw]]
        ref = ref["pixel_values"].reshape(gh * gw, 3, 2, 14, 14)[:, :, 0]
        diff = (mine[f // 2, :, :, f % 2] - ref).abs()
        if exact:
            assert diff.max() < 1e-5
        else:  # torch vs PIL bicubic rounding: at most one uint8 level, on few pixels
            assert diff.max() <= ONE_LEVEL_CLIP and diff.mean() < 0.25 * ONE_LEVEL_CLIP


def test_qwen_patchify_matches_processor_reshape_and_pads_odd_frames():
    x = torch.randn(3, 3, 56, 84)
    patches, (gt, gh, gw) = qwen_patchify(x)
    assert (gt, gh, gw) == (2, 4, 6)
    # the documented reshape/permute of Qwen2VLVideoProcessor.patchify on a batch of one video
    v = torch.cat([x, x[-1:]])[None]
    ref = v.view(1, 2, 2, 3, 2, 2, 14, 3, 2, 14).permute(0, 1, 4, 7, 5, 8, 3, 2, 6, 9)
    ref = ref.reshape(1, gt * gh * gw, 3 * 2 * 14 * 14)[0]
    torch.testing.assert_close(patches, ref, rtol=0, atol=0)
    # first row = top-left 14x14 patch, channels then the two frames
    torch.testing.assert_close(patches[0].view(3, 2, 14, 14)[:, 0], x[0, :, :14, :14])
    torch.testing.assert_close(patches[0].view(3, 2, 14, 14)[:, 1], x[1, :, :14, :14])
    # second row = the patch to its right inside the same 2x2 merge block
    torch.testing.assert_close(patches[1].view(3, 2, 14, 14)[:, 0], x[0, :, :14, 14:28])
    torch.testing.assert_close(patches[2].view(3, 2, 14, 14)[:, 0], x[0, :, 14:28, :14])


def test_qwen_normalisation_no_resize():
    fr = _frames(2, 112, 168)
    out = preprocess_qwen25vl(fr, min_pixels=112 * 168, max_pixels=112 * 168)
    x = _norm(fr.float() / 255, CLIP_MEAN, CLIP_STD)
    torch.testing.assert_close(out["pixel_values_videos"], qwen_patchify(x)[0])


# --------------------------------------------------------------------------------------------
# LLaVA-OneVision


def test_llava_onevision_normalised_and_published_bug():
    fr = _frames(3, 100, 150)
    out = preprocess_llava_onevision(fr)
    assert out.shape == (3, 3, 384, 384) and out.dtype == torch.float32
    ref = F.interpolate(fr.float() / 255, (384, 384), mode="bilinear", align_corners=False)
    torch.testing.assert_close(out, (ref - 0.5) / 0.5)
    assert out.min() >= -1 and out.max() <= 1 and out.min() < -0.5
    bug = preprocess_llava_onevision(fr, skip_normalization_like_published=True)
    torch.testing.assert_close(bug, ref)
    assert bug.min() >= 0 and bug.max() <= 1
    small = preprocess_llava_onevision(fr, size=56)
    assert small.shape == (3, 3, 56, 56)
