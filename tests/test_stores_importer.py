"""baglm_nb.stores.importer: the authors' published .pt files into the caches."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from toys import random_scores as _scores

from baglm_nb.inputs.datasets import load_dataset
from baglm_nb.stores.dependencies import DependencyCache
from baglm_nb.stores.importer import import_reference_results
from baglm_nb.stores.keys import DependencyKey, ScoreKey
from baglm_nb.stores.scores import ScoreCache

MODEL = "internvl2.5-8b"
LLM = "llama-3.3-70b-instruct"


class _NotATensor:
    pass


@pytest.fixture(scope="module")
def htstep_videos():
    by_uid = {v.uid: v for v in load_dataset("htstep")}
    # two videos of one group (one uid starts with "-"), one of another, one without files
    return [by_uid[u] for u in ("-25-1nbOki0", "MtIGwrbKKDY", "0BmL-FsZT1I", "jQLi1tcqLBY")]


def _publish(src: Path, videos, *, layout: str, seed: int = 0) -> dict:
    """Write published-layout .pt files for ``videos``; return the per-second originals."""
    rng = np.random.default_rng(seed)
    sub = layout == "model"
    dirs = {
        "vsg": src / "vsg" / (MODEL if sub else ""),
        "prog": src / "prog" / (MODEL if sub else ""),
        "prereq": src / "prereq" / (LLM if sub else ""),
    }
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    out: dict = {"vsg": {}, "prog": {}, "prereq": {}}
    for v in videos:
        s, k = v.num_rows() // 2, v.num_steps
        vsg, prog = _scores(rng, s, k)
        vsg_t = torch.from_numpy(vsg).float().repeat_interleave(2, dim=0)
        prog_t = torch.from_numpy(prog).float().repeat_interleave(2, dim=0)
        torch.save(vsg_t, dirs["vsg"] / f"{v.uid}.pt")
        torch.save(prog_t, dirs["prog"] / f"{v.uid}.pt")
        out["vsg"][v.uid], out["prog"][v.uid] = vsg_t.double().numpy(), prog_t.double().numpy()
        if v.group not in out["prereq"]:
            m = torch.from_numpy((rng.random((k, k)) > 0.5) * 1.0).float()
            m[0, -1] = 0.375
            torch.save(m, dirs["prereq"] / f"{v.group}.pt")
            out["prereq"][v.group] = m.double().numpy()
    return out


@pytest.mark.parametrize("layout", ["model", "flat"])
def test_import_reference_results(tmp_path: Path, htstep_videos, layout: str) -> None:
    have = htstep_videos[:3]
    original = _publish(tmp_path / "src", have, layout=layout)
    summary = import_reference_results(
        tmp_path / "src", "htstep", MODEL, root=tmp_path / "cache", videos=htstep_videos,
        show_progress=False,
    )  # fmt: skip
    assert summary["videos_imported"] == 3 and summary["videos_skipped"] == 1
    assert summary["groups_imported"] == 2

    scores = ScoreCache(
        tmp_path / "cache", ScoreKey("htstep", MODEL, "published", 2, 2.0, source="imported")
    )
    assert str(scores.path) == summary["scores_path"]
    assert scores.uids() == sorted(v.uid for v in have)
    for v in have:
        vsg_t, prog_t = scores.per_second(v.uid)
        assert vsg_t.shape == (v.num_rows(), v.num_steps + 1)
        np.testing.assert_array_equal(vsg_t, original["vsg"][v.uid])
        np.testing.assert_array_equal(prog_t, original["prog"][v.uid])
        got = scores.read_video(v.uid)
        assert got.steps == v.steps and got.source == "imported"
        assert got.num_segments == v.num_rows() // 2

    deps = DependencyCache(tmp_path / "cache", DependencyKey("htstep", LLM, "published"))
    assert str(deps.path) == summary["dependencies_path"]
    assert deps.groups() == sorted(original["prereq"])
    for group, m in original["prereq"].items():
        np.testing.assert_array_equal(deps.read(group), m)
        assert tuple(deps.steps(group)) == next(v.steps for v in have if v.group == group)


def _import(tmp_path: Path, videos) -> dict:
    return import_reference_results(
        tmp_path / "src", "htstep", MODEL, root=tmp_path / "cache", videos=videos,
        show_progress=False,
    )  # fmt: skip


@pytest.mark.parametrize("case", ["wrong_t", "wrong_k", "not_repeated", "pickled_object", "dict"])
def test_import_rejects_bad_vsg_files(tmp_path: Path, htstep_videos, case: str) -> None:
    video = htstep_videos[2]  # 0BmL-FsZT1I: T = 56, K = 5
    _publish(tmp_path / "src", [video], layout="model")
    path = tmp_path / "src" / "vsg" / MODEL / f"{video.uid}.pt"
    t, k = video.num_rows(), video.num_steps
    if case == "wrong_t":
        torch.save(torch.rand(t - 2, k + 1), path)
        match = r"expected shape \(56, 6\), got \(54, 6\)"
    elif case == "wrong_k":
        torch.save(torch.rand(t // 2, k + 2).repeat_interleave(2, dim=0), path)
        match = r"expected shape \(56, 6\), got \(56, 7\)"
    elif case == "not_repeated":
        torch.save(torch.rand(t, k + 1), path)
        match = "rows of segment 0 differ"
    elif case == "pickled_object":
        with open(path, "wb") as f:
            pickle.dump(_NotATensor(), f, protocol=2)
        match = "cannot load as a single tensor"
    else:
        torch.save({"scores": torch.rand(t, k + 1)}, path)
        match = "expected a single tensor, got dict"
    with pytest.raises(ValueError, match=match) as info:
        _import(tmp_path, [video])
    assert str(path) in str(info.value) and f"{video.uid}.pt" in str(info.value)


def test_import_rejects_bad_progress_and_prereq(tmp_path: Path, htstep_videos) -> None:
    video = htstep_videos[2]
    _publish(tmp_path / "src", [video], layout="flat")
    prog = tmp_path / "src" / "prog" / f"{video.uid}.pt"
    torch.save(torch.rand(video.num_rows(), video.num_steps, 9), prog)
    with pytest.raises(ValueError, match=r"expected shape \(56, 5, 10\)") as info:
        _import(tmp_path, [video])
    assert str(prog) in str(info.value)

    prog.unlink()
    with pytest.raises(ValueError, match="progress file missing") as info:
        _import(tmp_path, [video])
    assert f"{video.uid}.pt" in str(info.value)

    _publish(tmp_path / "src", [video], layout="flat")
    prereq = tmp_path / "src" / "prereq" / f"{video.group}.pt"
    torch.save(torch.rand(4, 4), prereq)
    with pytest.raises(ValueError, match=r"expected shape \(5, 5\), got \(4, 4\)") as info:
        _import(tmp_path, [video])
    assert str(prereq) in str(info.value)

    torch.save(torch.full((5, 5), 2.0), prereq)
    with pytest.raises(ValueError, match="outside") as info:
        _import(tmp_path, [video])
    assert str(prereq) in str(info.value)

    prereq.unlink()
    with pytest.raises(ValueError, match="prerequisite file missing") as info:
        _import(tmp_path, [video])
    assert "Make Milanesa_B.pt" in str(info.value)
