"""GGUF models as ordinary transformers folders, converted once and cached.

Loading a GGUF file through transformers dequantises the weights and rebuilds the tokenizer from
the GGUF metadata, which takes tens of seconds on a small CPU; :func:`convert_gguf` does it once
into a folder under :func:`model_cache_dir`, which then loads in about a second
(:func:`baglm_nb.models.llm_local.load_smollm2`).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["convert_gguf", "model_cache_dir"]


def model_cache_dir() -> Path:
    """Folder for converted models (``$BAGLM_MODEL_CACHE``, else ``~/.cache/baglm_nb/models``).

    ``$XDG_CACHE_HOME`` replaces ``~/.cache`` when set.
    """
    env = os.environ.get("BAGLM_MODEL_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "baglm_nb" / "models"


def convert_gguf(path: str | os.PathLike, cache_dir: str | os.PathLike | None = None) -> Path:
    """A transformers folder (float32 safetensors + tokenizer) converted once from a GGUF file.

    Loading a GGUF file through transformers dequantises the weights and rebuilds the tokenizer
    from the GGUF metadata, which takes tens of seconds on a small CPU; the converted folder
    loads in about a second. It is built in a temp folder and renamed into place, so a reader
    never sees a half-written one; the folder name holds the file's stem and size.
    """
    import shutil
    import tempfile

    path = Path(path)
    base = Path(cache_dir) if cache_dir is not None else model_cache_dir()
    folder = base / f"{path.stem}-{path.stat().st_size}"
    if (folder / ".complete").is_file():
        return folder
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=base))
    try:
        tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        model = AutoModelForCausalLM.from_pretrained(
            path.parent, gguf_file=path.name, dtype=torch.float32
        )
        # The weights are plain float32 tensors now; drop the GGUF loading marker so that
        # save_pretrained writes them as an ordinary checkpoint.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        tok.save_pretrained(tmp)
        model.save_pretrained(tmp)
        (tmp / ".complete").write_text(f"converted from {path}\n")
        os.chmod(tmp, 0o755)  # mkdtemp makes it private
        for f in tmp.iterdir():
            os.chmod(f, 0o644)
        try:
            os.replace(tmp, folder)
        except OSError:  # another process finished first
            if not (folder / ".complete").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder
