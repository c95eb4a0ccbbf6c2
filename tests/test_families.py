"""The LMM family specs: every registry table derived from them, options on the adapters."""

from __future__ import annotations

import contextlib
import io
import json

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


#: The family module the recipe test adds: Qwen2.5-VL's architecture under another name, with its
#: own registry row, name fragments and served pixel bounds.
TOY_FAMILY = '''"""Toy-VL: a tiny variant of Qwen2.5-VL, added the documented way."""

from dataclasses import replace

from baglm_nb.models.families import qwen2_5_vl
from baglm_nb.models.families.base import ModelSpec


class ToyAdapter(qwen2_5_vl.Qwen25VLAdapter):
    """Qwen2.5-VL's adapter under the toy family's name."""

    name = "toy_vl"


SPEC = replace(
    qwen2_5_vl.SPEC,
    name="toy_vl",
    adapter=ToyAdapter,
    models=(ModelSpec("toy-vl-1b", "toy/Toy-VL-1B", "toy_vl"),),
    model_types=("toy_vl",),
    served_names=("toy-vl",),
    served_pixels=(56 * 56, 112 * 112),
)
'''

#: What the subprocess reports about the package with the toy family added.
TOY_CHECKS = """
import contextlib, io, json
import numpy as np
from baglm_nb.apps.cli.main import main
from baglm_nb.models import registry
from baglm_nb.models.families import ADAPTERS, DEFAULT_SYSTEM, FAMILIES, MODELS
from baglm_nb.models.families import family_of_model_type, family_spec
from baglm_nb.models.served import ServedScorer
from baglm_nb.models.served_messages import guess_family, served_frames
from baglm_nb.models.testing import make_random_scorer

helps = {}
for verb in ("score", "follow"):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main([verb, "--help"])
    helps[verb] = " ".join(out.getvalue().split())
served = ServedScorer("toy/Toy-VL-1B", client=object())
frames = np.random.default_rng(0).integers(0, 256, (1, 4, 3, 60, 80), dtype=np.uint8)
scorer = make_random_scorer("toy_vl")
result = scorer.score_segments(frames, "make toast", ["slice bread", "toast"])
import baglm_nb
print(json.dumps({
    "path": baglm_nb.__file__,
    "families": FAMILIES,
    "model": [MODELS["toy-vl-1b"].family, registry.model_class("toy_vl").__name__],
    "adapter": ADAPTERS["toy_vl"].__name__,
    "system": DEFAULT_SYSTEM["toy_vl"],
    "model_type": family_of_model_type("toy_vl"),
    "guess": guess_family("toy/Toy-VL-1B"),
    "served": [served.family, served.pixels],
    "sent": served_frames("toy_vl", frames, served.pixels).shape[-2:],
    "tokens": scorer.tokenizer.name_or_path,
    "scored": [result.family, result.vsg.shape, result.progress.shape],
    "preprocess": family_spec("toy_vl").preprocess.__name__,
    "helps": helps,
}))
"""


@contextlib.contextmanager
def imported_from(folder):
    """``import baglm_nb`` gives the copy of the package in ``folder`` for the duration.

    The copy's modules are all its own (none of the installed package's are reused, nor
    changed); afterwards the installed package's modules, ``sys.path``, the warnings filters
    and torch's thread count are as before. Run in this process rather than a fresh one: the
    recipe is about the package's files, and a fresh process would spend most of its time
    importing torch and transformers again."""
    import importlib
    import sys
    import warnings

    def ours(name: str) -> bool:
        return name == "baglm_nb" or name.startswith("baglm_nb.")

    saved = {name: m for name, m in sys.modules.items() if ours(name)}
    threads = torch.get_num_threads()
    for name in saved:
        del sys.modules[name]
    sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    try:
        with warnings.catch_warnings():
            yield
    finally:
        sys.path.remove(str(folder))
        for name in [name for name in sys.modules if ours(name)]:
            del sys.modules[name]
        sys.modules.update(saved)
        importlib.invalidate_caches()
        torch.set_num_threads(threads)


def test_a_new_family_is_one_module_and_its_line_in_specs(tmp_path):
    """The recipe of docs/architecture.md ("LMM family"), followed in a copy of the package:
    one module in ``models/families/`` and its line in ``SPECS`` (with its import), nothing
    else. The registry tables, the ``model_type`` and served-name lookups, the served pixel
    bounds, the tiny model (its tokenizer from the spec's special tokens), scoring, and the
    command line's help strings all take the new family."""
    import shutil
    from pathlib import Path

    import baglm_nb

    package = tmp_path / "baglm_nb"
    # __pycache__ comes along: numba's compiled kernels there are keyed by each source's size
    # and mtime (kept by copytree), so the copy loads them instead of compiling; the two
    # files edited below are read from their new source
    shutil.copytree(Path(baglm_nb.__file__).parent, package)
    families = package / "models" / "families"
    (families / "toy_vl.py").write_text(TOY_FAMILY)
    init = (families / "__init__.py").read_text()
    imports = "from baglm_nb.models.families import internvl, llava_onevision, qwen2_5_vl\n"
    line = "{s.name: s for s in (internvl.SPEC, qwen2_5_vl.SPEC, llava_onevision.SPEC)}"
    assert imports in init and line in init  # the recipe names these two lines
    init = init.replace(imports, imports.replace("qwen2_5_vl", "qwen2_5_vl, toy_vl"))
    init = init.replace(
        line, line.replace("llava_onevision.SPEC", "llava_onevision.SPEC, toy_vl.SPEC")
    )
    (families / "__init__.py").write_text(init)
    out = io.StringIO()
    with imported_from(tmp_path), contextlib.redirect_stdout(out):
        exec(TOY_CHECKS, {"__name__": "toy_checks"})  # noqa: S102 - this module's own text
    got = json.loads(out.getvalue().strip().splitlines()[-1])
    assert got["path"] == str(package / "__init__.py")
    assert got["families"] == [*FAMILIES, "toy_vl"]
    assert got["model"] == ["toy_vl", "Qwen2_5_VLForConditionalGeneration"]
    assert got["adapter"] == "ToyAdapter" and got["system"] is None
    assert got["model_type"] == ["toy_vl", False] and got["guess"] == "toy_vl"
    assert got["served"] == ["toy_vl", [3136, 12544]] and got["sent"] == [56, 84]
    assert got["tokens"] == "offline-qwen-bpe/toy_vl" and got["preprocess"] == "preprocess_qwen25vl"
    assert got["scored"] == ["toy_vl", [1, 3], [1, 2, 10]]
    score, follow = got["helps"]["score"], got["helps"]["follow"]
    assert "toy-vl-1b" in score and "internvl, qwen2_5_vl, llava_onevision or toy_vl" in score
    assert "internvl, qwen2_5_vl, llava_onevision or toy_vl" in follow  # --family


def test_served_frames_are_the_local_preprocessing_resize():
    """A server gets each family's frames at its processor's size, resized as the local scorer
    does: InternVL's tile exactly as :func:`preprocess_internvl` resizes, LLaVA-OneVision's
    frame as :func:`preprocess_llava_onevision` within the rounding to uint8, Qwen2.5-VL's
    640x480 frames at 448x336 (the README's served notes)."""
    from baglm_nb.models.families.internvl import IMAGENET_MEAN, IMAGENET_STD
    from baglm_nb.models.families.llava_onevision import preprocess_llava_onevision
    from baglm_nb.models.preprocess import _normalize

    rng = np.random.default_rng(5)
    frames = rng.integers(0, 256, (1, 2, 3, 48, 64), dtype=np.uint8)
    flat = torch.from_numpy(frames.reshape(2, 3, 48, 64))
    tile = served_frames("internvl", frames, served_pixels("internvl"))
    assert tile.shape == (1, 2, 3, 448, 448) and tile.dtype == np.uint8
    local = family_spec("internvl").preprocess(flat)  # the CPU kernel: within one level
    sent = _normalize(torch.from_numpy(tile[0]).float() / 255, IMAGENET_MEAN, IMAGENET_STD)
    levels = ((sent - local) * torch.tensor(IMAGENET_STD).view(1, 3, 1, 1) * 255).abs()
    assert float(levels.max()) <= 1.0 + 1e-3 and float((levels > 1e-3).float().mean()) < 1e-3
    llava = served_frames("llava_onevision", frames, served_pixels("llava_onevision"))
    assert llava.shape == (1, 2, 3, 384, 384)
    local = (preprocess_llava_onevision(flat) + 1) / 2 * 255
    assert float((torch.from_numpy(llava[0]).float() - local).abs().max()) <= 0.5 + 1e-3
    big = np.zeros((1, 1, 3, 480, 640), dtype=np.uint8)
    assert served_frames("qwen2_5_vl", big, served_pixels("qwen2_5_vl")).shape[-2:] == (336, 448)
