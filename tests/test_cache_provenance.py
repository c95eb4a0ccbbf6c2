"""Caches know what they were computed for: a score or dependency
cache stored for other steps than the annotation in use is refused, naming the file and the first
differing step; resumed runs compute such entries again and report them (``rescored_stale``)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from authors_files import write_authors_files
from cli_runs import one_error_line, run_main
from test_scoring import CLIPS, STEPS, scorer, write_annotations  # noqa: F401 (a fixture)

from baglm_nb.core import sources
from baglm_nb.inputs.datasets import annotation_path, load_dataset
from baglm_nb.models import dependencies as dep
from baglm_nb.models.scoring import score_dataset
from baglm_nb.stores.dependencies import DependencyCache
from baglm_nb.stores.keys import DependencyKey, ScoreKey
from baglm_nb.stores.provenance import (
    StaleCacheError,
    file_sha256,
    first_difference,
    steps_sha256,
)
from baglm_nb.stores.scores import ScoreCache


@pytest.fixture
def cli():
    """``cli(data, *ARGS)``: ``python -m baglm_nb ARGS`` reading the annotations under ``data``
    (BAGLM_DATA_DIR), run in this process (what is tested is each verb's status, output and
    error line, not the process: tests/test_cli_errors.py runs a real one)."""

    def run(data: Path, *args: str) -> subprocess.CompletedProcess:
        return run_main(*args, env={"BAGLM_DATA_DIR": str(data)})

    return run


def error_line(out: subprocess.CompletedProcess) -> str:
    """The one ``error:`` line (progress bars aside) of a run that failed."""
    return one_error_line(out.stderr, other_lines=True)


@pytest.fixture
def data(tmp_path) -> Path:
    """A copy of the project's annotation files, to edit."""
    folder = tmp_path / "data"
    shutil.copytree(annotation_path("coin").parent, folder / "annotations")
    return folder


def edit_first_video(data: Path, change) -> tuple[str, list[str], list[str]]:
    """Apply ``change`` (old steps -> new steps, same texts or renamed) to coin's first video;
    returns its uid, old and new steps. Renamed steps are renamed in its queries too."""
    path = data / "annotations" / "coin_video_annots.json"
    records = json.loads(path.read_text())
    record = records[0]
    old = list(record["step_headline"])
    new = change(old)
    renamed = dict(zip(old, new, strict=True)) if sorted(old) != sorted(new) else {}
    record["step_headline"] = new
    for q in record["clips"][0]["annotations"][0]["language_queries"]:
        q["query"] = renamed.get(q["query"], q["query"])
    path.write_text(json.dumps(records))
    return record["video_uid"], old, new


def test_first_difference_and_hashes():
    assert first_difference(["a", "b"], ["a", "b"]) is None
    why = "step 1 is 'a' in the cache, 'b' in the annotation"
    assert first_difference(["a", "b"], ["b", "a"]) == why
    assert first_difference(["a", "b"], ["a", "c"]).startswith("step 2 is 'b'")
    assert first_difference(["a"], ["a", "b"]) == "the cache has 1 steps, the annotation 2"
    assert steps_sha256(["a", "b"]) != steps_sha256(["b", "a"])
    assert len(steps_sha256(["a"])) == 64


@pytest.mark.parametrize("edit", ["reverse", "rename"])
def test_evaluate_refuses_a_score_cache_made_for_other_steps(data, tmp_path, edit, cli):
    cache_root = tmp_path / "cache"
    assert (
        cli(
            data, "simulate", "--dataset", "coin", "--cache-root", str(cache_root), "--limit", "2"
        ).returncode
        == 0
    )
    folder = next(cache_root.rglob("config.json")).parent
    cache = ScoreCache.open(folder)
    ann = data / "annotations" / "coin_video_annots.json"
    uid0 = load_dataset("coin", data / "annotations")[0].uid
    stored = ScoreCache.open(folder).read_video(uid0)
    meta = cache.entry_meta(uid0, ("steps_sha256", "annotation_sha256"))
    assert meta == {
        "steps_sha256": steps_sha256(stored.steps),
        "annotation_sha256": file_sha256(ann),
    }
    before = cli(data, "evaluate", "--dataset", "coin", "--scores", str(folder), "--deps", "oracle")
    assert before.returncode == 0, before.stderr

    change = (lambda s: s[::-1]) if edit == "reverse" else (lambda s: [s[0] + " (new)", *s[1:]])
    uid, old, new = edit_first_video(data, change)
    out = cli(data, "evaluate", "--dataset", "coin", "--scores", str(folder), "--deps", "oracle")
    assert out.returncode == 2 and out.stdout == ""
    line = error_line(out)
    assert str(cache.file(uid)) in line and str(ann) in line
    assert f"step 1 is {old[0]!r} in the cache, {new[0]!r} in the annotation" in line
    assert "simulate" in line  # how to bring it up to date

    replay = cli(data, "follow", "--replay", str(folder), "--", uid)  # the same check
    assert replay.returncode == 2 and str(cache.file(uid)) in error_line(replay)

    again = cli(
        data, "simulate", "--dataset", "coin", "--cache-root", str(cache_root), "--limit", "2"
    )
    assert again.returncode == 0, again.stderr
    assert cache.stored_steps(uid) == tuple(new)
    after = cli(data, "evaluate", "--dataset", "coin", "--scores", str(folder), "--deps", "oracle")
    assert after.returncode == 0, after.stderr


def test_notebook_path_refuses_too(data, tmp_path, monkeypatch):
    """The notebooks and tables resolve scores through core.sources: the same refusal."""
    monkeypatch.setenv("BAGLM_DATA_DIR", str(data))
    from baglm_nb.core.simulate import write_simulated_cache

    folder = write_simulated_cache("coin", tmp_path / "cache", limit=2)
    edit_first_video(data, lambda s: s[::-1])
    with pytest.raises(StaleCacheError, match="step 1 is"):
        sources.observations("coin", str(folder))


def test_score_resume_rescores_a_video_stored_for_other_steps(tmp_path, scorer):  # noqa: F811
    ann = write_annotations(tmp_path / "ann", ["cup"])
    kw = {"root": tmp_path / "cache", "annotations": ann, "show_progress": False}
    first = score_dataset("coin", CLIPS, scorer, **kw)
    assert first["scored"] == ["cup"] and first["rescored_stale"] == []
    cache = ScoreCache.open(first["cache"])
    assert cache.entry_meta("cup", ("annotation_sha256",)) == {
        "annotation_sha256": file_sha256(ann / "coin_video_annots.json")
    }
    path = ann / "coin_video_annots.json"
    records = json.loads(path.read_text())
    records[0]["step_headline"] = STEPS[::-1]
    path.write_text(json.dumps(records))
    again = score_dataset("coin", CLIPS, scorer, **kw)
    assert again["rescored_stale"] == ["cup"] and again["scored"] == ["cup"]
    assert again["already_cached"] == [] and cache.stored_steps("cup") == tuple(STEPS[::-1])
    third = score_dataset("coin", CLIPS, scorer, **kw)
    assert third["already_cached"] == ["cup"] and third["rescored_stale"] == []


def test_deps_imported_under_one_order_are_refused_under_another(data, tmp_path, cli):
    videos = load_dataset("coin", data / "annotations")[:2]
    src, cache_root = tmp_path / "src", tmp_path / "cache"
    write_authors_files(src, videos)
    imported = cli(
        data,
        "import",
        str(src),
        "--dataset",
        "coin",
        "--cache-root",
        str(cache_root),
        "--no-progress",
    )
    assert imported.returncode == 0, imported.stderr
    folder = next((cache_root / "deps").rglob("config.json")).parent
    args = (
        "evaluate",
        "--dataset",
        "coin",
        "--scores",
        "simulated",
        "--limit",
        "2",
        "--deps",
        str(folder),
    )
    assert cli(data, *args).returncode == 0

    uid, old, new = edit_first_video(data, lambda s: s[::-1])
    group = load_dataset("coin", data / "annotations")[0].group
    out = cli(data, *args)
    assert out.returncode == 2
    line = error_line(out)
    assert str(DependencyCache.open(folder).file(group)) in line
    assert f"group {group!r}" in line and f"step 1 is {old[0]!r}" in line

    other = cli(
        data,
        "evaluate",
        "--dataset",
        "htstep",
        "--scores",
        "simulated",
        "--limit",
        "1",
        "--deps",
        str(folder),
    )
    assert other.returncode == 2
    why = f"{folder}: the dependency cache holds 'coin' matrices, not 'htstep'"
    assert why in error_line(other)


class _Backend:
    """A deterministic stand-in for an LLM (the bookkeeping only)."""

    name, prompt_version = "stand-in", "prereq-test"
    chunk_size = 4

    def score(self, goal, pairs):
        return np.array([(len(a) * 7 + len(b) * 3) % 11 / 10 for a, b in pairs])


def test_deps_resume_recomputes_a_group_stored_for_other_steps(tmp_path):
    videos = load_dataset("coin")[:1]
    first = dep.build_dependencies("coin", _Backend(), tmp_path, videos=videos, show_progress=False)
    assert first["computed"] == [videos[0].group] and first["rescored_stale"] == []
    flipped = [dataclasses.replace(v, steps=v.steps[::-1]) for v in videos]
    again = dep.build_dependencies(
        "coin", _Backend(), tmp_path, videos=flipped, show_progress=False
    )
    assert again["rescored_stale"] == [videos[0].group] and again["computed"] == [videos[0].group]
    cache = DependencyCache(tmp_path, DependencyKey("coin", "stand-in", "prereq-test"))
    assert cache.steps(videos[0].group) == list(videos[0].steps[::-1])


def test_old_cache_without_steps_is_read_with_one_warning(tmp_path, capsys):
    videos = load_dataset("coin")[:1]
    cache = ScoreCache(tmp_path, ScoreKey("coin", "old", "v0", source="lmm"))
    from baglm_nb.core.simulate import default_params, simulate_video

    sim = simulate_video(videos[0], default_params("coin"))
    cache.write_video(videos[0].uid, sim.vsg, sim.progress)  # no steps: as an old writer
    obs = sources.observations("coin", str(cache.path))
    assert obs.uids() == [videos[0].uid]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"warning: {cache.path}: 1 cached entry record no")


def test_the_binary_prompt_table_refuses_a_stale_cache_too(tmp_path):
    from baglm_nb.core.sources import vsg_rows

    video = load_dataset("coin")[0]
    cache = ScoreCache(tmp_path, ScoreKey("coin", "binary-lmm", "bin-v1", source="lmm"))
    vsg = np.full((3, video.num_steps + 1), 0.1)
    cache.write_video(video.uid, vsg, steps=video.steps)
    label, rows = vsg_rows("coin", cache.path)
    assert label == "lmm:binary-lmm" and list(rows) == [video.uid]
    np.testing.assert_array_equal(rows[video.uid], np.repeat(vsg, 2, axis=0))  # per second
    with pytest.raises(ValueError, match="holds 'coin', not 'htstep'"):
        vsg_rows("htstep", cache.path)
    cache.write_video(video.uid, vsg, steps=video.steps[::-1])
    with pytest.raises(StaleCacheError, match=f"{video.uid}.*step 1 is"):
        vsg_rows("coin", cache.path)
