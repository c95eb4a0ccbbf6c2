"""Tiny randomly initialised LMMs of every family, for tests, benchmarks and demos of the mechanics.

:func:`make_random_scorer` builds one as a :class:`~baglm_nb.models.engine.TransformersScorer`
(``random-init:<family>`` in :func:`baglm_nb.models.scoring.make_scorer`). Its outputs always
carry ``label="random-init"`` and must never be presented as a real model's scores.
:func:`random_gguf` writes one as llama.cpp GGUF files, to serve it (the served-scorer tests).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import torch

from baglm_nb.models.engine import RANDOM_INIT, TransformersScorer
from baglm_nb.models.families import FAMILIES, family_spec
from baglm_nb.models.fingerprints import config_fingerprint
from baglm_nb.models.registry import model_class
from baglm_nb.stores.atomic import publish_dir

__all__ = ["make_random_scorer", "random_gguf"]


def _tiny_config(
    family: str,
    vocab: int,
    *,
    hidden_size: int,
    num_layers: int,
    num_heads: int,
    vision_hidden_size: int,
    vision_layers: int,
    image_size: int,
    tokenizer: Any,
) -> Any:
    """The family's tiny config (its spec's ``tiny_config``) with the shared sizes."""
    text = {
        "vocab_size": vocab,
        "hidden_size": hidden_size,
        "intermediate_size": 2 * hidden_size,
        "num_hidden_layers": num_layers,
        "num_attention_heads": num_heads,
        "num_key_value_heads": max(1, num_heads // 2),
        "max_position_embeddings": 32768,
    }
    vis = {"hidden_size": vision_hidden_size, "intermediate_size": 2 * vision_hidden_size}
    vheads = max(1, vision_hidden_size // 16)
    return family_spec(family).tiny_config(tokenizer, text, vis, vision_layers, vheads, image_size)


@cache
def _family_tokenizer(family: str) -> Any:
    """The offline tokenizer of ``family``, loaded once per process and shared by its tiny
    models (scorers only read their tokenizer, and loading one is slow)."""
    from baglm_nb.models.tokenizers import build_tokenizer

    return build_tokenizer(family_spec(family))


def make_random_scorer(
    family: str,
    tokenizer: Any | None = None,
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    vision_hidden_size: int = 32,
    vision_layers: int = 2,
    image_size: int = 56,
    initializer_range: float = 0.2,
    seed: int = 0,
    **scorer_kwargs: Any,
) -> TransformersScorer:
    """A tiny randomly initialised model of ``family`` as a scorer (tests, benchmarks).

    Its scores are meaningless and always labelled ``"random-init"`` (``model_id`` starts with
    ``"random-init/"``; its ``fingerprint`` digests the whole config, vision layers included,
    and the model id, so models that differ only in depth get different cache keys); the mark
    is also written into the model config (``baglm_random_init``), so a saved and reloaded copy
    stays labelled. The vocabulary is
    the tokenizer's (default: the offline Qwen BPE tokenizer of
    :func:`baglm_nb.models.tokenizers.build_tokenizer` with the special tokens and chat template
    of the family's spec, loaded once per process and shared by the family's tiny models).

    Parameters
    ----------
    family
        One of :data:`FAMILIES`.
    image_size
        Vision input side (InternVL, LLaVA-OneVision; a multiple of 28). For Qwen2.5-VL the
        default pixel bounds become ``image_size**2`` (the spec's ``tiny_options``; override
        with ``options=``).
    initializer_range
        Weight init std; larger than transformers' 0.02 so that the first-token distribution is
        far from uniform and score differences are visible in tests.
    seed
        Seed of the weight initialisation.
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; use one of {FAMILIES}")
    if tokenizer is None:
        tokenizer = _family_tokenizer(family)
    cfg = _tiny_config(
        family,
        len(tokenizer),
        hidden_size=hidden_size,
        num_layers=num_layers,
        num_heads=num_heads,
        vision_hidden_size=vision_hidden_size,
        vision_layers=vision_layers,
        image_size=image_size,
        tokenizer=tokenizer,
    )
    cfg.initializer_range = initializer_range
    cfg.get_text_config().initializer_range = initializer_range
    cfg.baglm_random_init = True  # saved with the model: reloaded copies stay "random-init"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = model_class(family)(cfg).eval()
    net._baglm_random_init = True
    if (tiny_options := family_spec(family).tiny_options) is not None:
        scorer_kwargs.setdefault("options", tiny_options(image_size))
    scorer_kwargs.setdefault("label", RANDOM_INIT)
    model_id = f"{RANDOM_INIT}/{family}-h{hidden_size}-l{num_layers}-seed{seed}"
    scorer_kwargs.setdefault("fingerprint", config_fingerprint(cfg, model_id))
    return TransformersScorer(net, tokenizer, family=family, model_id=model_id, **scorer_kwargs)


def random_gguf(
    family: str = "qwen2_5_vl", *, cache_dir: Any = None, **kwargs: Any
) -> tuple[Path, Path]:
    """The tiny model of :func:`make_random_scorer` ``(family, **kwargs)`` as llama.cpp GGUF files.

    Returns ``(model.gguf, mmproj.gguf)`` (float32), for serving it with llama.cpp's server
    (``tests/gguf_server.py``) and comparing with the same weights run locally. Built once with
    :func:`baglm_nb.models.gguf.export_gguf` (slow) into a folder under
    :func:`~baglm_nb.models.gguf.model_cache_dir` named by a digest of the arguments, the
    torch / transformers versions and the conversion script, then reused; the folder is renamed
    into place when complete. Only Qwen2.5-VL is supported: it needs ``vision_layers >= 3``
    (default here), because the converter maps the projector's ``mlp.2`` by vision block index.
    """
    import hashlib
    import json
    import shutil
    import tempfile

    import transformers

    from baglm_nb.models.families.qwen2_5_vl import CLIP_MEAN, CLIP_STD
    from baglm_nb.models.gguf import converter_script, export_gguf, model_cache_dir

    if family != "qwen2_5_vl":
        raise ValueError(f"random_gguf supports family 'qwen2_5_vl' only, got {family!r}")
    kwargs.setdefault("vision_layers", 3)
    script = converter_script()
    ident = json.dumps(
        [
            family,
            sorted(kwargs.items()),
            torch.__version__,
            transformers.__version__,
            hashlib.sha256(script.read_bytes()).hexdigest(),
        ],
        default=str,
    )
    base = Path(cache_dir) if cache_dir is not None else model_cache_dir()
    folder = base / f"random-init-{family}-gguf-{hashlib.sha256(ident.encode()).hexdigest()[:16]}"
    paths = (folder / "model.gguf", folder / "mmproj.gguf")
    if (folder / ".complete").is_file():
        return paths
    base.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=base))
    try:
        scorer = make_random_scorer(family, **kwargs)
        hf = tmp / "hf"
        scorer.model.save_pretrained(hf)
        scorer.tokenizer.save_pretrained(hf)
        vc = scorer.model.config.vision_config
        (hf / "preprocessor_config.json").write_text(
            json.dumps(
                {
                    "image_mean": list(CLIP_MEAN),
                    "image_std": list(CLIP_STD),
                    "patch_size": vc.patch_size,
                    "merge_size": vc.spatial_merge_size,
                    "temporal_patch_size": vc.temporal_patch_size,
                }
            )
        )
        export_gguf(hf, tmp, mmproj=True)
        shutil.rmtree(hf)
        (tmp / ".complete").write_text(ident + "\n")
        publish_dir(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return paths
