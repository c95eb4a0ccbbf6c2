"""Cache keys follow the weights: fingerprints of random configs, weight folders, served models,
and how caches written before fingerprints are read."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from clips import coin_annotations, short_clips
from safetensors.torch import save_file

from baglm_nb.models.fingerprints import (
    MEMO_MIN_BYTES,
    file_sha256,
    folder_fingerprint,
    hub_revision,
    served_fingerprint,
    served_metadata,
    weights_record,
)
from baglm_nb.models.scoring import score_dataset
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


def test_folder_fingerprint_follows_the_content(tmp_path, monkeypatch):
    monkeypatch.setenv("BAGLM_HASH_MEMO", str(tmp_path / "memo.json"))
    a = weights_folder(tmp_path / "a", {"w": (2, 3)}, {"depth": 2})
    same = weights_folder(tmp_path / "same", {"w": (2, 3)}, {"depth": 2})
    wider = weights_folder(tmp_path / "wider", {"w": (2, 4)}, {"depth": 2})
    deeper = weights_folder(tmp_path / "deeper", {"w": (2, 3)}, {"depth": 3})
    fp = folder_fingerprint(a)
    assert len(fp) == 16 and fp == folder_fingerprint(same)
    assert len({fp, folder_fingerprint(wider), folder_fingerprint(deeper)}) == 3
    # the same names, dtypes and shapes (the same safetensors header), other values
    save_file({"w": torch.ones(2, 3)}, str(same / "model.safetensors"))
    assert folder_fingerprint(same) != fp
    # what the loader reads beside the weights counts too: tokenizer, chat template
    save_file({"w": torch.zeros(2, 3)}, str(same / "model.safetensors"))
    assert folder_fingerprint(same) == fp
    (same / "chat_template.jinja").write_text("{{ messages }}")
    assert folder_fingerprint(same) != fp
    (same / "README.md").write_text("a model card")  # not read by the loader
    assert weights_record(same)["files"].keys() == {
        "chat_template.jinja",
        "config.json",
        "model.safetensors",
    }


def test_file_hash_is_computed_once_per_file_version(tmp_path, monkeypatch):
    """The memo answers for a file of the same path, size and mtime without reading it; a
    file saved over in place (other mtime) is read again."""
    memo = tmp_path / "cache" / "memo.json"
    monkeypatch.setenv("BAGLM_HASH_MEMO", str(memo))
    path = tmp_path / "w.bin"
    path.write_bytes(b"\0" * MEMO_MIN_BYTES)
    real = hashlib.sha256(path.read_bytes()).hexdigest()
    assert file_sha256(path) == real
    entries = json.loads(memo.read_text())
    stat = path.stat()
    assert entries == {str(path): {"version": [stat.st_size, stat.st_mtime_ns], "sha256": real}}
    entries[str(path)]["sha256"] = "f" * 64  # not read again: the memo's answer comes back
    memo.write_text(json.dumps(entries))
    assert file_sha256(path) == "f" * 64
    path.write_bytes(b"\1" * MEMO_MIN_BYTES)  # saved over: same size, another mtime
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert file_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest() != real
    small = tmp_path / "config.json"
    small.write_text("{}")
    file_sha256(small)  # small files are not memoised
    assert set(json.loads(memo.read_text())) == {str(path)}
    memo.write_text("{not json")  # a broken memo is recomputed over, never an error
    assert file_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    assert json.loads(memo.read_text())[str(path)]["version"][0] == MEMO_MIN_BYTES


HASH_FILES = """
import json, sys
from baglm_nb.models.fingerprints import file_sha256
print(json.dumps([file_sha256(p) for p in sys.argv[1:]]))
"""


def test_concurrent_writers_leave_a_readable_memo(tmp_path):
    """Two processes hashing files at once: the memo is always whole JSON (the atomic writer),
    and every entry it keeps is right."""
    memo = tmp_path / "memo.json"
    paths = []
    for i in range(16):
        p = tmp_path / f"f{i}.bin"
        p.write_bytes(bytes([i]) * MEMO_MIN_BYTES)
        paths.append(str(p))
    env = {**os.environ, "BAGLM_HASH_MEMO": str(memo)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", HASH_FILES, *paths[k::2]], env=env, stdout=subprocess.PIPE
        )
        for k in (0, 1)
    ]
    results = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    truth = {p: hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in paths}
    assert sorted(sum(results, [])) == sorted(truth.values())
    entries = json.loads(memo.read_text())  # whole JSON
    assert entries and all(entries[p]["sha256"] == truth[p] for p in entries)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp")]


def test_hub_snapshot_revision_is_recorded(tmp_path, monkeypatch):
    monkeypatch.setenv("BAGLM_HASH_MEMO", str(tmp_path / "memo.json"))
    snap = tmp_path / "hub" / "models--org--tiny" / "snapshots"
    snap.mkdir(parents=True)
    a = weights_folder(snap / "0123abcd", {"w": (2, 3)}, {"depth": 2})
    assert hub_revision(a) == "0123abcd" and weights_record(a)["hf_revision"] == "0123abcd"
    b = weights_folder(tmp_path / "plain", {"w": (2, 3)}, {"depth": 2})
    assert hub_revision(b) is None
    assert folder_fingerprint(a) == folder_fingerprint(b)  # the content decides the key


def test_weights_saved_over_in_place_are_scored_again(tmp_path, monkeypatch):
    """A local weights folder scored, then saved over in place with other weights of the same
    shapes (seed 0, then seed 1): the second run scores again into another folder, and
    never reports the first weights' scores as already cached."""
    monkeypatch.setenv("BAGLM_HASH_MEMO", str(tmp_path / "memo.json"))
    videos = short_clips(tmp_path / "videos", ["v1"], 2.2)
    ann = coin_annotations(tmp_path / "ann", ["v1"], ["Boil the water.", "Pour it."], 2.2)
    folder = tmp_path / "tiny-internvl"
    summaries = []
    for seed in (0, 1):
        sc = make_random_scorer("internvl", seed=seed)
        sc.model.save_pretrained(folder)
        if seed == 0:  # the tokenizer stays (the seed-1 model shares it): saved once
            sc.tokenizer.save_pretrained(folder)
        summaries.append(
            score_dataset(
                "coin",
                videos,
                str(folder),
                root=tmp_path / "cache",
                annotations=ann,
                show_progress=False,
            )  # fmt: skip
        )
    first, second = summaries
    assert first["scored"] == ["v1"] and second["scored"] == ["v1"], second
    assert second["already_cached"] == [] and first["weights"] != second["weights"]
    a = ScoreCache.open(first["cache"]).read_video("v1")
    b = ScoreCache.open(second["cache"]).read_video("v1")
    assert np.abs(np.log(a.vsg) - np.log(b.vsg)).max() > 0.1  # other weights, other scores
    record = json.loads((Path(second["cache"]) / "weights.json").read_text())
    assert record["hf_revision"] is None and "model.safetensors" in record["files"]
    assert (
        record["files"]["config.json"]
        == hashlib.sha256((folder / "config.json").read_bytes()).hexdigest()
    )


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
