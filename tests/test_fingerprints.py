"""Cache keys follow the weights: fingerprints of random configs, weight folders, served models,
and how caches written before fingerprints are read."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from baglm_nb.models.fingerprints import folder_fingerprint, served_fingerprint, served_metadata
from baglm_nb.models.testing import make_random_scorer
from baglm_nb.stores.keys import ScoreKey
from baglm_nb.stores.scores import ScoreCache, warn_unfingerprinted


def test_the_two_tiny_qwen_variants_get_different_keys():
    two = make_random_scorer("qwen2_5_vl")  # 2 vision layers
    three = make_random_scorer("qwen2_5_vl", vision_layers=3)  # the GGUF export's twin
    assert two.model_id == three.model_id == "random-init/qwen2_5_vl-h64-l2-seed0"
    assert two.fingerprint != three.fingerprint
    assert make_random_scorer("qwen2_5_vl").fingerprint == two.fingerprint  # deterministic
    assert make_random_scorer("qwen2_5_vl", seed=1).fingerprint != two.fingerprint
    keys = [ScoreKey("coin", s.model_id, "v1", weights=s.fingerprint) for s in (two, three)]
    assert keys[0].relpath() != keys[1].relpath()
    assert (
        keys[0].relpath().split("/")[2] == f"random-init__qwen2_5_vl-h64-l2-seed0@{two.fingerprint}"
    )


def weights_folder(path, shapes: dict[str, tuple[int, ...]], config: dict):
    path.mkdir()
    save_file({k: torch.zeros(v) for k, v in shapes.items()}, str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps(config))
    return path


def test_folder_fingerprint_reads_headers_not_weights(tmp_path):
    a = weights_folder(tmp_path / "a", {"w": (2, 3)}, {"depth": 2})
    same = weights_folder(tmp_path / "same", {"w": (2, 3)}, {"depth": 2})
    wider = weights_folder(tmp_path / "wider", {"w": (2, 4)}, {"depth": 2})
    deeper = weights_folder(tmp_path / "deeper", {"w": (2, 3)}, {"depth": 3})
    fp = folder_fingerprint(a)
    assert len(fp) == 16 and fp == folder_fingerprint(same)
    assert len({fp, folder_fingerprint(wider), folder_fingerprint(deeper)}) == 3
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "model.safetensors").write_bytes(b"\xff" * 8 + b"x")
    with pytest.raises(ValueError, match="not a safetensors file"):
        folder_fingerprint(tmp_path / "bad")


def test_served_metadata_and_fingerprint():
    llama = {
        "data": [
            {
                "id": "/m/model.gguf",
                "owned_by": "llamacpp",
                "created": 17,
                "meta": {"n_params": 19, "size": 77},
            }
        ]
    }
    meta = served_metadata(llama, "any-name")  # llama.cpp serves one model under any name
    assert meta == {
        "id": "/m/model.gguf",
        "owned_by": "llamacpp",
        "meta": {"n_params": 19, "size": 77},
    }
    vllm = {
        "data": [
            {"id": "a", "root": "/w/a", "max_model_len": 8192},
            {"id": "b", "root": "/w/b", "max_model_len": 4096},
        ]
    }
    assert served_metadata(vllm, "b") == {"id": "b", "root": "/w/b", "max_model_len": 4096}
    assert served_metadata(vllm, "c") == {} and served_metadata("garbage", "b") == {}
    fp = served_fingerprint("b", served_metadata(vllm, "b"), "labels")
    assert fp != served_fingerprint("b", served_metadata(vllm, "b"), "full-vocab")
    assert fp != served_fingerprint("b", {"root": "/w/other"}, "labels")


def test_old_caches_are_read_with_one_warning_and_never_mixed(tmp_path):
    old = ScoreCache(tmp_path, ScoreKey("coin", "m", "v1"))  # written before fingerprints
    old.write_video("v1", np.full((1, 2), 0.5), steps=["a"])
    with pytest.warns(UserWarning) as seen:
        reopened = ScoreCache.open(old.path)
    assert len(seen) == 1 and "\n" not in str(seen[0].message)
    assert "scores of 'm' without a weights fingerprint" in str(seen[0].message)
    assert reopened.uids() == ["v1"]
    new = ScoreCache(tmp_path, ScoreKey("coin", "m", "v1", weights="0123456789abcdef"))
    assert (
        new.path != old.path
        and new.uids() == []
        and new.path.parent.parent.name == "m@0123456789abcdef"
    )
    with pytest.warns(
        UserWarning,
        match=r"older scores of 'm' without a weights fingerprint are "
        r"not reused; scoring into .*m@0123456789abcdef",
    ):
        warn_unfingerprinted(new)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning for a fingerprinted cache alone
        ScoreCache.open(ScoreCache(tmp_path / "x", new.key).path)
        ScoreCache.open(ScoreCache(tmp_path, ScoreKey("coin", "s", "v1", source="simulated")).path)
    with pytest.raises(ValueError, match="weights must be a hex fingerprint"):
        ScoreKey("coin", "m", "v1", weights="../x")
