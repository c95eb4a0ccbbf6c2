"""The weak cases of a hostile pass over the command line: each ends in one ``error:`` (or
``warning:``) line that names what is wrong, and the right exit status; a URL's password is
never printed or written."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from authors_files import write_authors_files
from cli_runs import one_error, run_cli, run_main
from clips import CUP
from test_served_protocol import KEY_ENV, Stub

from baglm_nb.apps.cli.main import EXIT_BAD_INPUT, EXIT_FAILED, main
from baglm_nb.apps.cli.options import run_parameters
from baglm_nb.apps.online.events import EventLog
from baglm_nb.apps.online.terminal import one_line
from baglm_nb.core.simulate import write_simulated_cache
from baglm_nb.inputs.datasets import load_dataset

SECRET = "hunter2-s3cret"


@pytest.fixture
def task(tmp_path) -> Path:
    path = tmp_path / "task.json"
    path.write_text(json.dumps({"goal": "make tea", "steps": ["boil", "pour"]}))
    return path


def follow(source, task: Path, *extra: str) -> int:
    args = ["follow", str(source), "--task", str(task), "--model", "random-init:internvl"]
    return main([*args, *extra])


# -- misnamed messages --------------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["score", "deps"])
def test_model_not_found_names_the_model_and_the_url(verb, tmp_path, capsys, monkeypatch):
    """A vLLM-like server without the model asked for (HTTP 404): under ``score --strategy
    auto`` it is not called a top-20 cap; under ``deps`` it is not one failed pair."""
    monkeypatch.setenv(KEY_ENV, "sk-stub-key")
    stub = Stub()

    def vllm_without_the_model(path, body):
        if body is None:
            return 200, {"object": "list", "data": [{"id": "Qwen/Qwen2.5-VL-7B-Instruct"}]}
        message = f"The model `{body['model']}` does not exist."
        return 404, {"error": {"message": message, "type": "NotFoundError", "code": 404}}

    stub.handler = vllm_without_the_model
    url = stub.url.replace("http://", f"http://bob:{SECRET}@")
    server = ["--base-url", url, "--api-key-env", KEY_ENV, "--cache-root", str(tmp_path / "c"),
              "--no-progress"]  # fmt: skip
    if verb == "score":
        argv = ["score", "--dataset", "coin", "--video-dir", str(tmp_path), "--limit", "1",
                "--model", "openai:qwen-typo", "--family", "qwen2_5_vl", *server]  # fmt: skip
    else:
        argv = ["deps", "--dataset", "coin", "--backend", "openai", "--model", "qwen-typo",
                "--group-limit", "1", *server]  # fmt: skip
    try:
        code = main(argv)
    finally:
        stub.httpd.shutdown()
    assert code == EXIT_BAD_INPUT
    line = one_error(capsys)
    assert line.startswith("error: model 'qwen-typo' not found at http://bob:***@127.0.0.1:")
    assert "does not exist" in line and "it serves 'Qwen/Qwen2.5-VL-7B-Instruct'" in line
    assert "allow-approx" not in line and "top logprobs" not in line and "pair" not in line
    assert SECRET not in line and not list((tmp_path / "c").rglob("*.parquet"))


@pytest.mark.parametrize(
    ("extra", "flag", "innocent"),
    [
        (["--threshold", "-0.1"], "--threshold -0.1", "--patience"),
        (["--threshold", "1.5"], "--threshold 1.5", "--patience"),
        (["--patience", "0"], "--patience 0", "--threshold"),
    ],
)
def test_evaluate_option_check_names_only_the_flag_at_fault(capsys, extra, flag, innocent):
    code = main(["evaluate", "--dataset", "coin", "--scores", "simulated", "--limit", "1", *extra])
    assert code == EXIT_BAD_INPUT
    line = one_error(capsys)
    assert line.startswith(f"error: {flag} is out of range") and innocent not in line


@pytest.mark.parametrize(
    ("extra", "flag", "innocent"),
    [
        (["--timeout", "0"], "--timeout 0", "--reconnect"),
        (["--reconnect", "-1"], "--reconnect -1", "--timeout"),
        (["--reconnect-window", "-2"], "--reconnect-window -2", "--timeout"),
    ],
)
def test_follow_option_check_names_only_the_flag_at_fault(task, capsys, extra, flag, innocent):
    assert follow(CUP, task, *extra) == EXIT_BAD_INPUT
    line = one_error(capsys)
    assert line.startswith(f"error: {flag} is out of range") and innocent not in line


def test_symlink_loop_and_broken_symlink_are_named_as_such(tmp_path, task, capsys):
    (tmp_path / "a.mp4").symlink_to(tmp_path / "b.mp4")
    (tmp_path / "b.mp4").symlink_to(tmp_path / "a.mp4")
    (tmp_path / "broken.mp4").symlink_to(tmp_path / "gone.mp4")
    for live in ((), ("--live",)):
        assert follow(tmp_path / "a.mp4", task, *live) == EXIT_BAD_INPUT
        line = one_error(capsys)
        assert "a.mp4: a symlink loop" in line and "no such" not in line
    assert follow(tmp_path / "broken.mp4", task) == EXIT_BAD_INPUT
    line = one_error(capsys)
    assert f"broken.mp4: a broken symlink (it points to {tmp_path / 'gone.mp4'}" in line


def test_truncated_mp4_names_a_remedy_for_the_command_line(tmp_path, task, capsys):
    cut = tmp_path / "cup_half.mp4"
    data = CUP.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    assert follow(cut, task) == EXIT_BAD_INPUT
    line = one_error(capsys)
    assert "cup_half.mp4: truncated or corrupt" in line
    assert "'ffmpeg -i cup_half.mp4 -c copy <new>.mp4'" in line
    assert "allow_truncated" not in line and "=True" not in line


@pytest.mark.parametrize(
    ("given", "suggested"),
    [
        ("ftp://host:8000/v1", "http://host:8000/v1"),
        ("ftp://host:8000/v1/", "http://host:8000/v1"),
        ("localhost:8000", "http://localhost:8000/v1"),
        (f"ftp://bob:{SECRET}@host/v1", "http://bob:***@host/v1"),
    ],
)
def test_base_url_without_http_suggests_the_right_url(tmp_path, capsys, monkeypatch, given,
                                                       suggested):  # fmt: skip
    monkeypatch.setenv(KEY_ENV, "sk-stub-key")
    code = main(["score", "--dataset", "coin", "--video-dir", str(tmp_path),
                 "--model", "openai:m", "--family", "qwen2_5_vl", "--base-url", given,
                 "--api-key-env", KEY_ENV, "--cache-root", str(tmp_path / "c")])  # fmt: skip
    assert code == EXIT_BAD_INPUT
    line = one_error(capsys)
    assert line.endswith(f"e.g. {suggested}") and "/v1/v1" not in line and SECRET not in line


def test_evaluate_on_another_datasets_cache_names_both_datasets(tmp_path, capsys):
    folder = write_simulated_cache("coin", tmp_path / "cache", limit=1)
    assert main(["evaluate", "--dataset", "htstep", "--scores", str(folder)]) == EXIT_BAD_INPUT
    assert one_error(capsys) == f"error: {folder}: the score cache holds 'coin', not 'htstep'"


def shorten_first_video(folder: Path, drop: int = 3) -> Path:
    path = sorted((folder / "videos").glob("*.parquet"))[0]
    table = pq.read_table(path)
    pq.write_table(table.slice(0, table.num_rows - drop), path)
    return path


def test_allow_length_mismatch_warns_in_one_clean_line(tmp_path):
    folder = write_simulated_cache("coin", tmp_path / "cache", limit=1)
    path = shorten_first_video(folder)
    argv = ["evaluate", "--dataset", "coin", "--scores", str(folder), "--allow-length-mismatch"]
    proc = run_cli(*argv)  # a real process: the library warnings it shows once stay out too
    assert proc.returncode == 0, proc.stderr
    err = [x for x in proc.stderr.splitlines() if x.strip() and "%|" not in x]
    assert len(err) == 1 and err[0].startswith(f"warning: {path} has ") and "segments" in err[0]
    assert "UserWarning" not in err[0] and ".py:" not in err[0]


def test_warning_line_is_one_line_with_urls_redacted():
    from baglm_nb.apps.cli.main import warning_line

    line = warning_line(f"cannot reach\n  rtsp://cam:{SECRET}@10.0.0.2/live", UserWarning)
    assert line == "warning: cannot reach rtsp://cam:***@10.0.0.2/live"
    assert warning_line("old", DeprecationWarning) == "warning: old (DeprecationWarning)"


# -- silent acceptance --------------------------------------------------------------------------


def test_score_cache_with_edited_segment_ids_is_refused(tmp_path, capsys):
    folder = write_simulated_cache("coin", tmp_path / "cache", limit=2)
    path = sorted((folder / "videos").glob("*.parquet"))[0]
    table = pq.read_table(path)
    seg = table.column("segment").to_pylist()
    seg[:4] = [0, 0, 1, 2]
    i = table.schema.get_field_index("segment")
    table = table.set_column(i, table.schema.field(i), pa.array(seg, type=pa.int32()))
    pq.write_table(table, path)
    code = main(["evaluate", "--dataset", "coin", "--scores", str(folder)])
    assert code == EXIT_BAD_INPUT
    line = one_error(capsys)
    assert line.startswith(f"error: {path}: video '{path.stem}': row 1 has segment 0, expected 1")


def test_unknown_pt_files_are_named_and_refused_with_strict(tmp_path, capsys):
    src = tmp_path / "published"
    write_authors_files(src, load_dataset("coin")[:1])
    (src / "notes.pt").write_bytes(b"x")
    (src / "vsg" / "internvl2.5-8b" / "not-a-video.pt").write_bytes(b"x")
    argv = ["import", str(src), "--dataset", "coin", "--no-progress"]
    root = tmp_path / "strict"
    assert main([*argv, "--cache-root", str(root), "--strict"]) == EXIT_BAD_INPUT
    line = one_error(capsys)
    assert "2 .pt file(s) name no coin video or group" in line and "--strict refuses" in line
    assert "notes.pt" in line and "vsg/internvl2.5-8b/not-a-video.pt" in line
    assert not root.exists()

    proc = run_main(*argv, "--cache-root", str(tmp_path / "c"), show_warnings=True)
    assert proc.returncode == 0, proc.stderr
    err = [x for x in proc.stderr.splitlines() if x.strip()]
    assert len(err) == 1 and err[0].startswith(f"warning: {src}: 2 .pt file(s) name no coin")
    assert "notes.pt" in err[0] and "not-a-video.pt" in err[0]


def test_empty_import_leaves_no_cache_folder_behind(tmp_path, capsys):
    (tmp_path / "published").mkdir()
    root = tmp_path / "cache"
    argv = ["import", str(tmp_path / "published"), "--dataset", "coin", "--no-progress"]
    assert main([*argv, "--cache-root", str(root)]) == EXIT_BAD_INPUT
    assert "no .pt files" in one_error(capsys)
    assert not root.exists()
    (root / "mine").mkdir(parents=True)  # a root that exists keeps what was there
    assert main([*argv, "--cache-root", str(root)]) == EXIT_BAD_INPUT
    assert sorted(p.name for p in root.iterdir()) == ["mine"]


# -- secrets ------------------------------------------------------------------------------------


def test_redact_urls_hides_passwords_and_tokens():
    from baglm_nb.inputs.urls import redact_url, redact_urls

    text = f"http://bob:{SECRET}@h:8/v1 and rtsp://tok{SECRET}@cam/x, mail a@b.c, http://h/v1"
    assert (
        redact_urls(text) == "http://bob:***@h:8/v1 and rtsp://***@cam/x, mail a@b.c, http://h/v1"
    )
    assert redact_url(f"http://u:p@ss{SECRET}@h/v1") == "http://u:***@h/v1"


def test_password_in_base_url_never_printed(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-stub-key")
    url = f"http://bob:{SECRET}@127.0.0.1:9/v1"  # nothing listens on port 9
    code = main(["score", "--dataset", "coin", "--video-dir", str(tmp_path),
                 "--model", "openai:m", "--family", "qwen2_5_vl", "--base-url", url,
                 "--api-key-env", KEY_ENV, "--request-attempts", "1",
                 "--cache-root", str(tmp_path / "c"), "--no-progress"])  # fmt: skip
    assert code == EXIT_FAILED
    captured = capsys.readouterr()
    assert SECRET not in captured.out + captured.err
    assert "http://bob:***@127.0.0.1:9/v1" in captured.err


def test_password_in_a_stream_url_never_printed_or_written(tmp_path, task, capsys):
    from baglm_nb.inputs.urls import redact_url

    url = f"rtsp://cam:{SECRET}@127.0.0.1:9/live"
    code = follow(url, task, "--timeout", "1", "--reconnect", "0")
    captured = capsys.readouterr()
    assert code != 0 and SECRET not in captured.out + captured.err
    assert "rtsp://cam:***@127.0.0.1:9/live" in captured.err
    assert SECRET not in one_line(url) and SECRET not in redact_url(url)
    with EventLog(tmp_path / "events.jsonl") as log:
        log.write({"event": "end", "reason": f"{url}: stopped"})
    assert SECRET not in (tmp_path / "events.jsonl").read_text()
    args = type("Args", (), {})()
    args.__dict__.update(source=url, base_url=url, func=print, limit=3)
    params = run_parameters(args)
    assert params == {"source": redact_url(url), "base_url": redact_url(url), "limit": 3}
    assert SECRET not in json.dumps(params)


def test_warnings_module_restored_after_a_verb():
    before = warnings.formatwarning
    main(["evaluate", "--dataset", "coin", "--scores", "simulated", "--limit", "1"])
    assert warnings.formatwarning is before
