"""Offline Qwen-family tokenizers built from the BPE vocabulary shipped in ``dashscope``.

Model weights and tokenizer files cannot be downloaded here, but the PyPI package ``dashscope``
ships Qwen's byte-level BPE ranks (``dashscope/resources/qwen.tiktoken``, the 151,643 regular
tokens that Qwen, Qwen2, Qwen2.5, Qwen2.5-VL, InternVL3 and LLaVA-OneVision-Qwen2 share).
:func:`build_tokenizer` converts them with transformers' ``Qwen2Tokenizer`` pipeline (the Qwen2
pre-tokenisation regex, NFC normalisation, byte-level BPE and decoding) into a fast tokenizer
(:class:`~transformers.PreTrainedTokenizerFast`) and appends a model family's special tokens
at their usual ids (ids from 151643), with a minimal chat template: both are the family
spec's (:attr:`~baglm_nb.models.families.base.FamilySpec.special_tokens` and
``chat_template``; the tiny models of :mod:`baglm_nb.models.testing` use them). The Qwen2 and
Qwen2.5 sets the families build on are :data:`QWEN2_SPECIAL` and :data:`QWEN25_SPECIAL`;
:func:`chatml` writes a ChatML template that renders system/user turns and the ``video`` content
item the way this project's scorers need (real checkpoints ship their own templates, which the
scorers use instead).

The conversion (merges from BPE ranks) is slow, so each family's tokenizer is saved
once as a ``tokenizers`` JSON file under :func:`tokenizer_cache_dir` (``$BAGLM_TOKENIZER_CACHE``,
else ``$XDG_CACHE_HOME/baglm_nb/tokenizers`` or ``~/.cache/baglm_nb/tokenizers``, else the temp
dir), keyed by a digest of ``qwen.tiktoken``, and reloaded from there; files are
written atomically (a family's file is named by a digest of its special tokens too).
:func:`build_tokenizer` returns a new tokenizer object on each call.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
from pathlib import Path
from typing import Any

from baglm_nb.stores.atomic import atomic_save

__all__ = [
    "QWEN25_SPECIAL",
    "QWEN2_SPECIAL",
    "build_tokenizer",
    "chatml",
    "qwen_bpe_file",
    "tokenizer_cache_dir",
]

_FORMAT = "qwen2-bpe-v1"

QWEN2_SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
"""Qwen2's special tokens (ids 151643-151645)."""
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
"""Qwen2.5's special tokens, in id order from 151643."""

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


def chatml(default_system: str, video: str, image: str) -> str:
    """A minimal ChatML chat template: ``default_system`` as the system turn when the messages
    have none (``""``: none), a ``video`` / ``image`` content item rendered as the given
    placeholder text."""
    head = (
        "{% set default_system = " + repr(default_system) + " %}"
        "{% set video_placeholder = " + repr(video) + " %}"
        "{% set image_placeholder = " + repr(image) + " %}"
    )
    return head + _CHATML


def qwen_bpe_file() -> Path:
    """Path of ``qwen.tiktoken`` inside the installed ``dashscope`` package.

    Raises
    ------
    ImportError
        If ``dashscope`` is not installed (``pip install dashscope``).
    """
    # found, not imported: importing dashscope (an API client) costs about a second of CPU in
    # every process that builds a tiny model, and only its data file is needed
    spec = importlib.util.find_spec("dashscope")
    if spec is None or not spec.submodule_search_locations:  # pragma: no cover - environment
        raise ImportError(
            "building an offline Qwen tokenizer needs the 'dashscope' package, which ships "
            "qwen.tiktoken: pip install dashscope tiktoken"
        )
    package = Path(next(iter(spec.submodule_search_locations)))
    path = package.resolve() / "resources" / "qwen.tiktoken"
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


def _family_file(family: Any, bpe_file: Path, root: Path) -> Path:
    """The base with ``family``'s special tokens appended at their ids, cached."""
    specials = tuple(family.special_tokens)
    tokens = hashlib.sha256("\n".join(specials).encode()).hexdigest()[:8]
    target = root / f"{_FORMAT}-{_file_digest(bpe_file)}-{family.name}-{tokens}.json"
    if target.is_file():
        return target
    from tokenizers import AddedToken, Tokenizer

    raw = Tokenizer.from_file(str(_base_file(bpe_file, root)))
    start = raw.get_vocab_size(with_added_tokens=False)
    raw.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    for i, t in enumerate(specials):
        got = raw.token_to_id(t)
        if got != start + i:  # pragma: no cover - guards the id layout
            raise RuntimeError(f"special token {t!r} got id {got}, expected {start + i}")
    atomic_save(target, raw.save)
    return target


def _load(tokenizer_json: Path, family: Any) -> Any:
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_file=str(tokenizer_json),
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        bos_token=None,
        additional_special_tokens=list(family.special_tokens),
        model_max_length=32768,
        clean_up_tokenization_spaces=False,
    )
    tok.chat_template = family.chat_template
    tok.name_or_path = f"offline-qwen-bpe/{family.name}"
    return tok


def build_tokenizer(family: Any, *, cache_dir: str | os.PathLike | None = None) -> Any:
    """A Qwen-BPE tokenizer with a family's special tokens and chat template.

    Parameters
    ----------
    family
        A family spec (:func:`baglm_nb.models.families.family_spec`): its ``name``,
        ``special_tokens`` (appended in id order from 151643) and ``chat_template``.
    cache_dir
        Where the converted tokenizers are kept; default :func:`tokenizer_cache_dir`.

    Returns
    -------
    transformers.PreTrainedTokenizerFast
        A new object on each call (read from the disk cache; the first build of a family
        converts the BPE ranks). ``len(tokenizer)`` is 151,643 plus the
        family's special tokens.
    """
    bpe = qwen_bpe_file()
    root = Path(cache_dir) if cache_dir is not None else tokenizer_cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    target = _family_file(family, bpe, root)
    try:
        return _load(target, family)
    except Exception:  # noqa: BLE001 - a corrupt cache file: rebuild it once
        target.unlink(missing_ok=True)
        return _load(_family_file(family, bpe, root), family)
