"""baglm_nb.stores.importer: the authors' published .pt files into the caches."""

from __future__ import annotations

import pickle
import re
import shutil
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
        tmp_path / "src",
        "htstep",
        MODEL,
        root=tmp_path / "cache",
        videos=htstep_videos,
        show_progress=False,
    )
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


def _import(tmp_path: Path, videos, lines: list | None = None) -> dict:
    return import_reference_results(
        tmp_path / "src",
        "htstep",
        MODEL,
        root=tmp_path / "cache",
        videos=videos,
        show_progress=False,
        log=(lines if lines is not None else []).append,
    )


def _scores_cache(tmp_path: Path) -> ScoreCache:
    key = ScoreKey("htstep", MODEL, "published", 2, 2.0, source="imported")
    return ScoreCache(tmp_path / "cache", key)


def _refused(tmp_path: Path, video, path: Path, match: str) -> str:
    """Import ``video``; check that ``path`` alone is refused, with a line matching ``match``."""
    lines: list[str] = []
    summary = _import(tmp_path, [video], lines)
    assert summary["files_refused"] == 1 and summary["videos_refused"] == 1
    assert summary["videos_imported"] == 0 and video.uid not in _scores_cache(tmp_path).uids()
    (line,) = summary["refused"]
    assert line.startswith(f"{path}: ") and re.search(match, line), line
    assert f"refused: {line}" in lines and "\n" not in line
    return line


VIDEO = 2  # 0BmL-FsZT1I: T = 56, K = 5, group "Make Milanesa_B"


@pytest.mark.parametrize(
    ("case", "match"),
    [
        ("wrong_k", r"shape \(56, 7\) disagrees with the annotation of video '0BmL-FsZT1I' \(K=5"),
        ("not_repeated", "row 1 differs from row 0, the first of its segment 0"),
        ("pickled_object", "cannot load as a single tensor"),
        ("dict", "expected a single tensor, got dict"),
        ("integer", "expected a float tensor, got dtype torch.int64"),
        ("nan", r"row 7, column 3: value nan \(NaN or inf\)"),
        ("inf", r"row 9, column 0: value inf \(NaN or inf\)"),
        ("negative", r"row 4, column 2: value -0.5 is outside \[0, 1\]"),
        ("row_sum", r"row 10: the K\+1 option probabilities sum to 3 > 1 \+ 0.001"),
    ],
)
def test_import_refuses_impossible_vsg_files(tmp_path: Path, htstep_videos, case, match) -> None:
    video = htstep_videos[VIDEO]
    original = _publish(tmp_path / "src", [video], layout="model")
    path = tmp_path / "src" / "vsg" / MODEL / f"{video.uid}.pt"
    t, k = video.num_rows(), video.num_steps
    vsg = torch.from_numpy(original["vsg"][video.uid]).float()
    if case == "wrong_k":
        torch.save(torch.rand(t // 2, k + 2).repeat_interleave(2, dim=0) / 10, path)
    elif case == "not_repeated":
        torch.save(torch.rand(t, k + 1) / 10, path)
    elif case == "pickled_object":
        with open(path, "wb") as f:
            pickle.dump(_NotATensor(), f, protocol=2)
    elif case == "dict":
        torch.save({"scores": vsg}, path)
    elif case == "integer":
        torch.save(torch.zeros(t, k + 1, dtype=torch.int64), path)
    else:
        row, col, value = {
            "nan": (7, 3, float("nan")),
            "inf": (9, 0, float("inf")),
            "negative": (4, 2, -0.5),
            "row_sum": (10, 0, 1.0),
        }[case]
        vsg[row, col] = value
        if case == "row_sum":
            vsg[10:12] = 0.5  # every option at 0.5: the 6 sum to 3
        torch.save(vsg, path)
    _refused(tmp_path, video, path, match)


@pytest.mark.parametrize(
    ("case", "match"),
    [
        ("too_large", r"row 6, step 1, digit 4: value 3 is outside \[0, 1\] by more than 1e-05"),
        ("digits_sum", r"row 12, step 3: the 10 digit probabilities sum to 2 > 1 \+ 0.001"),
        ("nan", r"row 0, step 0, digit 9: value nan"),
        ("wrong_shape", r"shape \(56, 5, 9\) disagrees with the annotation"),
    ],
)
def test_import_refuses_impossible_progress_files(tmp_path, htstep_videos, case, match) -> None:
    video = htstep_videos[VIDEO]
    original = _publish(tmp_path / "src", [video], layout="flat")
    path = tmp_path / "src" / "prog" / f"{video.uid}.pt"
    prog = torch.from_numpy(original["prog"][video.uid]).float()
    if case == "too_large":
        prog[6:8, 1, 4] = 3.0  # a file of 3.0s moves R@1; refused, not imported
    elif case == "digits_sum":
        prog[12:14, 3] = 0.2
    elif case == "nan":
        prog[0, 0, 9] = float("nan")
    else:
        prog = prog[..., :9]
    torch.save(prog, path)
    _refused(tmp_path, video, path, match)


@pytest.mark.parametrize(
    ("case", "match"),
    [
        ("too_large", r"row 1, column 3: value 2 is outside \[0, 1\]"),
        ("inf", r"row 0, column 0: value -inf"),
        ("wrong_k", r"shape \(4, 4\) disagrees with the annotation of group 'Make Milanesa_B'"),
        ("missing", "prerequisite file missing for group 'Make Milanesa_B'"),
    ],
)
def test_import_refuses_impossible_prerequisite_files(tmp_path, htstep_videos, case, match):
    video = htstep_videos[VIDEO]
    _publish(tmp_path / "src", [video], layout="flat")
    path = tmp_path / "src" / "prereq" / f"{video.group}.pt"
    m = torch.zeros(5, 5)
    if case == "too_large":
        m[1, 3] = 2.0
    elif case == "inf":
        m[0, 0] = -float("inf")
    elif case == "wrong_k":
        m = torch.zeros(4, 4)
    if case == "missing":
        path.unlink()
        path = tmp_path / "src" / "prereq" / LLM / f"{video.group}.pt"
    else:
        torch.save(m, path)
    _refused(tmp_path, video, path, match)


def test_import_refuses_a_missing_progress_file(tmp_path: Path, htstep_videos) -> None:
    video = htstep_videos[VIDEO]
    _publish(tmp_path / "src", [video], layout="flat")
    (tmp_path / "src" / "prog" / f"{video.uid}.pt").unlink()
    vsg = tmp_path / "src" / "vsg" / f"{video.uid}.pt"
    _refused(tmp_path, video, vsg, "progress file missing for video '0BmL-FsZT1I'")


def test_import_accepts_what_the_published_code_runs_on(tmp_path, htstep_videos) -> None:
    # T two rows longer (video 0) and one row shorter (video 1), probabilities a hair outside
    # [0, 1], float64 tensors: all imported, each with a one-line warning naming the file.
    have = htstep_videos[:3]
    original = _publish(tmp_path / "src", have, layout="model")
    vsg_dir, prog_dir = tmp_path / "src" / "vsg" / MODEL, tmp_path / "src" / "prog" / MODEL
    rows = {}
    for v, extra in ((have[0], 2), (have[1], -1)):
        t = v.num_rows() + extra
        vsg = torch.from_numpy(original["vsg"][v.uid]).float()
        prog = torch.from_numpy(original["prog"][v.uid]).float()
        if extra > 0:
            vsg, prog = torch.cat([vsg, vsg[-2:]]), torch.cat([prog, prog[-2:]])
        vsg, prog = vsg[:t], prog[:t]
        torch.save(vsg, vsg_dir / f"{v.uid}.pt")
        torch.save(prog, prog_dir / f"{v.uid}.pt")
        rows[v.uid] = (vsg.double().numpy(), prog.double().numpy())
    v2 = have[2]
    vsg = torch.from_numpy(original["vsg"][v2.uid]).double()
    vsg[2:4, 1] = -1e-9
    torch.save(vsg, vsg_dir / f"{v2.uid}.pt")  # float64, and a hair below 0
    prereq = tmp_path / "src" / "prereq" / LLM / f"{v2.group}.pt"
    m = torch.from_numpy(original["prereq"][v2.group]).float()
    m[0, 0] = 1.0000001  # float32 1.00000012
    torch.save(m, prereq)
    lines: list[str] = []
    summary = _import(tmp_path, have, lines)
    assert summary["videos_imported"] == 3 and summary["files_refused"] == 0
    assert summary["files_imported"] == 3 * 2 + 2
    assert summary["warnings"] == {"own_rows": 2, "clipped": 2, "dtype": 1, "near_repeat": 0}
    assert summary["max_clipped"] == pytest.approx(2**-23, rel=1e-6)
    assert len(lines) == 5 and all(line.startswith("warning: /") for line in lines)
    assert any(f"{v2.uid}.pt: float64 tensor" in line for line in lines)
    for v, extra in ((have[0], 2), (have[1], -1)):
        t = v.num_rows()
        expected = (
            f"warning: {vsg_dir / v.uid}.pt: T = {t + extra} rows, the video's frames give {t}"
        )
        assert any(line.startswith(expected) for line in lines), expected
    scores = _scores_cache(tmp_path)
    for uid, (vsg_t, prog_t) in rows.items():
        got = scores.per_second(uid)
        np.testing.assert_array_equal(got[0], vsg_t)
        np.testing.assert_array_equal(got[1], prog_t)
    got = scores.per_second(v2.uid)[0]
    assert got[2, 1] == 0.0 and (got >= 0).all()
    deps = DependencyCache(tmp_path / "cache", DependencyKey("htstep", LLM, "published"))
    assert deps.read(v2.group)[0, 0] == 1.0


def test_import_prerequisites_flat_and_in_the_llm_folder(tmp_path, htstep_videos) -> None:
    video = htstep_videos[VIDEO]
    original = _publish(tmp_path / "src", [video], layout="flat")
    flat = tmp_path / "src" / "prereq" / f"{video.group}.pt"
    sub = tmp_path / "src" / "prereq" / LLM / f"{video.group}.pt"
    sub.parent.mkdir()
    torch.save(torch.from_numpy(original["prereq"][video.group]).float(), sub)
    summary = _import(tmp_path, [video])  # both hold the same matrix: fine
    assert summary["videos_imported"] == 1 and summary["files_refused"] == 0
    torch.save(torch.zeros(5, 5), sub)
    shutil.rmtree(tmp_path / "cache")
    line = _refused(tmp_path, video, sub, "differs from .*; both exist")
    assert str(flat) in line  # both files named


def test_import_cli_prints_counts_and_refusals(tmp_path, htstep_videos, monkeypatch, capsys):
    from baglm_nb.apps.cli.main import main

    monkeypatch.setattr("baglm_nb.inputs.datasets.load_dataset", lambda *a, **k: htstep_videos)
    original = _publish(tmp_path / "src", htstep_videos[:3], layout="model")
    bad = tmp_path / "src" / "prog" / MODEL / f"{htstep_videos[0].uid}.pt"
    prog = torch.from_numpy(original["prog"][htstep_videos[0].uid]).float()
    prog[20:22, 0] = 3.0
    torch.save(prog, bad)
    args = [
        "import",
        str(tmp_path / "src"),
        "--dataset",
        "htstep",
        "--no-progress",
        "--cache-root",
        str(tmp_path / "cache"),
    ]
    assert main(args) == 1
    out, err = capsys.readouterr()
    assert f"refused: {bad}: row 20, step 0, digit 0: value 3" in err
    assert "imported: 6 files (2 videos: VSG + progress; 2 prerequisite matrices)" in out
    assert "skipped: 1 annotated videos without a VSG file" in out
    assert "warnings: 0" in out and "refused: 1 files (1 videos not imported)" in out
    assert main([*args[:2], "--dataset", "htstep", "--cache-root", str(tmp_path / "c2")]) == 1
    assert main(["import", str(tmp_path / "nowhere"), "--dataset", "htstep"]) == 2
    assert "error: " in capsys.readouterr().err
