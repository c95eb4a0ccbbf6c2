"""What a served request carries: the model family, the frames as images, the user turn.

:func:`guess_family` tells the LMM family from a served model's name; :func:`encode_png` turns a
frame into a lossless ``data:`` URL; :func:`user_content` lays a segment's frames and the
question out in the family's published order and count (used by
:class:`baglm_nb.models.served.ServedScorer`).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence

import numpy as np

__all__ = ["encode_png", "guess_family", "user_content"]

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
