"""Misnamed failures: each ends in one line naming the server, URL, file or
pair, exit 1 for a failed run and 2 for bad input."""

from __future__ import annotations

import errno
import json
import math
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from cli_runs import one_error, run_main
from clips import short_clips
from test_scoring import CLIPS, write_annotations
from test_served_protocol import GOAL, KEY_ENV, STEPS, Stub

from baglm_nb.apps.cli.main import EXIT_BAD_INPUT, EXIT_FAILED, error_line, exit_status, main
from baglm_nb.models import openai_client
from baglm_nb.models.openai_client import Connection, ServerError
from baglm_nb.models.questions import ScoringError
from baglm_nb.stores.atomic import atomic_write


class RawServer:
    """Answers every request with ``(status, body bytes)`` from ``reply``; 127.0.0.1 only."""

    def __init__(self, body: bytes, status: int = 200) -> None:
        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                if self.command == "POST":
                    self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer  # noqa: N815

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-stub-key")


def test_a_full_disk_names_the_path_and_is_a_failed_run(tmp_path):
    target = tmp_path / "cache" / "videos" / "v.parquet"

    def write(f):
        with open("/dev/full", "wb") as full:  # the OS refuses the write: ENOSPC
            full.write(b"x" * 4096)
            full.flush()

    with pytest.raises(OSError) as info:
        atomic_write(target, write)
    exc = info.value
    assert exc.errno == errno.ENOSPC and exc.filename == str(target)
    assert not list(target.parent.iterdir())  # no temp file left
    line = error_line(exc)
    assert str(target) in line and "No space left on device" in line and "unexpected" not in line
    assert exit_status(exc) == EXIT_FAILED


def test_a_base_url_without_scheme_is_bad_input(tmp_path, capsys, key):
    code = main(
        [
            "deps",
            "--dataset",
            "coin",
            "--backend",
            "openai",
            "--model",
            "m",
            "--base-url",
            "localhost:8000",
            "--api-key-env",
            KEY_ENV,
            "--group-limit",
            "1",
            "--cache-root",
            str(tmp_path),
            "--no-progress",
        ]
    )
    assert code == EXIT_BAD_INPUT
    line = one_error(capsys, other_lines=True)
    assert "--base-url 'localhost:8000' is not an http(s) URL" in line
    assert "http://localhost:8000/v1" in line
    ann = write_annotations(tmp_path / "ann", ["cup"])
    code = main(
        [
            "score",
            "--dataset",
            "coin",
            "--video-dir",
            str(CLIPS),
            "--annotations",
            str(ann),
            "--model",
            "m",
            "--backend",
            "openai",
            "--base-url",
            "localhost:8000",
            "--api-key-env",
            KEY_ENV,
            "--family",
            "qwen2_5_vl",
            "--cache-root",
            str(tmp_path / "c"),
            "--no-progress",
        ]
    )
    assert code == EXIT_BAD_INPUT
    assert "--base-url 'localhost:8000'" in one_error(capsys, other_lines=True)


def test_a_hanging_server_prints_a_waiting_line(monkeypatch, capsys, key):
    monkeypatch.setattr(openai_client, "WAIT_NOTICE_S", 0.2)
    with socket.create_server(("127.0.0.1", 0)) as hang:  # accepts, never answers
        url = f"http://127.0.0.1:{hang.getsockname()[1]}/v1"
        conn = Connection(url, KEY_ENV, timeout=1.0, max_attempts=1)
        with pytest.raises(ServerError, match="no answer from the server at"):
            conn.call(lambda c: c.models.list())
    err = capsys.readouterr().err
    assert f"waiting for the server at {url}: no answer after 0.2 s (up to 1 s per request, " in err
    assert err.count("waiting for") == 1


def test_garbage_under_strategy_auto_is_not_called_a_top20_cap(tmp_path, capsys, key):
    garbage = RawServer(b"<html>this is not an OpenAI server</html>")
    try:
        ann = write_annotations(tmp_path / "ann", ["cup"])
        code = main(
            [
                "score",
                "--dataset",
                "coin",
                "--video-dir",
                str(CLIPS),
                "--annotations",
                str(ann),
                "--model",
                "m",
                "--backend",
                "openai",
                "--base-url",
                garbage.url,
                "--api-key-env",
                KEY_ENV,
                "--family",
                "qwen2_5_vl",
                "--cache-root",
                str(tmp_path / "c"),
                "--no-progress",
                "--request-attempts",
                "1",
            ]
        )
    finally:
        garbage.close()
    assert code == EXIT_FAILED
    line = one_error(capsys, other_lines=True)
    assert f"the server at {garbage.url} answered the probe with a malformed response" in line
    assert "top" not in line and "--allow-approx" not in line


def test_deps_on_truncated_json_names_the_server_and_the_pair(tmp_path, capsys, key):
    cut = RawServer(b'{"id": "x", "object": "chat.completion", "choices": [{"ind')
    try:
        code = main(
            [
                "deps",
                "--dataset",
                "coin",
                "--backend",
                "openai",
                "--model",
                "m",
                "--base-url",
                cut.url,
                "--api-key-env",
                KEY_ENV,
                "--group-limit",
                "1",
                "--request-attempts",
                "1",
                "--cache-root",
                str(tmp_path),
                "--no-progress",
            ]
        )
    finally:
        cut.close()
    assert code == EXIT_FAILED
    line = one_error(capsys, other_lines=True)
    assert f"the server at {cut.url} answered with a malformed body" in line
    assert "D[0, 0]" in line and "group" in line


def test_a_nan_from_the_server_in_follow_is_a_failed_run(tmp_path, capsys, key):
    stub = Stub()

    def nan_vsg(path, body):
        status, data = stub.full_vocab(path, body)
        if body is not None:
            data["choices"][0]["logprobs"]["content"][0]["top_logprobs"][0]["logprob"] = math.nan
        return status, data

    stub.handler = nan_vsg
    try:
        videos = short_clips(tmp_path / "videos", ["v1"], 2.2)
        task = tmp_path / "task.json"
        task.write_text(json.dumps({"goal": GOAL, "steps": STEPS}))
        code = main(
            [
                "follow",
                str(videos / "v1.mp4"),
                "--task",
                str(task),
                "--model",
                "openai:m",
                "--base-url",
                stub.url,
                "--api-key-env",
                KEY_ENV,
                "--family",
                "qwen2_5_vl",
                "--strategy",
                "full-vocab",
                "--request-timeout",
                "10",
                "--jsonl",
                str(tmp_path / "events.jsonl"),
            ]
        )
    finally:
        stub.httpd.shutdown()
    assert code == EXIT_FAILED
    assert "invalid log-probability nan" in capsys.readouterr().err
    assert exit_status(ScoringError("x")) == EXIT_FAILED


def test_score_with_failed_videos_prints_one_error_line(tmp_path):
    ann = write_annotations(tmp_path / "ann", ["cup", "no_such_clip"])
    argv = ["score", "--dataset", "coin", "--video-dir", str(CLIPS), "--annotations", str(ann),
            "--model", "random-init:internvl", "--cache-root", str(tmp_path / "c"),
            "--no-progress"]  # fmt: skip
    done = run_main(*argv)  # the verb's status and lines, in this process
    assert done.returncode == EXIT_FAILED
    summary = json.loads(done.stdout)
    assert summary["scored"] == 1 and list(summary["failed"]) == ["no_such_clip"]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and "Traceback" not in done.stderr
    assert errors[0].startswith("error: 1 video(s) could not be scored (first: no_such_clip: ")
    assert "failures.json" in errors[0]
