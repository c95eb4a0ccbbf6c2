"""baglm_nb.stores.scores (and the shared folder of stores.parquet): the score cache."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from toys import random_scores as _scores

from baglm_nb.stores.keys import ScoreKey
from baglm_nb.stores.scores import ScoreCache, VideoScores


@pytest.fixture
def key() -> ScoreKey:
    return ScoreKey("htstep", "OpenGVLab/InternVL2_5-8B", "v1")


@pytest.fixture
def cache(tmp_path: Path, key: ScoreKey) -> ScoreCache:
    return ScoreCache(tmp_path, key)


def test_round_trip(cache: ScoreCache) -> None:
    rng = np.random.default_rng(0)
    uid = "-25-1nbOki0"  # leading "-" and a uid with a slash must both be safe file names
    vsg, progress = _scores(rng, 7, 4)
    timings = {"decode_s": rng.uniform(0, 1, 7), "vsg_s": rng.uniform(0, 1, 7)}
    steps = ["cut", "fry", "serve", "cut"]  # duplicate step texts are allowed
    path = cache.write_video(uid, vsg, progress, steps=steps, timings=timings)
    cache.write_video("a/b c", vsg[:3], None)

    assert path.parent == cache.path / "videos" and path.name == "-25-1nbOki0.parquet"
    assert cache.file("a/b c").name == "a%2Fb%20c.parquet"
    assert cache.uids() == sorted([uid, "a/b c"]) and len(cache) == 2
    assert cache.has(uid) and uid in cache and not cache.has("other")

    got = cache.read_video(uid)
    assert isinstance(got, VideoScores) and got.uid == uid
    np.testing.assert_array_equal(got.vsg, vsg)
    np.testing.assert_array_equal(got.progress, progress)
    assert got.vsg.dtype == np.float64 and got.progress.shape == (7, 4, 10)
    np.testing.assert_array_equal(got.t_start, np.arange(7) * 2.0)
    np.testing.assert_array_equal(got.t_end, np.arange(1, 8) * 2.0)
    assert set(got.timings) == set(timings)
    for name, value in timings.items():
        np.testing.assert_array_equal(got.timings[name], value)
    assert got.steps == tuple(steps) and got.source == "lmm"
    assert got.num_segments == 7 and got.num_steps == 4

    other = cache.read_video("a/b c")
    assert other.progress is None and other.steps is None and other.timings == {}
    np.testing.assert_array_equal(other.vsg, vsg[:3])

    # the on-disk schema
    table = pq.read_table(path)
    assert table.column_names == [
        "video_uid",
        "segment",
        "t_start",
        "t_end",
        "vsg",
        "progress",
        "decode_s",
        "vsg_s",
    ]
    assert str(table.schema.field("segment").type) == "int32"
    assert str(table.schema.field("vsg").type) == "list<element: double>"
    assert table.column("video_uid").to_pylist() == [uid] * 7
    meta = table.schema.metadata
    assert json.loads(meta[b"baglm.key"]) == cache.key.to_dict()
    assert json.loads(meta[b"baglm.num_steps"]) == 4
    assert json.loads(meta[b"baglm.source"]) == "lmm"
    assert b"baglm.label" not in meta

    everything = cache.read_all()
    assert list(everything) == cache.uids()
    np.testing.assert_array_equal(everything[uid].progress, progress)
    assert list(cache.read_all([uid])) == [uid]


def test_zero_segment_video(cache: ScoreCache) -> None:
    cache.write_video("short", np.zeros((0, 3)), np.zeros((0, 2, 10)), steps=["a", "b"])
    cache.write_video("short-noprog", np.zeros((0, 3)))
    got = cache.read_video("short")
    assert got.vsg.shape == (0, 3) and got.progress.shape == (0, 2, 10)
    assert cache.read_video("short-noprog").progress is None
    vsg_t, prog_t = cache.per_second("short")
    assert vsg_t.shape == (0, 3) and prog_t.shape == (0, 2, 10)


def test_per_second_layout(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    vsg, progress = _scores(rng, 5, 3)
    for d in (2, 3):
        cache = ScoreCache(tmp_path, ScoreKey("htstep", "m", "v1", segment_duration=d))
        cache.write_video("v", vsg, progress)
        vsg_t, prog_t = cache.per_second("v")
        assert vsg_t.shape == (5 * d, 4) and prog_t.shape == (5 * d, 3, 10)
        for t in range(5 * d):  # row t = second t = segment t // d
            np.testing.assert_array_equal(vsg_t[t], vsg[t // d])
            np.testing.assert_array_equal(prog_t[t], progress[t // d])
        np.testing.assert_array_equal(vsg_t, np.repeat(vsg, d, axis=0))
        np.testing.assert_array_equal(cache.read_video("v").t_end, (np.arange(5) + 1.0) * d)
    cache.write_video("noprog", vsg)
    vsg_t, prog_t = cache.per_second("noprog")
    assert prog_t is None and vsg_t.shape == (15, 4)


def test_atomic_write_keeps_old_file(cache: ScoreCache, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(2)
    old_vsg, old_prog = _scores(rng, 4, 2)
    path = cache.write_video("v", old_vsg, old_prog)
    old_bytes = path.read_bytes()

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    new_vsg, new_prog = _scores(rng, 6, 2)
    with pytest.raises(OSError, match="disk full"):
        cache.write_video("v", new_vsg, new_prog)
    with pytest.raises(OSError, match="disk full"):
        cache.write_video("new", new_vsg, new_prog)
    monkeypatch.undo()

    assert path.read_bytes() == old_bytes
    np.testing.assert_array_equal(cache.read_video("v").vsg, old_vsg)
    assert sorted(os.listdir(cache.videos_dir)) == ["v.parquet"]  # temp files removed
    assert cache.uids() == ["v"] and not cache.has("new")

    # a temp file left by a killed writer is never listed
    (cache.videos_dir / ".tmp-abc123.tmp").write_bytes(b"partial")
    assert cache.uids() == ["v"] and len(cache) == 1


def test_append_does_not_touch_other_files(cache: ScoreCache) -> None:
    rng = np.random.default_rng(3)
    first = cache.write_video("first", *_scores(rng, 4, 3))
    before = first.read_bytes(), first.stat().st_mtime_ns, first.stat().st_ino
    time.sleep(0.01)
    cache.write_video("second", *_scores(rng, 5, 3))
    cache.write_video("second", *_scores(rng, 6, 3))  # replacing also leaves "first" alone
    after = first.read_bytes(), first.stat().st_mtime_ns, first.stat().st_ino
    assert before == after
    assert cache.uids() == ["first", "second"]
    assert cache.read_video("second").num_segments == 6


def test_config_json_and_mismatch(tmp_path: Path, key: ScoreKey) -> None:
    cache = ScoreCache(tmp_path, key)
    config = json.loads((cache.path / "config.json").read_text())
    assert ScoreKey.from_dict(config["key"]) == key and "label" not in config
    ScoreCache(tmp_path, key)  # reopening with the same key is fine

    # same folder, different key (the source is not part of the path)
    other = ScoreKey(key.dataset, key.model, key.prompt_version, source="simulated")
    assert other.relpath() == key.relpath()
    with pytest.raises(ValueError, match="config.json"):
        ScoreCache(tmp_path, other)

    (cache.path / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="config.json"):
        ScoreCache(tmp_path, key)


def test_simulated_scores_are_labelled(tmp_path: Path) -> None:
    cache = ScoreCache(tmp_path, ScoreKey("htstep", "sim", "v1", source="simulated"))
    assert cache.label == "simulated"
    config = json.loads((cache.path / "config.json").read_text())
    assert config["label"] == "simulated"
    path = cache.write_video("v", *_scores(np.random.default_rng(4), 3, 2))
    meta = pq.read_schema(path).metadata
    assert json.loads(meta[b"baglm.label"]) == "simulated"
    assert json.loads(meta[b"baglm.source"]) == "simulated"
    assert cache.read_video("v").source == "simulated"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"vsg": np.ones(4)}, "vsg must be 2-D"),
        ({"vsg": np.ones((3, 1))}, "vsg must have K\\+1 >= 2"),
        ({"vsg": np.where(np.eye(3, 3) > 0, np.nan, 0.5)}, "vsg contains NaN"),
        ({"vsg": -np.ones((3, 3))}, "vsg contains negative"),
        ({"vsg": np.full((3, 3), np.inf)}, "vsg contains inf"),
        ({"progress": np.ones((3, 2, 9))}, "progress shape"),
        ({"progress": np.ones((4, 2, 10))}, "progress shape"),
        ({"progress": np.full((3, 2, 10), np.nan)}, "progress contains NaN"),
        ({"progress": -np.ones((3, 2, 10))}, "progress contains negative"),
        ({"timings": {"vsg_s": np.ones(2)}}, "timings\\['vsg_s'\\] has shape"),
        ({"timings": {"vsg_s": -np.ones(3)}}, "timings\\['vsg_s'\\] contains negative"),
        ({"timings": {"vsg": np.ones(3)}}, "timings name 'vsg'"),
        ({"steps": ["a"]}, "steps has 1 entries"),
    ],
)
def test_write_validation_names_argument(cache: ScoreCache, kwargs: dict, match: str) -> None:
    args = {"vsg": np.full((3, 3), 0.3), "progress": np.full((3, 2, 10), 0.1), **kwargs}
    vsg, progress = args.pop("vsg"), args.pop("progress")
    with pytest.raises(ValueError, match=match) as info:
        cache.write_video("vid-7", vsg, progress, **args)
    assert "'vid-7'" in str(info.value)
    assert not cache.has("vid-7")


def test_missing_and_corrupt_files(cache: ScoreCache) -> None:
    with pytest.raises(KeyError) as info:
        cache.read_video("nope")
    assert "'nope'" in str(info.value) and str(cache.path) in str(info.value)

    bad = cache.file("broken")
    bad.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(ValueError, match="broken.parquet"):
        cache.read_video("broken")

    # a Parquet file without the BaGLM metadata
    import pyarrow as pa

    pq.write_table(pa.table({"x": [1, 2]}), cache.file("foreign"))
    with pytest.raises(ValueError, match="foreign.parquet"):
        cache.read_video("foreign")


def test_timings_frame(cache: ScoreCache) -> None:
    rng = np.random.default_rng(5)
    cache.write_video("a", *_scores(rng, 3, 2), timings={"vsg_s": np.array([0.1, 0.2, 0.3])})
    cache.write_video(
        "b", *_scores(rng, 2, 2), timings={"vsg_s": np.array([1.0, 2.0]), "decode_s": np.ones(2)}
    )
    cache.write_video("c", *_scores(rng, 2, 2))
    df = cache.timings_frame()
    assert set(df.columns) == {"video_uid", "segment", "vsg_s", "decode_s"}
    assert len(df) == 7
    a = df[df.video_uid == "a"]
    np.testing.assert_array_equal(a.vsg_s, [0.1, 0.2, 0.3])
    assert a.decode_s.isna().all()
    np.testing.assert_array_equal(df[df.video_uid == "b"].segment, [0, 1])

    empty = ScoreCache(cache.root, ScoreKey("x", "y", "z")).timings_frame()
    assert list(empty.columns) == ["video_uid", "segment"] and empty.empty


def test_read_all_reads_back_600_files(cache: ScoreCache, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file comes back with its own values (its speed: benchmarks/cache_read_speed.py)."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)  # only to make the setup quick
    rng = np.random.default_rng(6)
    vsg, progress = _scores(rng, 40, 8)
    for i in range(600):
        cache.write_video(f"v{i:03d}", vsg + i, progress)
    everything = cache.read_all()
    assert sorted(everything) == [f"v{i:03d}" for i in range(600)]
    for i in (0, 317, 599):
        np.testing.assert_array_equal(everything[f"v{i:03d}"].vsg, vsg + i)
        np.testing.assert_array_equal(everything[f"v{i:03d}"].progress, progress)


def test_publish_dir_renames_a_finished_folder_and_keeps_the_first_copy(tmp_path):
    import stat

    from baglm_nb.stores.atomic import publish_dir

    first = tmp_path / "a"
    first.mkdir(mode=0o700)
    (first / ".complete").write_text("first")
    publish_dir(first, tmp_path / "out")
    assert (tmp_path / "out" / ".complete").read_text() == "first" and not first.exists()
    assert stat.S_IMODE((tmp_path / "out").stat().st_mode) == 0o755
    second = tmp_path / "b"
    second.mkdir()
    (second / ".complete").write_text("second")
    (second / "x").write_text("x")  # a non-empty target makes the rename fail: first copy wins
    publish_dir(second, tmp_path / "out")
    assert (tmp_path / "out" / ".complete").read_text() == "first"
    broken = tmp_path / "c"
    broken.mkdir()
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "y").write_text("y")  # occupied, but never completed: an error
    with pytest.raises(OSError):
        publish_dir(broken, tmp_path / "taken")
