"""Cases no one had tried, each kept as a test: a full disk and a read-only cache folder during
``score``, ``simulate`` and ``deps``; two processes writing one cache at once; ``LANG=C``, no
``HOME`` and a path with spaces; alerts on a one-step task and dependency matrices with NaN.

How the file system is made to fail, so that the tests hold in CI as root (where ``chmod`` does
not stop a write, and ``mount`` needs a privilege a container may lack):

- **full disk**: ``ENOSPC`` raised by ``os.fsync`` of a cache file after the first ``n`` files,
  where a full disk reports it for data that did not fit (the same ``OSError`` the kernel gives;
  ``tests/test_cli_names.py`` writes to ``/dev/full`` for the real errno at ``write``);
- **read-only folder**: ``EROFS`` raised by ``os.mkdir`` and ``os.open`` for paths under the
  cache root, as a read-only mount answers; and, with no injection at all, a regular file where
  the cache folder should be (``ENOTDIR``).
"""

from __future__ import annotations

import errno
import json
import math
import os
import shutil
import stat
import time
from pathlib import Path

import numpy as np
import pytest
from cli_runs import one_error, run_cli, run_main
from clips import coin_annotations, short_clips
from test_scoring import STEPS
from test_served_protocol import KEY_ENV, Stub, chat_answer, entry

from baglm_nb.apps.cli.main import EXIT_BAD_INPUT, EXIT_FAILED, main
from baglm_nb.stores.dependencies import DependencyCache
from baglm_nb.stores.keys import DependencyKey
from baglm_nb.stores.scores import ScoreCache

ROOT = Path(__file__).resolve().parent.parent


def yes_server() -> Stub:
    """An OpenAI-compatible stub answering every dependency question P(Yes) = 0.7."""
    stub = Stub()

    def handle(path, body):
        if body is None:
            return 200, {"data": [{"id": "m"}]}
        return 200, chat_answer([entry("Yes", math.log(0.7)), entry("No", math.log(0.3))])

    stub.handler = handle
    return stub


@pytest.fixture
def stub(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-stub-key")
    server = yes_server()
    yield server
    server.httpd.shutdown()


def verb_argv(verb: str, root: Path, tmp_path: Path, url: str) -> list[str]:
    """The command line of ``verb`` writing two entries (videos or task groups) under ``root``."""
    if verb == "simulate":
        return ["simulate", "--dataset", "coin", "--cache-root", str(root), "--limit", "2"]
    if verb == "score":
        # two 2-second clips cut from cup.mp4 (one segment each): the same decode, score and
        # write path per video as the full test clips, at a fraction of the scoring
        clips, uids = tmp_path / "clips", ["cup", "box"]
        if not clips.exists():
            short_clips(clips, uids, seconds=2.0)
        ann = coin_annotations(tmp_path / "ann", uids, STEPS, seconds=2.0)
        return ["score", "--dataset", "coin", "--video-dir", str(clips), "--annotations",
                str(ann), "--model", "random-init:internvl", "--cache-root", str(root),
                "--no-progress", "--limit", "2"]  # fmt: skip
    return ["deps", "--dataset", "coin", "--backend", "openai", "--model", "m",
            "--base-url", url, "--api-key-env", KEY_ENV, "--group-limit", "2",
            "--request-attempts", "1", "--cache-root", str(root), "--no-progress"]  # fmt: skip


def stored(root: Path) -> list[Path]:
    """The entries a cache root holds (score files and dependency matrices)."""
    return sorted(p for p in root.rglob("*.parquet") if p.parent.name in ("videos", "groups"))


def temp_files(root: Path) -> list[Path]:
    return [p for p in root.rglob(".tmp-*")] if root.exists() else []


def readable(root: Path) -> int:
    """How many entries of the caches under ``root`` read back whole."""
    n = 0
    for config in root.rglob("config.json"):
        kind = json.loads(config.read_text())["kind"]
        if kind == "scores":
            cache = ScoreCache.open(config.parent)
            n += sum(cache.read_video(uid).vsg.size > 0 for uid in cache.uids())
        else:
            cache = DependencyCache.open(config.parent)
            n += sum(cache.read(g) is not None for g in cache.groups())
    return n


@pytest.mark.parametrize("verb", ["simulate", "score", "deps"])
def test_a_full_disk_is_one_line_and_nothing_written_is_lost(verb, tmp_path, capsys, stub,
                                                              monkeypatch):  # fmt: skip
    root = tmp_path / "cache"
    argv = verb_argv(verb, root, tmp_path, stub.url)
    real_fsync = os.fsync

    def fsync_until_full(fd):
        """No space for a file under ``root`` once one entry is stored there."""
        if stat.S_ISREG(os.fstat(fd).st_mode) and stored(root):
            if str(root) in os.readlink(f"/proc/self/fd/{fd}"):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync_until_full)
    code = main(argv)
    line = one_error(capsys)
    assert code == EXIT_FAILED, line
    assert "No space left on device; free some space and run the same command again" in line
    assert str(root) in line and not temp_files(root)
    kept = readable(root)
    assert kept >= 1  # what was written before the disk filled up stays, whole

    monkeypatch.setattr(os, "fsync", real_fsync)  # space freed: the run resumes and finishes
    assert main(argv) == 0
    capsys.readouterr()
    assert readable(root) == 2 and not temp_files(root)


def read_only_below(monkeypatch, root: Path) -> None:
    """``os.mkdir`` and ``os.open`` (for writing) answer EROFS under ``root``."""
    real_mkdir, real_open = os.mkdir, os.open

    def refused(path) -> bool:
        return str(os.path.abspath(path)).startswith(str(root))

    def mkdir(path, mode=0o777, *, dir_fd=None):
        if refused(path):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_mkdir(path, mode, dir_fd=dir_fd)

    def open_(path, flags, mode=0o777, *, dir_fd=None):
        if refused(path) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "open", open_)


@pytest.mark.parametrize("verb", ["simulate", "score", "deps"])
def test_a_read_only_cache_folder_is_bad_input_in_one_line(verb, tmp_path, capsys, stub,
                                                            monkeypatch):  # fmt: skip
    root = tmp_path / "cache"
    argv = verb_argv(verb, root, tmp_path, stub.url)
    read_only_below(monkeypatch, root)
    assert main(argv) == EXIT_BAD_INPUT
    line = one_error(capsys)
    assert line.startswith(f"error: {root}") and "Read-only file system; give a writable" in line
    assert not root.exists()


@pytest.mark.parametrize("verb", ["simulate", "score", "deps"])
def test_a_file_where_the_cache_folder_should_be(verb, tmp_path, capsys, stub):
    root = tmp_path / "cache"
    root.write_text("not a folder")
    assert main(verb_argv(verb, root, tmp_path, stub.url)) == EXIT_BAD_INPUT
    line = one_error(capsys)
    assert line == (
        f"error: {root}: Not a directory; a file where a folder should be: move it, or give "
        "another folder"
    )
    assert root.read_text() == "not a folder"


# -- environment --------------------------------------------------------------------------------


def test_lang_c_no_home_and_a_repository_path_with_spaces(tmp_path):
    """The package and its data copied under a path with spaces and a non-ASCII letter, run in
    the C locale without ``HOME``: ``simulate`` writes into the default ``data/cache`` there and
    ``evaluate`` reads it, with the same R@1 as the same commands in this checkout."""
    # the same commands in this checkout first, in this process: they also leave numba's
    # compiled kernels in the checkout's __pycache__ folders, which the copy takes along (as a
    # checkout that has run holds them; the index is keyed by the source's size and mtime,
    # which copytree keeps), so the two processes load them instead of compiling them again:
    # what is tested, a path with spaces, the C locale and no HOME, is the same
    here = tmp_path / "here"
    made = run_main("simulate", "--dataset", "coin", "--limit", "2", "--cache-root", str(here))
    assert made.returncode == 0, made.stderr
    same = run_main("evaluate", "--dataset", "coin", "--scores", str(here), "--json")
    assert same.returncode == 0, same.stderr

    repo = tmp_path / "my repo (copy) è"
    shutil.copytree(ROOT / "baglm_nb", repo / "baglm_nb")
    shutil.copytree(ROOT / "data" / "annotations", repo / "data" / "annotations")
    env = {k: v for k, v in os.environ.items() if k not in ("HOME", "LANG", "LC_ALL", "LC_CTYPE")}
    env.update(LANG="C", LC_ALL="C", PYTHONPATH=str(repo))
    env.pop("BAGLM_DATA_DIR", None)
    env.pop("MPLCONFIGDIR", None)
    sim = run_cli("simulate", "--dataset", "coin", "--limit", "2", env=env, cwd=repo)
    assert sim.returncode == 0, sim.stderr
    cache = repo / "data" / "cache"
    assert len(list(cache.rglob("*.parquet"))) == 2
    argv = ["evaluate", "--dataset", "coin", "--scores", str(cache), "--json"]
    ev = run_cli(*argv, env=env, cwd=repo)
    assert ev.returncode == 0, ev.stderr
    assert "Traceback" not in ev.stderr and "UnicodeEncodeError" not in ev.stderr
    result = json.loads(ev.stdout.strip().splitlines()[-1])
    assert result["videos"] == 2

    assert json.loads(same.stdout.strip().splitlines()[-1])["baglm"] == result["baglm"]


# -- two writers --------------------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["simulate", "score"])
def test_two_processes_writing_one_cache_at_once(verb, tmp_path, stub, cli_forks):
    """Both runs succeed, and the cache holds each entry once, whole, equal to one run's.

    One writer is a ``python -m baglm_nb`` process of its own, the other this process (the
    same verb in-process): it starts as soon as the other process has opened the cache, so
    that both write their entries at once (two new processes cost two interpreters' and
    models' start for the same race). The other process is forked from the session's warm
    Python (:mod:`cli_forks`): a process with its own pid, file descriptors, locks and exit
    status, as the race needs, without importing torch and transformers again."""
    root, alone = tmp_path / "shared", tmp_path / "alone"
    argv = verb_argv(verb, root, tmp_path, stub.url)
    proc = cli_forks.model.start(argv, cwd=ROOT)
    try:
        deadline = time.monotonic() + 600
        while not list(root.rglob("config.json")) and proc.poll() is None:
            assert time.monotonic() < deadline, "the new process never opened the cache"
            time.sleep(0.01)
        here = run_main(*argv)
        _, err = proc.communicate(timeout=600)
    finally:
        proc.kill()  # ended already, unless this test failed first
    for status, stderr in ((proc.returncode, err), (here.returncode, here.stderr)):
        assert status == 0, stderr
        assert "Traceback" not in stderr
    assert not temp_files(root) and len(stored(root)) == 2
    assert main(verb_argv(verb, alone, tmp_path, stub.url)) == 0
    shared = ScoreCache.open(next(root.rglob("config.json")).parent)
    single = ScoreCache.open(next(alone.rglob("config.json")).parent)
    assert shared.uids() == single.uids()
    for uid in single.uids():
        # the same scores up to the last bits (each process computes its own, with its own
        # threads); a torn or mixed entry would differ far more, or fail to read
        np.testing.assert_allclose(
            shared.read_video(uid).vsg, single.read_video(uid).vsg, rtol=1e-5, atol=1e-9
        )


# -- notebooks: bad parameters --------------------------------------------------------------------


def test_papermill_with_a_folder_that_does_not_exist_names_the_parameter(tmp_path):
    from cli_runs import papermill_cli  # papermill's command line, in this process

    argv = [str(ROOT / "notebooks" / "03_main_results.ipynb"), str(tmp_path / "out.ipynb"),
            "-p", "scores", "/nonexistent", "--cwd", str(ROOT / "notebooks")]  # fmt: skip
    status, last = papermill_cli(argv, PYTHONPATH=str(ROOT))
    assert status != 0
    assert last == (
        "ValueError: notebook parameter scores='/nonexistent': no such folder '/nonexistent' "
        "(nor a named setting such as 'simulated' or 'oracle')"
    )


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"limit": -1}, "notebook parameter limit=-1: expected a whole number >= 1, or None"),
        ({"dataset": "coins"}, "notebook parameter dataset='coins': expected one of ['coin',"),
        ({"datasets": ["coin", "x"]}, "notebook parameter datasets=['coin', 'x']: expected a"),
        ({"scores": {"coin": "/nope"}}, "notebook parameter scores={'coin': '/nope'}: no such "),
        ({"deps": "/nope"}, "notebook parameter deps='/nope': no such folder '/nope'"),
        ({"duration_scores": ["/nope"]}, "notebook parameter duration_scores=['/nope']: no such"),
        ({"video_dir": "/nope"}, "notebook parameter video_dir='/nope': no such folder"),
    ],
)
def test_bad_notebook_parameter_is_named(params, message):
    from baglm_nb.apps.parameters import check_parameters

    with pytest.raises(ValueError) as info:
        check_parameters(params)
    assert str(info.value).startswith(message)


def test_named_settings_and_existing_folders_pass_the_parameter_check(tmp_path):
    from baglm_nb.apps.parameters import check_parameters

    ok = {"scores": {"coin": str(tmp_path)}, "deps": "simulated-llm:gpt:held-out",
          "sensitivity_deps": ["simulated-llm:llama", "oracle", "noisy-oracle:0.2"],
          "llm_b_deps": {}, "video_dir": None, "limit": None}  # fmt: skip
    assert check_parameters(ok) == ok


# -- alerts on a one-step task; D with NaN -------------------------------------------------------


def write_task(path: Path, steps: list[str], dependency=None) -> Path:
    data = {"goal": "make tea", "steps": steps}
    if dependency is not None:
        data["dependency"] = dependency
    path.write_text(json.dumps(data))
    return path


def test_alerts_on_a_one_step_task(tmp_path, capsys):
    from clips import CUP

    task = write_task(tmp_path / "one.json", ["pour"], [[0.0]])
    base = ["follow", str(CUP), "--task", str(task), "--model", "random-init:internvl"]
    assert main([*base, "--alerts"]) == EXIT_BAD_INPUT
    assert one_error(capsys) == (
        f"error: --alerts needs a dependency matrix D, and the task file {task} has no "
        "prerequisite in 'dependency' (a task of one step: no other step can come before it)"
    )
    assert main(base) == 0  # alerts off by default, said once; the run follows its one step
    out = capsys.readouterr().out
    assert "alerts: off (the task file" in out and "a task of one step" in out
    assert "current step: pour" in out


def test_a_task_file_d_with_nan_names_the_entry(tmp_path, capsys):
    from clips import CUP

    task = tmp_path / "nan.json"
    task.write_text('{"goal": "g", "steps": ["a", "b"], "dependency": [[0, NaN], [1, 0]]}')
    assert main(["follow", str(CUP), "--task", str(task), "--model", "random-init:internvl"]) == 2
    assert one_error(capsys) == (
        f"error: {task}: field 'dependency' must hold probabilities in [0, 1]; row 0, column 1 "
        "is nan (1 such value(s))"
    )


def test_d_files_with_nan_are_refused_naming_the_file(tmp_path, capsys):
    """An authors' prerequisite file and a dependency-cache entry with a NaN: each is refused in
    one line naming the file; nothing is read as a number."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import torch
    from authors_files import write_authors_files

    from baglm_nb.inputs.datasets import load_dataset

    video = load_dataset("coin")[0]
    src = tmp_path / "published"
    write_authors_files(src, [video])
    prereq = next((src / "prereq").rglob(f"{video.group}.pt"))
    matrix = torch.load(prereq)
    matrix[0, 1] = float("nan")
    torch.save(matrix, prereq)
    argv = ["import", str(src), "--dataset", "coin", "--cache-root", str(tmp_path / "c")]
    assert main([*argv, "--no-progress"]) == EXIT_FAILED
    err = capsys.readouterr().err
    assert f"refused: {prereq}: row 0, column 1: value nan (NaN or inf)" in err

    root = tmp_path / "deps"
    cache = DependencyCache(root, DependencyKey("coin", "llm", "v1"))
    steps = list(video.steps)
    cache.write(video.group, steps, np.zeros((len(steps), len(steps))))
    path = next(cache.path.rglob("*.parquet"))
    table = pq.read_table(path)
    p = table.column("p_yes").to_pylist()
    p[1] = float("nan")
    i = table.schema.get_field_index("p_yes")
    pq.write_table(table.set_column(i, table.schema.field(i), pa.array(p)), path)
    code = main(["evaluate", "--dataset", "coin", "--scores", "simulated", "--limit", "1",
                 "--deps", str(cache.path)])  # fmt: skip
    assert code == EXIT_BAD_INPUT
    line = one_error(capsys)
    assert line.endswith(f"{path}: pairs are missing or p_yes has NaN")
