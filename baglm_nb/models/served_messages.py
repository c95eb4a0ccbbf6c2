"""What a served request carries: the model family, the frames as images, the user turn.

Each family's served layout is its spec's (:mod:`baglm_nb.models.families`): :func:`guess_family`
tells the LMM family from a served model's name (the specs' ``served_names``);
:func:`served_frames` resizes a segment's frames to the size the family's own processor gives
them, within the pixel bounds of its spec (``served_pixels``: Qwen2.5-VL ``smart_resize`` within
the published bounds, InternVL one 448x448 tile, LLaVA-OneVision one 384x384 frame; each with
the local scorer's own resize), so that the server's preprocessing has nothing left to resize or
split; :func:`served_pixels` gives those bounds (the default of
:class:`~baglm_nb.models.served.ServedScorer`); :func:`encode_png`
turns a frame into a lossless ``data:`` URL; :func:`user_content` lays a segment's frames and the
question out in the family's published order and count (the specs' ``served_content``; used by
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

from baglm_nb.models.families import FAMILIES, family_of_name, family_spec, in_words

__all__ = ["encode_png", "guess_family", "served_frames", "served_pixels", "user_content"]


def guess_family(model: str) -> str:
    """The LMM family of a served model name (``"Qwen/Qwen2.5-VL-7B-Instruct"`` ->
    ``"qwen2_5_vl"``); ``ValueError`` asking for ``--family`` when the name does not tell."""
    family = family_of_name(model)
    if family is None:
        raise ValueError(
            f"cannot tell the model family of {model!r} from its name; pass --family "
            f"({in_words(FAMILIES)})"
        )
    return family


def served_pixels(family: str) -> tuple[int, int] | None:
    """The ``(min, max)`` pixels per frame of the family's processor (its spec's
    ``served_pixels``); ``None`` when its frames are sent as decoded."""
    return family_spec(family).served_pixels


def served_frames(family: str, frames: np.ndarray, pixels: tuple[int, int] | None) -> np.ndarray:
    """``(S, F, 3, H, W)`` uint8 frames at the family's processor size within ``pixels =
    (min, max)`` (its spec's ``served_frames``; unchanged when ``pixels`` is ``None`` or the
    family has none).

    Qwen2.5-VL: :func:`~baglm_nb.models.families.qwen2_5_vl.smart_resize` to multiples of 28
    within the bounds; InternVL: squashed to one square tile of ``max`` pixels; LLaVA-OneVision:
    squashed to a square of ``max`` pixels; each by the family's local resize
    (:func:`~baglm_nb.models.preprocess.resize_uint8`, rounded).
    """
    resize = family_spec(family).served_frames
    if pixels is None or resize is None:
        return frames
    return resize(frames, pixels)


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
    return family_spec(family).served_content(question, images)
