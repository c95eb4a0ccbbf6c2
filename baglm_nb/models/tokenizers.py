"""Offline Qwen-family tokenizers built from the BPE vocabulary shipped in ``dashscope``.

Model weights and tokenizer files cannot be downloaded here, but the PyPI package ``dashscope``
ships Qwen's byte-level BPE ranks (``dashscope/resources/qwen.tiktoken``, the 151,643 regular
tokens that Qwen, Qwen2, Qwen2.5, Qwen2.5-VL, InternVL3 and LLaVA-OneVision-Qwen2 share).
:func:`build_tokenizer` converts them with transformers' ``Qwen2Tokenizer`` pipeline (the Qwen2
pre-tokenisation regex, NFC normalisation, byte-level BPE and decoding) into a fast tokenizer
(:class:`~transformers.PreTrainedTokenizerFast`) and appends each model family's special tokens
at their usual ids:

================= ==============================================================================
family            special tokens (ids from 151643)
================= ==============================================================================
``qwen2.5-vl``    Qwen2.5 set: ``<|endoftext|> <|im_start|> <|im_end|> ... <|vision_start|>
                  <|vision_end|> <|vision_pad|> <|image_pad|> <|video_pad|> ... <|file_sep|>``
``internvl``      Qwen2.5 set + ``<img> </img> <IMG_CONTEXT> <quad> </quad> <ref> </ref> <box>
                  </box> <video>`` (InternVL3 ``-hf`` layout)
``llava-onevision`` ``<|endoftext|> <|im_start|> <|im_end|> <image> <video>`` (Qwen2 + LLaVA)
``qwen2``         ``<|endoftext|> <|im_start|> <|im_end|>``
================= ==============================================================================

Each family tokenizer also gets a minimal ChatML chat template (:data:`CHAT_TEMPLATES`) that
renders system/user turns and the ``video`` content item the way this project's scorers need;
real checkpoints ship their own templates, which the scorers use instead.

The conversion (merges from BPE ranks) is slow, so each family's tokenizer is saved
once as a ``tokenizers`` JSON file under :func:`tokenizer_cache_dir` (``$BAGLM_TOKENIZER_CACHE``,
else ``$XDG_CACHE_HOME/baglm_nb/tokenizers`` or ``~/.cache/baglm_nb/tokenizers``, else the temp
dir), keyed by a digest of ``qwen.tiktoken``, and reloaded from there; files are
written atomically. :func:`build_tokenizer` returns a new tokenizer object on each call.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

from baglm_nb.stores.atomic import atomic_save

__all__ = [
    "CHAT_TEMPLATES",
    "FAMILY_SPECIAL_TOKENS",
    "build_tokenizer",
    "qwen_bpe_file",
    "tokenizer_cache_dir",
]

_FORMAT = "qwen2-bpe-v1"

QWEN2_SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
QWEN25_SPECIAL = (
    *QWEN2_SPECIAL,
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
)
INTERNVL_EXTRA = (
    "<img>",
    "</img>",
    "<IMG_CONTEXT>",
    "<quad>",
    "</quad>",
    "<ref>",
    "</ref>",
    "<box>",
    "</box>",
    "<video>",
)

FAMILY_SPECIAL_TOKENS: dict[str, tuple[str, ...]] = {
    "qwen2": QWEN2_SPECIAL,
    "qwen2.5-vl": QWEN25_SPECIAL,
    "internvl": (*QWEN25_SPECIAL, *INTERNVL_EXTRA),
    "llava-onevision": (*QWEN2_SPECIAL, "<image>", "<video>"),
}
"""Special tokens appended after the 151,643 BPE tokens, in id order, per family."""

_CHATML = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' and default_system %}"
    "<|im_start|>system\n{{ default_system }}<|im_end|>\n"
    "{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'video' %}{{ video_placeholder }}"
    "{% elif item['type'] == 'image' %}{{ image_placeholder }}"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}"
    "{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _chatml(default_system: str, video: str, image: str) -> str:
    head = (
        "{% set default_system = " + repr(default_system) + " %}"
        "{% set video_placeholder = " + repr(video) + " %}"
        "{% set image_placeholder = " + repr(image) + " %}"
    )
    return head + _CHATML


CHAT_TEMPLATES: dict[str, str] = {
    # Qwen2.5-VL: default system turn, video as <|vision_start|><|video_pad|><|vision_end|>.
    "qwen2.5-vl": _chatml(
        "You are a helpful assistant.",
        "<|vision_start|><|video_pad|><|vision_end|>",
        "<|vision_start|><|image_pad|><|vision_end|>",
    ),
    # InternVL -hf: no default system turn; the processor expands "<video>" into Frame lines.
    "internvl": _chatml("", "<video>\n", "<IMG_CONTEXT>\n"),
    # LLaVA-OneVision: "<video>\n" + text, as the published "<image>\n" + question.
    "llava-onevision": _chatml("You are a helpful assistant.", "<video>\n", "<image>\n"),
    "qwen2": _chatml("You are a helpful assistant.", "", ""),
}
"""Minimal ChatML templates for the offline tokenizers (see the module docstring)."""


def qwen_bpe_file() -> Path:
    """Path of ``qwen.tiktoken`` inside the installed ``dashscope`` package.

    Raises
    ------
    ImportError
        If ``dashscope`` is not installed (``pip install dashscope``).
    """
    try:
        import dashscope
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "building an offline Qwen tokenizer needs the 'dashscope' package, which ships "
            "qwen.tiktoken: pip install dashscope tiktoken"
        ) from exc
    path = Path(dashscope.__file__).resolve().parent / "resources" / "qwen.tiktoken"
    if not path.is_file():  # pragma: no cover - depends on the package version
        raise FileNotFoundError(f"{path} not found in the installed dashscope package")
    return path


def tokenizer_cache_dir() -> Path:
    """Folder for built tokenizers (created on demand; see the module docstring)."""
    env = os.environ.get("BAGLM_TOKENIZER_CACHE")
    if env:
        base = Path(env)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "baglm_nb" / "tokenizers"
    try:
        base.mkdir(parents=True, exist_ok=True)
        probe = base / ".write-probe"
        probe.touch()
        probe.unlink()
    except OSError:
        base = Path(tempfile.gettempdir()) / "baglm_nb_tokenizers"
        base.mkdir(parents=True, exist_ok=True)
    return base


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


def _base_file(bpe_file: Path, root: Path) -> Path:
    """The converted base tokenizer (BPE ranks -> vocab + merges, Qwen2 pipeline), cached."""
    target = root / f"{_FORMAT}-{_file_digest(bpe_file)}-base.json"
    if not target.is_file():
        from transformers.convert_slow_tokenizer import TikTokenConverter
        from transformers.models.qwen2.tokenization_qwen2 import Qwen2Tokenizer

        conv = TikTokenConverter(vocab_file=str(bpe_file))
        vocab, merges = conv.extract_vocab_merges_from_model(str(bpe_file))
        atomic_save(target, Qwen2Tokenizer(vocab=vocab, merges=merges).backend_tokenizer.save)
    return target


def _family_file(family: str, bpe_file: Path, root: Path) -> Path:
    """The base with ``family``'s special tokens appended at their ids, cached."""
    target = root / f"{_FORMAT}-{_file_digest(bpe_file)}-{family}.json"
    if target.is_file():
        return target
    from tokenizers import AddedToken, Tokenizer

    raw = Tokenizer.from_file(str(_base_file(bpe_file, root)))
    start = raw.get_vocab_size(with_added_tokens=False)
    specials = FAMILY_SPECIAL_TOKENS[family]
    raw.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    for i, t in enumerate(specials):
        got = raw.token_to_id(t)
        if got != start + i:  # pragma: no cover - guards the id layout
            raise RuntimeError(f"special token {t!r} got id {got}, expected {start + i}")
    atomic_save(target, raw.save)
    return target


def _load(tokenizer_json: Path, family: str) -> Any:
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_file=str(tokenizer_json),
        eos_token="<|im_end|>" if family != "qwen2" else "<|endoftext|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        bos_token=None,
        additional_special_tokens=list(FAMILY_SPECIAL_TOKENS[family]),
        model_max_length=32768,
        clean_up_tokenization_spaces=False,
    )
    tok.chat_template = CHAT_TEMPLATES[family]
    tok.name_or_path = f"offline-qwen-bpe/{family}"
    return tok


def build_tokenizer(
    family: str = "qwen2.5-vl", *, cache_dir: str | os.PathLike | None = None
) -> Any:
    """A Qwen-BPE tokenizer with ``family``'s special tokens and a chat template.

    Parameters
    ----------
    family
        One of :data:`FAMILY_SPECIAL_TOKENS` (``"qwen2.5-vl"``, ``"internvl"``,
        ``"llava-onevision"``, ``"qwen2"``).
    cache_dir
        Where the converted tokenizers are kept; default :func:`tokenizer_cache_dir`.

    Returns
    -------
    transformers.PreTrainedTokenizerFast
        A new object on each call (read from the disk cache; the first build of a family
        converts the BPE ranks). ``len(tokenizer)`` is 151,643 plus the
        family's special tokens.
    """
    if family not in FAMILY_SPECIAL_TOKENS:
        raise ValueError(
            f"unknown tokenizer family {family!r}; use one of {sorted(FAMILY_SPECIAL_TOKENS)}"
        )
    bpe = qwen_bpe_file()
    root = Path(cache_dir) if cache_dir is not None else tokenizer_cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    target = _family_file(family, bpe, root)
    try:
        return _load(target, family)
    except Exception:  # noqa: BLE001 - a corrupt cache file: rebuild it once
        target.unlink(missing_ok=True)
        return _load(_family_file(family, bpe, root), family)
