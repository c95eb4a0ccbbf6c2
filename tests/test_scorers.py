"""LMM scorers on tiny randomly initialised models (no weights), with the real Qwen BPE tokenizer.

All outputs here come from random models and are labelled "random-init".
"""

from __future__ import annotations

import inspect
import json
import warnings

import numpy as np
import pytest
import torch

from baglm_nb.models.engine import RANDOM_INIT, Scorer, ScoreResult, TransformersScorer
from baglm_nb.models.prompts import PROMPTS, format_choices
from baglm_nb.models.registry import FAMILIES, MODELS, WeightsNotFoundError, load_scorer
from baglm_nb.models.testing import make_random_scorer

GOAL = "Make Omelette"
STEPS = ["crack eggs", "whisk eggs", "pour into pan"]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def scorers() -> dict[str, TransformersScorer]:
    # each family's tokenizer is the process's one (make_random_scorer's default, shared with
    # the other modules' tiny models: loading a 151k-token tokenizer costs about a CPU-second);
    # the tests only read it
    return {f: make_random_scorer(f, seed=1) for f in FAMILIES}


@pytest.fixture(scope="module")
def frames() -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    return torch.randint(0, 256, (3, 4, 3, 60, 72), generator=g, dtype=torch.uint8)


@pytest.fixture(scope="module")
def shared_results(scorers, frames) -> dict[str, ScoreResult]:
    return {f: s.score_segments(frames, GOAL, STEPS, next_step=True) for f, s in scorers.items()}


def _close(a: np.ndarray, b: np.ndarray, tol: float) -> None:
    """Raw full-vocabulary probabilities are ~1e-5 here: compare relatively and renormalised."""
    np.testing.assert_allclose(a, b, rtol=tol, atol=0)
    np.testing.assert_allclose(
        a / a.sum(-1, keepdims=True), b / b.sum(-1, keepdims=True), rtol=0, atol=tol
    )


# --------------------------------------------------------------------------------------------
# shapes, probabilities, labels


@pytest.mark.parametrize("family", FAMILIES)
def test_shapes_probabilities_and_label(family, shared_results, scorers):
    r = shared_results[family]
    s, k = 3, len(STEPS)
    assert isinstance(scorers[family], Scorer)
    assert r.vsg.shape == (s, k + 1) and r.progress.shape == (s, k, 10)
    assert r.next_step.shape == (s, k + 1)
    for arr in (r.vsg, r.progress, r.next_step):
        assert arr.dtype == np.float64
        assert np.all(arr >= 0) and np.all(arr <= 1)
        assert np.all(arr.sum(-1) <= 1 + 1e-12)
    assert r.label == RANDOM_INIT and r.is_random
    assert r.model_id.startswith("random-init/" + family)
    assert r.family == family and r.labels == ("A", "B", "C", "D")
    assert r.prompt_versions == {"vsg": "vsg-v1", "prog": "prog-v1", "next": "next-v1"}
    assert not r.renormalised
    # the scores depend on the segment (the frames reach the model)
    assert np.abs(np.diff(r.vsg / r.vsg.sum(-1, keepdims=True), axis=0)).max() > 1e-4


def test_renormalise(scorers, frames):
    # the raw scores of the same batch (a float32 model's outputs shift by ~1e-7 with the batch)
    sc = scorers["internvl"]
    r = sc.score_segments(frames[:2], GOAL, STEPS, next_step=True, renormalise=True)
    raw = sc.score_segments(frames[:2], GOAL, STEPS, next_step=True)
    assert r.renormalised and not raw.renormalised
    np.testing.assert_allclose(r.vsg.sum(-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(r.progress.sum(-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(r.next_step.sum(-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(r.vsg, raw.vsg / raw.vsg.sum(-1, keepdims=True), atol=1e-12)
    np.testing.assert_allclose(
        r.progress, raw.progress / raw.progress.sum(-1, keepdims=True), atol=1e-12
    )


# --------------------------------------------------------------------------------------------
# shared prefix == naive full passes; batch invariance


@pytest.mark.parametrize("family", FAMILIES)
def test_shared_prefix_equals_naive(family, scorers, frames, shared_results):
    sc = scorers[family]
    sc.shared_prefix = False
    try:
        naive = sc.score_segments(frames, GOAL, STEPS, next_step=True)
    finally:
        sc.shared_prefix = True
    shared = shared_results[family]
    for a, b in ((shared.vsg, naive.vsg), (shared.progress, naive.progress)):
        _close(a, b, 1e-4)
    _close(shared.next_step, naive.next_step, 1e-4)
    # both report the seconds of each phase: the shared encoding + prefix, then each kind
    assert set(shared.timings) == {"shared", "vsg", "prog", "next"}
    assert set(naive.timings) == {"shared", "vsg", "prog", "next"}
    assert all(t > 0 for t in shared.timings.values())


@pytest.mark.parametrize("family", ["qwen2_5_vl", "internvl"])
def test_batch_invariance_and_suffix_chunks(family, scorers, frames, shared_results):
    sc = scorers[family]
    old = sc.segment_batch_size, sc.suffix_batch_size
    sc.segment_batch_size, sc.suffix_batch_size = 1, 2  # one segment at a time, 2 rows per pass
    try:
        one = sc.score_segments(frames, GOAL, STEPS, next_step=True)
    finally:
        sc.segment_batch_size, sc.suffix_batch_size = old
    full = shared_results[family]
    _close(one.vsg, full.vsg, 1e-5)
    _close(one.progress, full.progress, 1e-5)
    _close(one.next_step, full.next_step, 1e-5)


# --------------------------------------------------------------------------------------------
# prompt options


def test_binary_prompt(scorers, frames):
    sc = scorers["qwen2_5_vl"]
    r = sc.score_segments(frames[:2], GOAL, STEPS, vsg_prompt="binary", progress=False)
    assert r.vsg.shape == (2, len(STEPS) + 1) and r.progress is None and r.next_step is None
    np.testing.assert_allclose(r.vsg[:, -1], 1 - r.vsg[:, :-1].max(-1))
    assert r.prompt_versions == {"vsg": "vsg-bin-v1"}
    rn = sc.score_segments(
        frames[:2], GOAL, STEPS, vsg_prompt="binary", progress=False, renormalise=True
    )
    assert np.all((rn.vsg > 0) & (rn.vsg < 1))
    sc.shared_prefix = False
    try:
        naive = sc.score_segments(frames[:2], GOAL, STEPS, vsg_prompt="binary", progress=False)
    finally:
        sc.shared_prefix = True
    np.testing.assert_allclose(r.vsg[:, :-1], naive.vsg[:, :-1], rtol=1e-4)
    with pytest.raises(ValueError, match="vsg_prompt"):
        sc.score_segments(frames[:1], GOAL, STEPS, vsg_prompt="open")


def test_progress_only_and_nothing(scorers, frames):
    sc = scorers["llava_onevision"]
    r = sc.score_segments(frames[:1], GOAL, STEPS, prompt=None)
    assert r.vsg is None and r.progress.shape == (1, 3, 10)
    with pytest.raises(ValueError, match="nothing to score"):
        sc.score_segments(frames[:1], GOAL, STEPS, prompt=None, progress=False)
    with pytest.raises(ValueError, match="uint8"):
        sc.score_segments(frames.float(), GOAL, STEPS)


@pytest.mark.parametrize("family", FAMILIES)
def test_question_text_verbatim_and_published_style(family, scorers):
    sc = scorers[family]
    question = PROMPTS["vsg"].format(goal=GOAL, choices=format_choices(STEPS, list("ABCD")))
    info = {"frames": 4, "n_tokens": 8}
    text = sc.prompt_text(question, info)
    assert question in text and text.endswith(question + "<|im_end|>\n<|im_start|>assistant\n")
    if family == "internvl":
        assert "Frame1: <img>" in text and "</img>\nFrame2: <img>" in text
        assert "</img>\nYou are watching" in text
        assert text.startswith("<|im_start|>system\n你是书生·万象")
    if family == "qwen2_5_vl":
        assert "<|vision_start|>" + "<|video_pad|>" * 8 + "<|vision_end|>" + question in text
        assert text.startswith("<|im_start|>system\nYou are a helpful assistant.<|im_end|>")
    if family == "llava_onevision":
        assert "<|im_start|>user\n" + "<video>" * 17 + "\n" + question in text
    # the published strings (§8.1, §8.3) equal the chat-template rendering here
    sc.prompt_style = "published"
    try:
        assert sc.prompt_text(question, info) == text
    finally:
        sc.prompt_style = "chat"


def test_labels_beyond_z_in_scores(scorers, frames):
    sc = scorers["qwen2_5_vl"]
    steps = [f"step number {i}" for i in range(30)]
    r = sc.score_segments(frames[:1], GOAL, steps, progress=False)
    assert r.vsg.shape == (1, 31)
    assert r.labels[26:] == ("AA", "AB", "AC", "AD", "AE")


def test_repetition_penalty_changes_scores(scorers, frames):
    sc = scorers["qwen2_5_vl"]
    base = sc.score_segments(frames[:1], GOAL, STEPS, progress=False)
    sc.repetition_penalty = 1.05
    try:
        pen = sc.score_segments(frames[:1], GOAL, STEPS, progress=False)
        sc.shared_prefix = False
        pen_naive = sc.score_segments(frames[:1], GOAL, STEPS, progress=False)
    finally:
        sc.repetition_penalty, sc.shared_prefix = None, True
    assert not np.allclose(base.vsg, pen.vsg, rtol=1e-6)
    _close(pen.vsg, pen_naive.vsg, 1e-4)


# --------------------------------------------------------------------------------------------
# labels of random models, loading, weights


def test_random_model_cannot_be_labelled_pretrained(scorers):
    sc = scorers["internvl"]
    with pytest.raises(ValueError, match="random-init"):
        TransformersScorer(
            sc.model, sc.tokenizer, family="internvl", model_id="x", label="pretrained"
        )
    again = TransformersScorer(sc.model, sc.tokenizer, family="internvl", model_id="x")
    assert again.label == RANDOM_INIT


@pytest.mark.parametrize("family", FAMILIES)
def test_vision_token_must_match_the_model(family, scorers):
    """A tokenizer whose vision token is not the model's vision id is refused at load time."""
    sc = scorers[family]
    field = sc.adapter.vision_id_field
    right = getattr(sc.model.config, field)
    setattr(sc.model.config, field, right + 1)
    try:
        with pytest.raises(ValueError, match=rf"is token {right} but .*config\.{field}"):
            TransformersScorer(sc.model, sc.tokenizer, family=family, model_id="x")
    finally:
        setattr(sc.model.config, field, right)
    assert (
        TransformersScorer(sc.model, sc.tokenizer, family=family, model_id="x").adapter.vision_id
        == right
    )


def test_registry():
    assert MODELS["internvl3-8b"].hf_id == "OpenGVLab/InternVL3-8B-hf"
    assert MODELS["internvl2.5-8b"].remote_code
    assert {s.family for s in MODELS.values()} == set(FAMILIES)
    assert set(MODELS) == {"internvl2.5-8b", "internvl3-8b", "qwen2.5-vl-7b", "llava-onevision-7b"}


def test_missing_weights_clear_error(tmp_path):
    with pytest.raises(WeightsNotFoundError, match=r"hf download Qwen/Qwen2.5-VL-7B-Instruct"):
        load_scorer("qwen2.5-vl-7b", cache_dir=str(tmp_path))
    empty = tmp_path / "empty_model"
    empty.mkdir()
    (empty / "config.json").write_text("{}")
    with pytest.raises(WeightsNotFoundError, match="no weight files"):
        load_scorer(str(empty))


def test_trust_remote_code_off_by_default_and_warns(tmp_path):
    assert inspect.signature(load_scorer).parameters["trust_remote_code"].default is False
    with pytest.warns(UserWarning, match="trust_remote_code=True"):
        with pytest.raises(WeightsNotFoundError):
            load_scorer("internvl2.5-8b", trust_remote_code=True, cache_dir=str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(WeightsNotFoundError):
            load_scorer("internvl2.5-8b", cache_dir=str(tmp_path))
    remote = tmp_path / "InternVL2_5-8B"
    remote.mkdir()
    (remote / "config.json").write_text(json.dumps({"model_type": "internvl_chat"}))
    (remote / "model.safetensors").write_bytes(b"")
    with pytest.raises(ValueError, match="trust_remote_code=True"):
        load_scorer(str(remote))


def test_load_scorer_from_local_folder(tmp_path, scorers):
    """A saved tiny model loads back through load_scorer, still labelled random-init."""
    sc = scorers["llava_onevision"]
    folder = tmp_path / "tiny-llava"
    sc.model.save_pretrained(folder)
    sc.tokenizer.save_pretrained(folder)
    loaded = load_scorer(str(folder), device="cpu")
    assert loaded.family == "llava_onevision" and loaded.dtype == torch.float32
    assert loaded.model.config._attn_implementation == "sdpa"
    assert loaded.model_id == str(folder)
    assert loaded.label == RANDOM_INIT  # the mark travels in config.json
    frames = torch.randint(0, 256, (1, 4, 3, 56, 56), dtype=torch.uint8)
    a = sc.score_segments(frames, GOAL, STEPS, progress=False)
    b = loaded.score_segments(frames, GOAL, STEPS, progress=False)
    _close(a.vsg, b.vsg, 1e-5)
    assert inspect.signature(make_random_scorer).parameters["seed"].default == 0
