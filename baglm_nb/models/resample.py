"""Fast antialiased bicubic resize of uint8 frames, fused with normalisation (numba, CPU).

The reference preprocessing (reference-protocol §1.4, §8.2) is torchvision's resize of a uint8
tensor: ``F.interpolate`` in float32 (bicubic, ``antialias=True``, ``align_corners=False``),
rounded and clamped back to uint8, then ``/255`` and ``(x - mean) / std``.
:func:`baglm_nb.models.preprocess.resize_uint8` does exactly that with torch, and is kept as the
reference. On the CPU torch's generic antialiased float kernel is too slow for the decode speed
goal, so the CPU default uses this kernel instead (``benchmarks/decode_speed.py`` prints both
speeds and the ratio to the goal).

How it stays faithful:

* **Weights are torch's own.** :func:`antialias_weights` resizes an identity matrix along one
  axis with ``F.interpolate``; column ``j`` of the result is the filter of output pixel ``j``
  (products with 0 and 1 are exact), stored as a band ``(start, taps)``.
* **Same order.** Horizontal pass first, then vertical, each a float32 sum over the taps from
  the first input pixel on, as torch's separable kernel does; then round half to even, clamp,
  ``/255``, ``- mean``, ``/ std`` in float32.
* **Difference.** The result equals the torch path except at rare values
  (``benchmarks/decode_speed.py`` prints how many on the test clips), which differ by one
  uint8 level: float32 rounding, as the compiled loop of torch is not reproduced operation
  for operation (some of its sums match only with fused multiply-adds). The published code
  resized on a GPU, whose kernel also differs from torch's CPU kernel by such roundings, so
  neither CPU path is bit-exact to it. ``tests/test_resample.py`` checks the bound on real clips.

The kernel reads frames channels-last (torchcodec's native layout, so no copy), converts each
row to float32 once, and runs its two passes frame by frame so that the float32 intermediate
stays in cache; rows are split across numba's threads.
"""

from __future__ import annotations

from functools import lru_cache

import numba
import numpy as np
import torch
import torch.nn.functional as F

__all__ = ["antialias_weights", "resize_normalize"]


@lru_cache(maxsize=32)
def antialias_weights(in_size: int, out_size: int) -> tuple[np.ndarray, np.ndarray]:
    """torch's antialiased bicubic filter from ``in_size`` to ``out_size`` pixels, as a band.

    Returns
    -------
    start
        int64 ``(out_size,)``: first input pixel of each output pixel's filter.
    weights
        float32 ``(out_size, taps)``: the filter, from ``start`` on (trailing zeros pad the
        narrower filters; adding ``x * 0`` leaves a float sum unchanged).
    """
    if in_size <= 0 or out_size <= 0:
        raise ValueError(f"bad resize {in_size} -> {out_size}")
    eye = torch.eye(in_size, dtype=torch.float32)[None, None]
    dense = F.interpolate(
        eye, size=(in_size, out_size), mode="bicubic", align_corners=False, antialias=True
    )[0, 0].T.numpy()  # (out, in): row j is output j's filter
    nonzero = dense != 0
    if not nonzero.any(axis=1).all():
        raise ValueError(f"empty filter for resize {in_size} -> {out_size}")
    first = nonzero.argmax(axis=1)
    last = in_size - 1 - nonzero[:, ::-1].argmax(axis=1)
    taps = int((last - first).max()) + 1
    start = np.minimum(first, in_size - taps).astype(np.int64)
    index = start[:, None] + np.arange(taps)
    weights = np.ascontiguousarray(np.take_along_axis(dense, index, axis=1), dtype=np.float32)
    # a filter moved left by the clamp gains leading zeros: still exact (0 * x = 0)
    return start, weights


@numba.njit(parallel=True, nogil=True, cache=True)
def _resize_normalize_hwc(frames, h_start, h_w, v_start, v_w, mean, std, out):  # pragma: no cover
    """frames (N, H, W, C) uint8 -> out (N, C, oh, ow) float32, normalised."""
    n, height, _, channels = frames.shape  # channels == 3
    oh, ow = out.shape[2], out.shape[3]
    kh, kv = h_w.shape[1], v_w.shape[1]
    tmp = np.empty((channels, height, ow), np.float32)
    for i in range(n):
        for y in numba.prange(height):  # horizontal pass: one input row per iteration
            row = frames[i, y].astype(np.float32)
            for j in range(ow):  # the three channels side by side (RGB interleaved)
                s = h_start[j]
                w = h_w[j, 0]
                r, g, b = row[s, 0] * w, row[s, 1] * w, row[s, 2] * w
                for k in range(1, kh):
                    w = h_w[j, k]
                    r += row[s + k, 0] * w
                    g += row[s + k, 1] * w
                    b += row[s + k, 2] * w
                tmp[0, y, j] = r
                tmp[1, y, j] = g
                tmp[2, y, j] = b
        for p in numba.prange(channels * oh):  # vertical pass + round/clamp/normalise
            c = p // oh
            yo = p % oh
            s = v_start[yo]
            dst = out[i, c, yo]
            w0 = v_w[yo, 0]
            src = tmp[c, s]
            for j in range(ow):
                dst[j] = src[j] * w0
            for k in range(1, kv):
                w = v_w[yo, k]
                src = tmp[c, s + k]
                for j in range(ow):
                    dst[j] += src[j] * w
            m, sd = mean[c], std[c]
            for j in range(ow):
                v = min(max(np.rint(dst[j]), np.float32(0.0)), np.float32(255.0))
                dst[j] = (v / np.float32(255.0) - m) / sd


def resize_normalize(
    frames: torch.Tensor,
    size: tuple[int, int],
    mean: tuple[float, float, float],
    std: tuple[float, float, float],
) -> torch.Tensor:
    """Antialiased bicubic resize of uint8 RGB frames to ``size = (h, w)``, then normalise.

    Equal (see the module notes for the measured bound) to
    ``((resize_uint8(frames, size).float() / 255) - mean) / std``.

    Parameters
    ----------
    frames
        uint8 ``(N, 3, H, W)`` on the CPU, any strides (channels-last views are read in place).
    size
        Output ``(height, width)``.
    mean, std
        Per-channel normalisation applied to ``x / 255``.

    Returns
    -------
    torch.Tensor
        float32 ``(N, 3, h, w)``, contiguous.
    """
    if frames.ndim != 4 or frames.shape[1] != 3 or frames.dtype != torch.uint8:
        raise ValueError(
            f"frames must be uint8 (N, 3, H, W), got {frames.dtype} {tuple(frames.shape)}"
        )
    if frames.device.type != "cpu":
        raise ValueError(f"resize_normalize runs on the CPU, got frames on {frames.device}")
    h, w = int(size[0]), int(size[1])
    n, _, in_h, in_w = frames.shape
    hwc = frames.permute(0, 2, 3, 1).contiguous().numpy()  # no copy for torchcodec frames
    h_start, h_w = antialias_weights(in_w, w)
    v_start, v_w = antialias_weights(in_h, h)
    out = np.empty((n, 3, h, w), dtype=np.float32)
    if n:
        # numba's OpenMP layer sets the OpenMP thread count that torch reads as its own: put
        # torch's back, so that resizing frames never changes how many threads a model uses
        torch_threads = torch.get_num_threads()
        try:
            _resize_normalize_hwc(
                hwc,
                h_start,
                h_w,
                v_start,
                v_w,
                np.asarray(mean, dtype=np.float32),
                np.asarray(std, dtype=np.float32),
                out,
            )
        finally:
            if torch.get_num_threads() != torch_threads:
                torch.set_num_threads(torch_threads)
    return torch.from_numpy(out)
