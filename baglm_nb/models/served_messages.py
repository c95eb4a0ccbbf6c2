"""What a served request carries: the model family, the frames as images, the user turn.

:func:`guess_family` tells the LMM family from a served model's name; :func:`served_frames`
resizes a segment's frames to the size the family's own processor gives them (Qwen2.5-VL:
``smart_resize`` within the published pixel bounds, bicubic antialiased, as the local scorer),
so that the server's preprocessing has nothing left to resize; :func:`encode_png` turns a frame
into a lossless ``data:`` URL; :func:`user_content` lays a segment's frames and the question out
in the family's published order and count (used by
:class:`baglm_nb.models.served.ServedScorer`).

The layout each server gets (the README's served section): F separate images, never one video.
llama.cpp's server accepts no video (a ``video_url`` part is dropped without an error, measured
with the xllamacpp build of ``tests/gguf_server.py``), and vLLM's ``video_url`` takes a video
file, not frames sampled by this project's grid; so Qwen2.5-VL's published input, one video of
F frames in temporal pairs (F/2 x the tokens of one frame), is not what a server sees.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence

import numpy as np

__all__ = ["QWEN_PIXELS", "encode_png", "guess_family", "served_frames", "user_content"]

QWEN_PIXELS = (128 * 28 * 28, 360 * 420)
"""Qwen2.5-VL's published (min, max) pixels per frame (§8.2; the local scorer's defaults)."""

_FAMILY_HINTS = (
    ("internvl", "internvl"),
    ("qwen2.5-vl", "qwen2_5_vl"),
    ("qwen2_5_vl", "qwen2_5_vl"),
    ("qwen2.5vl", "qwen2_5_vl"),
    ("llava-onevision", "llava_onevision"),
    ("llava_onevision", "llava_onevision"),
)


def guess_family(model: str) -> str:
    """The LMM family of a served model name (``"Qwen/Qwen2.5-VL-7B-Instruct"`` ->
    ``"qwen2_5_vl"``); ``ValueError`` asking for ``--family`` when the name does not tell."""
    name = model.lower()
    for hint, family in _FAMILY_HINTS:
        if hint in name:
            return family
    raise ValueError(
        f"cannot tell the model family of {model!r} from its name; pass --family "
        "(internvl, qwen2_5_vl or llava_onevision)"
    )


def served_frames(family: str, frames: np.ndarray, pixels: tuple[int, int] | None) -> np.ndarray:
    """``(S, F, 3, H, W)`` uint8 frames at the family's processor size (unchanged when
    ``pixels`` is ``None`` or the family is not Qwen2.5-VL).

    Qwen2.5-VL: :func:`~baglm_nb.inputs.preprocess.smart_resize` to multiples of 28 within
    ``pixels = (min, max)``, resized by :func:`~baglm_nb.inputs.preprocess.resize_uint8`
    (bicubic, antialiased, rounded), the local scorer's own resize.
    """
    if pixels is None or family != "qwen2_5_vl":
        return frames
    import torch

    from baglm_nb.inputs.preprocess import resize_uint8, smart_resize

    size = smart_resize(frames.shape[-2], frames.shape[-1], 28, *pixels)
    if size == tuple(frames.shape[-2:]):
        return frames
    flat = torch.from_numpy(np.ascontiguousarray(frames.reshape(-1, *frames.shape[2:])))
    return resize_uint8(flat, size).numpy().reshape(*frames.shape[:3], *size)


def encode_png(frame: np.ndarray) -> str:
    """A ``(3, H, W)`` uint8 frame as a ``data:image/png;base64,...`` URL (lossless)."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(frame.transpose(1, 2, 0))).save(
        buf, format="PNG", compress_level=1
    )
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def user_content(family: str, question: str, images: Sequence[str]) -> str | list[dict]:
    """The user turn's content: the frames as images in the family's published order and count.

    InternVL: ``"Frame1: " <image> "\\nFrame2: " <image> ... "\\n" question`` (§8.1);
    Qwen2.5-VL: the images, then the question (§8.2's video-first order); LLaVA-OneVision: the
    images, then ``"\\n" + question`` (``"<image>\\n" + question``, §8.3). Without images, the
    question as a string.
    """
    if not images:
        return question

    def image(url: str) -> dict:
        return {"type": "image_url", "image_url": {"url": url}}

    parts: list[dict] = []
    if family.startswith("internvl"):
        for i, url in enumerate(images):
            parts += [{"type": "text", "text": ("\n" if i else "") + f"Frame{i + 1}: "}, image(url)]
        return [*parts, {"type": "text", "text": "\n" + question}]
    parts = [image(url) for url in images]
    text = "\n" + question if family == "llava_onevision" else question
    return [*parts, {"type": "text", "text": text}]
