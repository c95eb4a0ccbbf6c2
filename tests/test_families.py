"""The LMM family specs: every registry table derived from them, options on the adapters."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from baglm_nb.models import registry
from baglm_nb.models.engine import TransformersScorer
from baglm_nb.models.families import (
    ADAPTERS,
    DEFAULT_SYSTEM,
    FAMILIES,
    MODELS,
    SPECS,
    family_of_model_type,
    family_spec,
)
from baglm_nb.models.families.base import NoOptions
from baglm_nb.models.families.internvl import INTERNVL_SYSTEM_MESSAGE, InternVLRemoteAdapter
from baglm_nb.models.families.llava_onevision import LlavaOptions
from baglm_nb.models.families.qwen2_5_vl import QwenOptions
from baglm_nb.models.served_messages import guess_family, served_frames, served_pixels
from baglm_nb.models.testing import make_random_scorer

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_registry_tables_are_derived_from_the_specs():
    assert FAMILIES == tuple(SPECS) == ("internvl", "qwen2_5_vl", "llava_onevision")
    assert registry.FAMILIES is FAMILIES and registry.MODELS is MODELS
    assert {m: s.family for m, s in MODELS.items()} == {
        "internvl2.5-8b": "internvl",
        "internvl3-8b": "internvl",
        "qwen2.5-vl-7b": "qwen2_5_vl",
        "llava-onevision-7b": "llava_onevision",
    }
    for name, spec in SPECS.items():
        assert all(m.family == name for m in spec.models)
        assert registry.model_class(name).__name__ == spec.model_class
    assert family_of_model_type("internvl") == ("internvl", False)
    assert family_of_model_type("internvl_chat") == ("internvl", True)
    assert family_of_model_type("qwen2_5_vl") == ("qwen2_5_vl", False)
    assert family_of_model_type("llava_onevision") == ("llava_onevision", False)
    assert family_of_model_type("llama") is None
    assert set(ADAPTERS) == {*FAMILIES, "internvl-remote"}
    assert ADAPTERS["internvl-remote"] is InternVLRemoteAdapter
    assert family_spec("internvl-remote") is SPECS["internvl"]
    assert dict(DEFAULT_SYSTEM) == {
        "internvl": INTERNVL_SYSTEM_MESSAGE,
        "internvl-remote": INTERNVL_SYSTEM_MESSAGE,
        "qwen2_5_vl": None,
        "llava_onevision": "You are a helpful assistant.",
    }
    with pytest.raises(ValueError, match="unknown family 'nope'"):
        family_spec("nope")
    with pytest.raises(TypeError):
        SPECS["toy"] = SPECS["internvl"]  # type: ignore[index]
    with pytest.raises(KeyError):
        registry.model_class("internvl-remote")


def test_served_names_and_pixels_come_from_the_specs():
    assert guess_family("OpenGVLab/InternVL3-8B-hf") == "internvl"
    assert guess_family("Qwen/Qwen2.5-VL-7B-Instruct") == "qwen2_5_vl"
    assert guess_family("qwen2_5_vl-7b.gguf") == "qwen2_5_vl"
    assert guess_family("llava-hf/llava-onevision-qwen2-7b-ov-hf") == "llava_onevision"
    with pytest.raises(ValueError, match=r"\(internvl, qwen2_5_vl or llava_onevision\)"):
        guess_family("gpt-4o")
    qwen = served_pixels("qwen2_5_vl")
    assert qwen == (128 * 28 * 28, 360 * 420) == (QwenOptions().min_pixels, 151200)
    assert served_pixels("internvl") == served_pixels("internvl-remote") == (448 * 448,) * 2
    assert served_pixels("llava_onevision") == (384 * 384,) * 2
    frames = np.zeros((1, 2, 3, 60, 80), dtype=np.uint8)
    for family in FAMILIES:
        assert served_frames(family, frames, None) is frames
    assert served_frames("qwen2_5_vl", frames, (56 * 56, 56 * 56)).shape == (1, 2, 3, 28, 56)
    assert served_frames("qwen2_5_vl", frames, qwen).shape == (1, 2, 3, 280, 392)
    assert served_frames("internvl", frames, served_pixels("internvl")).shape[-2:] == (448, 448)
    assert served_frames("llava_onevision", frames, (56 * 56,) * 2).shape[-2:] == (56, 56)


@pytest.fixture(scope="module")
def tiny() -> dict[str, TransformersScorer]:
    return {f: make_random_scorer(f, seed=3) for f in FAMILIES}


def test_each_family_builds_from_its_spec(tiny):
    for name, scorer in tiny.items():
        spec = SPECS[name]
        assert type(scorer.adapter) is spec.adapter
        assert type(scorer.model).__name__ == spec.model_class
        assert scorer.system_message == spec.system_message
    assert tiny["internvl"].options == NoOptions()
    assert tiny["llava_onevision"].options == LlavaOptions(False)
    assert tiny["qwen2_5_vl"].options == QwenOptions(fps=2.0, min_pixels=56 * 56, max_pixels=3136)


def test_family_options_reach_the_adapter(tiny):
    """Qwen's fps sets the seconds per temporal grid, LLaVA's flag leaves pixels in [0, 1]; an
    option of another family is refused."""
    frames = torch.randint(
        0, 256, (2, 4, 3, 60, 72), generator=torch.Generator().manual_seed(0), dtype=torch.uint8
    )
    qwen = tiny["qwen2_5_vl"]
    slow = TransformersScorer(
        qwen.model,
        qwen.tokenizer,
        family="qwen2_5_vl",
        model_id="x",
        options=QwenOptions(fps=1.0, min_pixels=3136, max_pixels=3136),
    )
    assert qwen.adapter.pixel_inputs(frames)[0]["second_per_grid_ts"].tolist() == [1.0, 1.0]
    assert slow.adapter.pixel_inputs(frames)[0]["second_per_grid_ts"].tolist() == [2.0, 2.0]
    llava = tiny["llava_onevision"]
    bug = TransformersScorer(
        llava.model,
        llava.tokenizer,
        family="llava_onevision",
        model_id="x",
        options=LlavaOptions(skip_normalization_like_published=True),
    )
    normal = llava.adapter.pixel_inputs(frames)[0]["pixel_values_videos"]
    raw = bug.adapter.pixel_inputs(frames)[0]["pixel_values_videos"]
    assert float(normal.min()) < 0 and 0 <= float(raw.min()) and float(raw.max()) <= 1
    torch.testing.assert_close(raw, (normal + 1) / 2, rtol=0, atol=1e-6)
    with pytest.raises(
        ValueError, match="'qwen2_5_vl' takes QwenOptions options, got LlavaOptions"
    ):
        TransformersScorer(
            qwen.model, qwen.tokenizer, family="qwen2_5_vl", model_id="x", options=LlavaOptions()
        )
