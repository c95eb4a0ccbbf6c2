"""The command line's error rule: one ``error:`` line, exit 2 for bad input, 1 for a failed run,
the traceback only with ``--debug`` (:mod:`baglm_nb.apps.cli.main`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from busy_machine import machine_stretch
from cli_runs import one_error_line, run_cli, run_main

from baglm_nb.apps.cli.main import EXIT_BAD_INPUT, EXIT_FAILED, error_line, exit_status, main


def test_missing_scores_folder_one_line_exit_2_and_debug_traceback(tmp_path):
    missing = tmp_path / "no-such-cache"
    out = run_cli("evaluate", "--dataset", "coin", "--scores", str(missing))
    assert out.returncode == EXIT_BAD_INPUT
    assert str(missing) in one_error_line(out.stderr) and out.stdout == ""
    # the traceback that --debug adds: the same verb in this process (the exit status of a
    # real process is checked above)
    debug = run_main("evaluate", "--dataset", "coin", "--scores", str(missing), "--debug")
    assert debug.returncode == EXIT_BAD_INPUT
    assert "Traceback (most recent call last)" in debug.stderr
    assert debug.stderr.rstrip().splitlines()[-1] == one_error_line(out.stderr)


@pytest.fixture(scope="module")
def small_cache(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sim")
    assert main(["simulate", "--dataset", "coin", "--cache-root", str(root), "--limit", "2"]) == 0
    return next(root.rglob("config.json")).parent


def test_empty_and_truncated_caches_name_the_folder_or_file(small_cache, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "config.json").write_bytes((small_cache / "config.json").read_bytes())
    assert main(["evaluate", "--dataset", "coin", "--scores", str(empty)]) == EXIT_BAD_INPUT
    line = one_error_line(capsys.readouterr().err)
    assert str(empty) in line and "no scored video" in line

    broken = tmp_path / "broken"
    (broken / "videos").mkdir(parents=True)
    (broken / "config.json").write_bytes((small_cache / "config.json").read_bytes())
    files = sorted((small_cache / "videos").glob("*.parquet"))
    for f in files:
        (broken / "videos" / f.name).write_bytes(f.read_bytes())
    cut = broken / "videos" / files[0].name
    cut.write_bytes(files[0].read_bytes()[:300])  # a truncated Parquet file
    assert main(["evaluate", "--dataset", "coin", "--scores", str(broken)]) == EXIT_BAD_INPUT
    line = one_error_line(capsys.readouterr().err)
    assert str(cut) in line and "not a readable Parquet file" in line


def test_api_key_pasted_into_api_key_env_is_refused_and_never_echoed(tmp_path, capsys):
    pasted = "sk-proj-9f8e7d6c5b4a_pasted_key"
    code = main(
        [
            "deps",
            "--dataset",
            "htstep",
            "--backend",
            "openai",
            "--model",
            "m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--api-key-env",
            pasted,
            "--group-limit",
            "1",
            "--cache-root",
            str(tmp_path),
            "--no-progress",
        ]
    )
    captured = capsys.readouterr()
    assert code == EXIT_BAD_INPUT
    assert "NAME of an environment variable" in one_error_line(captured.err)
    assert pasted not in captured.out + captured.err


def test_error_line_and_exit_status_rules():
    assert error_line(FileNotFoundError("x.json: no such file")) == "error: x.json: no such file"
    assert error_line(ValueError("error: already prefixed")) == "error: already prefixed"
    assert error_line(KeyError("video_fps")).startswith("error: KeyError: missing key 'video_fps'")
    unexpected = error_line(TypeError("bad operand"))
    assert unexpected.startswith("error: TypeError: bad operand") and "--debug" in unexpected
    assert exit_status(UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad")) == EXIT_BAD_INPUT
    assert exit_status(RuntimeError("server went away")) == EXIT_FAILED
    assert exit_status(TypeError("x")) == EXIT_FAILED


def test_files_that_are_not_utf8_are_named(tmp_path):
    from baglm_nb.inputs.datasets import AnnotationError, load_dataset
    from baglm_nb.inputs.tasks import load_task

    task = tmp_path / "tâche.json"
    task.write_bytes('{"goal": "Faire du thé", "steps": ["a"]}'.encode("latin-1"))
    with pytest.raises(ValueError, match=r"tâche\.json: not UTF-8 \(byte 21\)"):
        load_task(task)
    folder = tmp_path / "ann"
    folder.mkdir()
    (folder / "coin_video_annots.json").write_bytes('[{"video_uid": "é"}]'.encode("latin-1"))
    with pytest.raises(AnnotationError, match=r"coin_video_annots\.json: not UTF-8"):
        load_dataset("coin", folder)


def test_a_cache_with_nan_names_the_file_video_and_segment(small_cache, tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    bad = tmp_path / "nan"
    (bad / "videos").mkdir(parents=True)
    (bad / "config.json").write_bytes((small_cache / "config.json").read_bytes())
    files = sorted((small_cache / "videos").glob("*.parquet"))
    for f in files:
        (bad / "videos" / f.name).write_bytes(f.read_bytes())
    target = bad / "videos" / files[1].name
    table = pq.read_table(target)
    vsg = table.column("vsg").to_pylist()
    vsg[3] = [float("nan")] + vsg[3][1:]
    i = table.column_names.index("vsg")
    table = table.set_column(i, "vsg", pa.array(vsg, type=table.schema.field("vsg").type))
    pq.write_table(table, target)
    assert main(["evaluate", "--dataset", "coin", "--scores", str(bad)]) == EXIT_BAD_INPUT
    line = one_error_line(capsys.readouterr().err)
    assert str(target) in line and f"video {target.stem!r}" in line
    assert "vsg holds 1 NaN, infinite or negative value(s) (first nan at segment 3)" in line


def test_a_cached_video_shorter_than_its_annotation_is_refused(small_cache, tmp_path, capsys):
    from baglm_nb.stores.scores import ScoreCache

    short = tmp_path / "short"
    (short / "videos").mkdir(parents=True)
    (short / "config.json").write_bytes((small_cache / "config.json").read_bytes())
    for f in sorted((small_cache / "videos").glob("*.parquet")):
        (short / "videos" / f.name).write_bytes(f.read_bytes())
    cache = ScoreCache.open(short)
    uid = cache.uids()[0]
    full = cache.read_video(uid)
    half = full.num_segments // 2
    cache.write_video(uid, full.vsg[:half], full.progress[:half], steps=full.steps)
    args = ["evaluate", "--dataset", "coin", "--scores", str(short)]
    assert main(args) == EXIT_BAD_INPUT
    line = one_error_line(capsys.readouterr().err)
    assert f"{short / 'videos' / uid}.parquet has {half} segments" in line
    assert f"gives {full.num_segments}" in line and "--allow-length-mismatch" in line
    with pytest.warns(UserWarning, match=f"has {half} segments"):
        assert main([*args, "--allow-length-mismatch", "--json"]) == 0
    cache.write_video(uid, full.vsg[:-1], full.progress[:-1], steps=full.steps)  # one segment
    assert main([*args, "--json"]) == 0


def test_score_checks_its_inputs_before_loading_a_model(tmp_path):
    cache_root = tmp_path / "cache"
    # the verb's checks, in this process (the first test of this file: a real process)
    out = run_main(
        "score",
        "--dataset",
        "coin",
        "--video-dir",
        str(tmp_path / "missing"),
        "--model",
        "internvl2.5-8b",
        "--cache-root",
        str(cache_root),
    )
    assert out.returncode == EXIT_BAD_INPUT
    assert one_error_line(out.stderr) == f"error: --video-dir {tmp_path / 'missing'}: not a folder"
    assert not cache_root.exists()  # nothing left behind; no model was looked up
    out = run_main(
        "score",
        "--dataset",
        "coin",
        "--video-dir",
        str(tmp_path),
        "--model",
        "x",
        "--limit",
        "0",
        "--cache-root",
        str(cache_root),
    )
    assert out.returncode == EXIT_BAD_INPUT and "--limit" in one_error_line(out.stderr)


def test_a_huge_goal_is_refused_before_tokenising():
    import time

    import numpy as np

    from baglm_nb.models.prompts import check_task_text
    from baglm_nb.models.scoring import make_scorer

    scorer = make_scorer("random-init:internvl")
    assert scorer.context_tokens == 32768  # the tiny model's text config
    goal = "Make tea. " * 1_000_000  # 10 MB
    frames = np.zeros((1, 4, 3, 64, 64), dtype=np.uint8)
    start = time.perf_counter()
    pattern = (
        r"hold 10,000,0\d\d characters, more than a context of 32,768 tokens can "
        r"hold \(goal: 'Make tea\. Make tea\."
    )
    with pytest.raises(ValueError, match=pattern) as info:
        scorer.score_segments(frames, goal, ["Boil water."])
    took = time.perf_counter() - start
    assert took < 5.0 * machine_stretch() and len(str(info.value)) < 250  # busy_machine.py
    check_task_text("Make tea.", ["Boil water."], context_tokens=32768)  # a normal task passes
    check_task_text(goal, ["a"], context_tokens=None)  # unknown context: no check


def test_the_filter_refuses_probabilities_above_one_naming_the_video():
    import numpy as np

    from baglm_nb.core import sources
    from baglm_nb.core.filtering import run_filter
    from baglm_nb.core.pipeline import run_baglm

    obs = sources.observations("coin", "simulated", limit=2)
    uid = obs.videos[1].uid
    run_baglm(obs, "oracle")  # the simulated source passes
    obs.progress[uid] = obs.progress[uid] * 3.0  # e.g. a file of 3.0s
    with pytest.raises(ValueError, match=rf"coin video '{uid}' \(simulated\): progress holds "
                       r"values above 1 \(max (?:[12]\.\d+|3) at"):  # fmt: skip
        run_baglm(obs, "oracle")
    k = obs.vsg[uid].shape[1] - 1
    vsg = np.full((4, k + 1), 1.0 / (k + 1))
    vsg[2, 0] += 2e-6  # float rounding: accepted
    run_filter(vsg, np.full((4, k, 10), 0.1), np.zeros((k, k)))


def test_a_quick_exit_still_does_what_a_normal_exit_does_for_the_program():
    """``end_process(status, quick=True)`` (``follow``'s end): non-daemon threads finish,
    ``atexit`` handlers run and buffered output is flushed before ``os._exit`` skips the
    interpreter's teardown; the status is the exit status."""
    code = (
        "import atexit, threading, time\n"
        "from baglm_nb.apps.cli.main import end_process\n"
        "atexit.register(lambda: print('atexit ran'))\n"
        "threading.Thread(target=lambda: (time.sleep(0.3), print('thread done'))).start()\n"
        "print('buffered', end='')\n"
        "end_process(3, quick=True)\n"
        "print('not reached')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    assert done.stdout == "bufferedthread done\natexit ran\n", done.stdout
