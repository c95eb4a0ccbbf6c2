"""GGUF models: to transformers folders and back, converted once and cached.

Loading a GGUF file through transformers dequantises the weights and rebuilds the tokenizer from
the GGUF metadata, which takes tens of seconds on a small CPU; :func:`convert_gguf` does it once
into a folder under :func:`model_cache_dir`, which then loads in about a second
(:func:`baglm_nb.models.llm_local.load_smollm2`).

The other way, :func:`export_gguf` writes a transformers folder as GGUF files for llama.cpp (the
model and, for a vision-language model, its ``mmproj`` projector) with llama.cpp's own
``convert_hf_to_gguf.py`` and the ``gguf-py`` of the same llama.cpp release, which ``make setup``
extracts from the ``xllamacpp`` source distribution into ``.venv/share/llama.cpp-convert/``
(:func:`converter_script`; MIT).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from baglm_nb.models.fingerprints import file_sha256
from baglm_nb.stores.atomic import publish_dir

__all__ = ["convert_gguf", "converter_script", "export_gguf", "model_cache_dir"]

CONVERTER_DIR = "llama.cpp-convert"
"""Folder under ``<venv>/share`` holding llama.cpp's conversion script (``make setup``)."""


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
    never sees a half-written one; the folder name holds the file's stem and the start of its
    content's SHA-256 (:func:`~baglm_nb.models.fingerprints.file_sha256`, computed once per file
    version), so a file replaced at the same path is converted again.
    """
    import shutil
    import tempfile

    path = Path(path)
    base = Path(cache_dir) if cache_dir is not None else model_cache_dir()
    folder = base / f"{path.stem}-{file_sha256(path)[:16]}"
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
        for f in tmp.iterdir():
            os.chmod(f, 0o644)
        publish_dir(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def converter_script() -> Path:
    """llama.cpp's ``convert_hf_to_gguf.py`` (``$BAGLM_LLAMA_CONVERT``, else the copy ``make
    setup`` put in ``<venv>/share/llama.cpp-convert/``); ``FileNotFoundError`` naming the fix."""
    env = os.environ.get("BAGLM_LLAMA_CONVERT")
    path = (
        Path(env) if env else Path(sys.prefix) / "share" / CONVERTER_DIR / "convert_hf_to_gguf.py"
    )
    if not path.is_file():
        raise FileNotFoundError(
            f"llama.cpp's convert_hf_to_gguf.py is not at {path}: run `make setup` (it extracts "
            "the script and its gguf-py from the xllamacpp source distribution), or set "
            "BAGLM_LLAMA_CONVERT to a convert_hf_to_gguf.py of the llama.cpp release you serve with"
        )
    return path


_EXPORT = """
import sys
conv, folder, model, proj, mmproj = sys.argv[1:6]
sys.path.insert(0, conv)
import convert_hf_to_gguf as c
jobs = [(model, [])] + ([(proj, ["--mmproj"])] if mmproj == "1" else [])
for out, extra in jobs:
    sys.argv = ["convert_hf_to_gguf.py", folder, "--outtype", "f32", "--outfile", out, *extra]
    c.main()
"""


def export_gguf(
    folder: str | os.PathLike, out_dir: str | os.PathLike, *, mmproj: bool = False
) -> tuple[Path, Path | None]:
    """A transformers folder as float32 GGUF files: ``(model.gguf, mmproj.gguf or None)``.

    Runs :func:`converter_script` in one subprocess (both files); the float32 weights keep the
    served model's logprobs within float rounding of the transformers model's. A vision model's
    folder needs a ``preprocessor_config.json`` with ``image_mean`` / ``image_std``.
    """
    script = converter_script()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model, proj = out_dir / "model.gguf", out_dir / "mmproj.gguf"
    cmd = [
        sys.executable,
        "-c",
        _EXPORT,
        str(script.parent),
        str(folder),
        str(model),
        str(proj),
        "1" if mmproj else "0",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"convert_hf_to_gguf.py failed on {folder}:\n{done.stderr[-3000:]}")
    return model, (proj if mmproj else None)
