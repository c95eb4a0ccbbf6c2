"""The numba resize kernel against torch's float path (the reference) on real clips."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from baglm_nb.inputs.video import iter_segments
from baglm_nb.models.families.internvl import IMAGENET_MEAN, IMAGENET_STD
from baglm_nb.models.families.qwen2_5_vl import CLIP_MEAN, CLIP_STD
from baglm_nb.models.preprocess import _normalize, resize_uint8
from baglm_nb.models.resample import antialias_weights, resize_normalize

VIDEOS = Path(__file__).parent / "data" / "videos"


def _reference(frames: torch.Tensor, size, mean, std) -> torch.Tensor:
    return _normalize(resize_uint8(frames, size).float().div_(255.0), mean, std)


def _levels(a: torch.Tensor, b: torch.Tensor, std) -> np.ndarray:
    """Differences in uint8 levels (normalised values times 255 * std)."""
    s = torch.tensor(std).view(1, 3, 1, 1)
    return ((a - b) * s * 255).abs().numpy()


@pytest.fixture(scope="module")
def clip_frames() -> torch.Tensor:
    """16 real 640x480 frames of box.mp4 as torchcodec gives them (a channels-last view)."""
    batch = next(iter(iter_segments(VIDEOS / "box.mp4", batch_segments=4)))
    frames = batch.frames.reshape(-1, *batch.frames.shape[2:])
    assert frames.shape == (16, 3, 480, 640) and not frames.is_contiguous()
    return frames


def test_weights_are_torch_filters():
    """Applying the band to a signal equals torch's 1-D antialiased resize of it."""
    start, w = antialias_weights(640, 448)
    assert w.shape == (448, 6) and w.dtype == np.float32
    np.testing.assert_allclose(w.sum(axis=1), 1.0, atol=1e-6)
    x = torch.rand(1, 1, 1, 640, generator=torch.Generator().manual_seed(0)) * 255
    ref = F.interpolate(x, size=(1, 448), mode="bicubic", antialias=True, align_corners=False)
    xs = x[0, 0, 0].numpy()
    ours = (xs[start[:, None] + np.arange(6)] * w).sum(axis=1)
    np.testing.assert_allclose(ours, ref[0, 0, 0].numpy(), rtol=0, atol=1e-3)
    # Keys' cubic at scale 1 is the identity; upsampling has 4 taps
    s1, w1 = antialias_weights(50, 50)
    assert w1.shape == (50, 1) and (w1 == 1).all() and (s1 == np.arange(50)).all()
    assert antialias_weights(100, 280)[1].shape[1] == 4
    with pytest.raises(ValueError, match="bad resize"):
        antialias_weights(0, 10)


@pytest.mark.parametrize(
    "size, mean, std",
    [((448, 448), IMAGENET_MEAN, IMAGENET_STD), ((308, 420), CLIP_MEAN, CLIP_STD)],
)
def test_real_clip_equals_torch_within_one_level(clip_frames, size, mean, std):
    ours = resize_normalize(clip_frames, size, mean, std)
    ref = _reference(clip_frames, size, mean, std)
    assert ours.shape == ref.shape and ours.dtype == torch.float32 and ours.is_contiguous()
    levels = _levels(ours, ref, std)
    assert levels.max() <= 1.0 + 1e-3
    differing = (levels > 1e-3).mean()
    assert differing < 5e-5, differing  # measured: about 5e-6 at 448x448
    # where the levels agree, the normalised values agree to float32 rounding
    same = levels <= 1e-3
    np.testing.assert_allclose(ours.numpy()[same], ref.numpy()[same], rtol=0, atol=1e-6)


def test_layouts_upscaling_and_identity():
    g = torch.Generator().manual_seed(4)
    nchw = torch.randint(0, 256, (3, 3, 37, 53), dtype=torch.uint8, generator=g)
    nhwc_view = nchw.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
    for size in [(20, 31), (90, 120), (37, 53), (37, 20)]:
        a = resize_normalize(nchw, size, IMAGENET_MEAN, IMAGENET_STD)
        b = resize_normalize(nhwc_view, size, IMAGENET_MEAN, IMAGENET_STD)
        assert torch.equal(a, b)
        levels = _levels(a, _reference(nchw, size, IMAGENET_MEAN, IMAGENET_STD), IMAGENET_STD)
        assert levels.max() <= 1.0 + 1e-3 and (levels > 1e-3).mean() < 1e-3
    same = resize_normalize(nchw, (37, 53), IMAGENET_MEAN, IMAGENET_STD)
    torch.testing.assert_close(
        same, _normalize(nchw.float() / 255, IMAGENET_MEAN, IMAGENET_STD), rtol=0, atol=1e-6
    )
    assert resize_normalize(nchw[:0], (8, 8), IMAGENET_MEAN, IMAGENET_STD).shape == (0, 3, 8, 8)


def test_bad_input():
    with pytest.raises(ValueError, match="uint8"):
        resize_normalize(torch.zeros(1, 3, 8, 8), (4, 4), IMAGENET_MEAN, IMAGENET_STD)
    with pytest.raises(ValueError, match=r"\(N, 3, H, W\)"):
        resize_normalize(
            torch.zeros(1, 1, 8, 8, dtype=torch.uint8), (4, 4), IMAGENET_MEAN, IMAGENET_STD
        )


def test_resizing_leaves_torchs_thread_count_alone():
    """numba's OpenMP layer sets the OpenMP thread count when its pool starts (the first
    parallel call of a process), which torch reads as its own: a model that runs after the
    first frames were resized must keep the threads it was given. A fresh process, as the
    pool starts only once."""
    code = (
        "import torch\n"
        "from baglm_nb.models.resample import resize_normalize\n"
        "torch.set_num_threads(1)\n"
        "frames = torch.zeros((2, 3, 48, 64), dtype=torch.uint8)\n"
        "resize_normalize(frames, (32, 32), (0.5, 0.5, 0.5), (0.25, 0.25, 0.25))\n"
        "import numba\n"
        "print(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS)\n"
    )
    env = {**os.environ, "NUMBA_NUM_THREADS": "2"}  # a pool of 2 threads, on any machine
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1", "2"]
