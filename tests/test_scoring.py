"""Batch scoring from real clips into the Parquet cache, with failures, resume and a kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from clips import CLIPS, score_argv

from baglm_nb.inputs.datasets import load_dataset
from baglm_nb.inputs.grid import num_segments
from baglm_nb.inputs.video import find_video_file, probe
from baglm_nb.models.scoring import SERVED_ON_RAY, ScorerSpec, make_scorer, score_dataset
from baglm_nb.stores.scores import ScoreCache

STEPS = ["pick up the object", "turn it", "put it down"]


def write_annotations(folder: Path, uids: list[str]) -> Path:
    """A COIN-format annotation file for the test clips (a custom task)."""
    records = []
    for uid in uids:
        path = next(CLIPS.glob(f"{uid}.*"), None)
        info = probe(path) if path else None
        records.append(
            {
                "video_uid": uid,
                "video_num_frames": info.num_frames if info else 100,
                "video_fps": info.fps if info else 25.0,
                "activity": "HandleObject",
                "step_headline": STEPS,
                "clips": [
                    {
                        "annotations": [
                            {
                                "language_queries": [
                                    {"clip_start_sec": 0.5, "clip_end_sec": 3.0, "query": STEPS[0]}
                                ]
                            }
                        ]
                    }
                ],
            }
        )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "coin_video_annots.json").write_text(json.dumps(records))
    return folder


@pytest.fixture(scope="module")
def scorer():
    return make_scorer("random-init:internvl")


def test_full_run_from_real_clips_to_the_cache(tmp_path, scorer):
    ann = write_annotations(tmp_path / "ann", ["cup", "no_such_clip"])
    summary = score_dataset(
        "coin", CLIPS, scorer, root=tmp_path / "cache", annotations=ann, show_progress=False
    )
    assert summary["scored"] == ["cup"] and summary["label"] == "random-init"
    assert "no_such_clip" in summary["failed"] and "no file" in summary["failed"]["no_such_clip"]
    assert "random-init" in summary["cache"]
    cache = ScoreCache.open(summary["cache"])
    video = load_dataset("coin", ann)[0]
    scores = cache.read_video("cup")
    s = num_segments(video.num_frames, video.fps)
    assert scores.vsg.shape == (s, 4) and scores.progress.shape == (s, 3, 10)
    assert ((scores.vsg >= 0) & (scores.vsg <= 1)).all() and (scores.vsg.sum(1) <= 1 + 1e-9).all()
    assert set(scores.timings) == {"decode_s", "vsg_s", "progress_s"}
    assert (scores.timings["vsg_s"] > 0).all() and scores.steps == tuple(STEPS)
    # the same segments scored directly give the same numbers (batch invariance)
    from baglm_nb.inputs.video import iter_segments

    frames = next(iter(iter_segments(CLIPS / "cup.mp4", batch_segments=2))).frames
    direct = scorer.score_segments(frames, video.goal, video.steps)
    np.testing.assert_allclose(scores.vsg[:2], direct.vsg, rtol=1e-5, atol=1e-9)
    failures = json.loads((Path(summary["cache"]) / "failures.json").read_text())
    assert set(failures) == {"no_such_clip"}
    again = score_dataset(
        "coin", CLIPS, scorer, root=tmp_path / "cache", annotations=ann, show_progress=False
    )
    assert again["scored"] == [] and again["already_cached"] == ["cup"]


def test_a_file_whose_length_differs_from_its_annotation_is_a_failure(tmp_path, scorer):
    # "cup" is a short clip; an annotation twice as long is not scored without a word
    ann = write_annotations(tmp_path / "ann", ["cup"])
    path = ann / "coin_video_annots.json"
    records = json.loads(path.read_text())
    real_frames, fps = records[0]["video_num_frames"], records[0]["video_fps"]
    records[0]["video_num_frames"] = 2 * real_frames + int(4 * fps)
    path.write_text(json.dumps(records))
    summary = score_dataset(
        "coin", CLIPS, scorer, root=tmp_path / "cache", annotations=ann, show_progress=False
    )
    assert summary["scored"] == [] and list(summary["failed"]) == ["cup"]
    why = summary["failed"]["cup"]
    assert str(CLIPS / "cup.mp4") in why and "but the annotation of video 'cup'" in why
    assert f"{real_frames} frames at {fps:g} fps" in why
    assert f"video_num_frames={2 * real_frames + int(4 * fps)}" in why
    failures = json.loads((Path(summary["cache"]) / "failures.json").read_text())
    assert failures == {"cup": why}


def test_a_truncated_cached_file_is_rescored_on_resume(tmp_path, scorer):
    ann = write_annotations(tmp_path / "ann", ["cup"])
    kw = {"root": tmp_path / "cache", "annotations": ann, "show_progress": False}
    first = score_dataset("coin", CLIPS, scorer, **kw)
    cache = ScoreCache.open(first["cache"])
    before = cache.read_video("cup").vsg
    good = cache.file("cup").read_bytes()
    cache.file("cup").write_bytes(good[: len(good) // 2])  # e.g. a copy that was cut short
    again = score_dataset("coin", CLIPS, scorer, **kw)
    assert again["rescored_unreadable"] == ["cup"] and again["scored"] == ["cup"]
    assert again["already_cached"] == [] and cache.is_readable("cup")
    np.testing.assert_allclose(cache.read_video("cup").vsg, before, atol=1e-6)
    third = score_dataset("coin", CLIPS, scorer, **kw)
    assert third["already_cached"] == ["cup"] and third["rescored_unreadable"] == []


def test_find_video_file(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a[1].mp4").write_bytes(b"x")
    video = load_dataset("coin")[0]
    assert find_video_file(tmp_path, video.uid) is None
    assert find_video_file(tmp_path, "a[1]") == tmp_path / "sub" / "a[1].mp4"
    (tmp_path / "a[1].webm").write_bytes(b"y")  # the top folder before sub-folders
    assert find_video_file(tmp_path, "a[1]") == tmp_path / "a[1].webm"
    assert find_video_file(None, "a[1]") is None and find_video_file(tmp_path / "no", "x") is None


def test_find_video_file_ignores_sidecars(tmp_path):
    # yt-dlp leaves subtitles, metadata and partial downloads beside the video; "cup.en.vtt" and
    # "cup.info.json" sort before "cup.mp4"
    for name in ("cup.en.vtt", "cup.info.json", "cup.mp4.part", "cup.MP4", "cupboard.mp4"):
        (tmp_path / name).write_bytes(b"x")
    assert find_video_file(tmp_path, "cup") == tmp_path / "cup.MP4"
    (tmp_path / "cup.MP4").unlink()
    assert find_video_file(tmp_path, "cup") is None  # no video: never a sidecar
    (tmp_path / "v.1.en.vtt").write_bytes(b"x")
    (tmp_path / "v.1.mkv").write_bytes(b"x")
    assert find_video_file(tmp_path, "v.1") == tmp_path / "v.1.mkv"  # dots in the uid


def test_killed_run_resumes_without_redoing_videos(tmp_path, capsys, cli_forks):
    """``score`` killed (SIGKILL) after its first video: the same command again (here in this
    process, as ``python -m baglm_nb`` runs it) scores only the missing videos. The killed run
    is a ``python -m baglm_nb`` process forked from the session's warm Python
    (:mod:`cli_forks`): SIGKILL ends a process of its own mid-write, without torch and
    transformers imported again for it."""
    from baglm_nb.apps.cli.main import main

    uids = ["cup", "Megamind_bugy", "box"]
    ann = write_annotations(tmp_path / "ann", uids)
    argv = [*score_argv(ann, tmp_path / "cache"), "--batch-segments", "1"]
    proc = cli_forks.model.start(argv)
    deadline = time.monotonic() + 300
    files: list[Path] = []
    while time.monotonic() < deadline and not files:
        files = list((tmp_path / "cache").rglob("videos/*.parquet"))
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert len(files) >= 1
    cache = ScoreCache.open(files[0].parent.parent)
    first = cache.uids()
    assert 1 <= len(first) < 3, "the run finished before it could be killed"
    stamps = {u: os.stat(cache.file(u)).st_mtime_ns for u in first}
    for u in first:
        cache.read_video(u)  # every file present is complete
    capsys.readouterr()
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["already_cached"] == len(first) and summary["scored"] == 3 - len(first)
    assert sorted(cache.uids()) == sorted(uids)
    assert {u: os.stat(cache.file(u)).st_mtime_ns for u in first} == stamps
    assert not [p for p in cache.path.rglob("*") if p.name.endswith(".tmp")]


def test_engine_options_errors_are_one_line(tmp_path, capsys):
    from baglm_nb.apps.cli.main import main

    ann = write_annotations(tmp_path / "ann", ["cup"])
    rc = main(
        [
            *score_argv(ann, tmp_path / "cache"),
            "--engine",
            "ray",
            "--workers",
            "0",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err == ["error: workers must be >= 1, got 0"]
    rc = main(
        [
            "deps",
            "--dataset",
            "htstep",
            "--backend",
            "openai",
            "--model",
            "m",
            "--engine",
            "ray",
            "--cache-root",
            str(tmp_path),
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err == [f"error: {SERVED_ON_RAY}"]
    rc = main(
        [
            "score",
            "--dataset",
            "coin",
            "--video-dir",
            str(CLIPS),
            "--model",
            "openai:m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--engine",
            "ray",
            "--cache-root",
            str(tmp_path / "cache"),
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err == [f"error: {SERVED_ON_RAY}"]
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("model", ["openai:m", ScorerSpec("openai:m")])
def test_a_served_model_is_refused_on_ray_by_the_driver_itself(tmp_path, model):
    with pytest.raises(ValueError, match="a served model scales with --concurrency"):
        score_dataset(
            "coin",
            CLIPS,
            model,
            root=tmp_path,
            engine="ray",
            show_progress=False,
            videos=load_dataset("coin")[:1],
        )
    assert not list(tmp_path.iterdir())


def test_a_loaded_scorer_cannot_go_to_ray_workers(tmp_path, scorer):
    with pytest.raises(ValueError, match="loads the model in each worker"):
        score_dataset(
            "coin",
            CLIPS,
            scorer,
            root=tmp_path,
            engine="ray",
            show_progress=False,
            videos=load_dataset("coin")[:1],
        )


# --------------------------------------------------------------------------------------------
# one bad video never stops a run; implausible container timing


def remux_ts(folder: Path, uid: str = "box") -> Path:
    """``ffmpeg -i box.mp4 -c:v copy -f mpegts <uid>.ts``: an ordinary remux whose first frame
    has no timestamp, for which torchcodec reports 4.5e-12 fps over 1e14 s."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{uid}.ts"
    subprocess.run(
        [
            "ffmpeg",
            "-nostdin",
            "-loglevel",
            "error",
            "-y",
            "-i",
            str(CLIPS / "box.mp4"),
            "-c:v",
            "copy",
            "-f",
            "mpegts",
            str(path),
        ],
        check=True,
        timeout=60,
    )
    return path


def test_implausible_timing_rule():
    from baglm_nb.inputs.frame_times import implausible

    assert implausible(29.97, 15.18, 15.22) is None
    assert implausible(29.97, 15.18, None) is None
    assert implausible(1000.0, 1.0, 1.0) is None
    assert implausible(0.0, 15.0, 15.0) == "a frame rate of 0 fps"
    assert implausible(-3.0, 15.0, 15.0) == "a frame rate of -3 fps"
    assert implausible(1000.5, 1.0, 1.0) == "a frame rate of 1000.5 fps"
    assert implausible(None, None, None) == "no frame rate"
    assert implausible(4.46e-12, 1.02e14, 15.2) == (
        "a duration of 1.02e+14 s where its container declares 15.2 s"
    )
    assert implausible(30.0, 17.3, 15.2) is not None  # more than one 2-s segment off
    assert implausible(30.0, 17.1, 15.2) is None


def test_an_mpegts_remux_scores_on_its_frames_timestamps_like_the_mp4(tmp_path, scorer):
    from baglm_nb.inputs.frame_times import iter_timed_segments

    ts = remux_ts(tmp_path / "videos")
    info = probe(ts)
    assert info.timing == "frames" and info.start_s == pytest.approx(1.4)
    assert "torchcodec reports a duration of 1.02482e+14 s" in info.timing_note
    assert 29 < info.fps < 31 and abs(info.duration_s - probe(CLIPS / "box.mp4").duration_s) < 0.1
    ann = write_annotations(tmp_path / "ann", ["box"])  # the MP4's frame count and rate
    summary = score_dataset(
        "coin",
        tmp_path / "videos",
        scorer,
        root=tmp_path / "cache",
        annotations=ann,
        show_progress=False,
    )
    assert summary["scored"] == ["box"] and summary["failed"] == {}
    got = ScoreCache.open(summary["cache"]).read_video("box")
    video = load_dataset("coin", ann)[0]
    # the MP4 decoded on the same rule (its frames' own timestamps) gives the same frames
    [(first, frames, times)] = list(iter_timed_segments(CLIPS / "box.mp4", 0.0))
    assert first == 0 and frames.shape[0] == num_segments(video.num_frames, video.fps) == 7
    want = scorer.score_segments(frames, video.goal, video.steps)
    np.testing.assert_array_equal(got.vsg, want.vsg)
    np.testing.assert_array_equal(got.progress, want.progress)


def test_a_file_whose_frames_timing_is_implausible_too_is_refused_with_the_reason(tmp_path, scorer):
    folder = tmp_path / "videos"
    folder.mkdir()
    subprocess.run(
        [
            "ffmpeg",
            "-nostdin",
            "-loglevel",
            "error",
            "-f",
            "lavfi",
            "-i",
            "testsrc=size=64x48:rate=2000",
            "-t",
            "3",
            "-c:v",
            "mpeg4",
            str(folder / "cup.mkv"),
        ],
        check=True,
        timeout=60,
    )
    ann = write_annotations(tmp_path / "ann", ["cup"])
    summary = score_dataset(
        "coin", folder, scorer, root=tmp_path / "cache", annotations=ann, show_progress=False
    )
    assert summary["scored"] == []
    why = summary["failed"]["cup"]
    assert why.startswith(
        f"{folder / 'cup.mkv'}: implausible timing: torchcodec reports a "
        "frame rate of 2000 fps, and its frames' own timestamps give a frame "
        "rate of "
    )
    assert why.endswith(" fps too") and float(why.split()[-3]) > 1000  # 1999.67: ms timestamps


def test_any_per_video_failure_is_recorded_and_the_run_goes_on(tmp_path, monkeypatch, capsys):
    """A MemoryError while scoring one video (as an MPEG-TS remux can raise) is recorded
    in failures.json; the next video is scored, and the command says so in one line."""
    from baglm_nb.apps.cli.main import main
    from baglm_nb.models import scoring

    videos = tmp_path / "videos"
    remux_ts(videos)
    (videos / "cup.mp4").symlink_to(CLIPS / "cup.mp4")
    real = scoring.score_video

    def out_of_memory_on_cup(path, *args, **kwargs):
        if Path(path).name == "cup.mp4":
            raise MemoryError("cannot allocate 1.46 PiB")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(scoring, "score_video", out_of_memory_on_cup)
    ann = write_annotations(tmp_path / "ann", ["cup", "box"])
    rc = main(
        [
            "score",
            "--dataset",
            "coin",
            "--video-dir",
            str(videos),
            "--model",
            "random-init:internvl",
            "--annotations",
            str(ann),
            "--cache-root",
            str(tmp_path / "cache"),
            "--no-progress",
        ]
    )
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert rc == 1 and summary["scored"] == 1 and "Traceback" not in err
    why = f"{(videos / 'cup.mp4').resolve()}: MemoryError: cannot allocate 1.46 PiB"
    assert summary["failed"] == {"cup": why}
    failures = json.loads((Path(summary["cache"]) / "failures.json").read_text())
    assert failures == {"cup": why}
    assert ScoreCache.open(summary["cache"]).uids() == ["box"]
