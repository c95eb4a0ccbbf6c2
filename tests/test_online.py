"""Online grounding: the streaming filter, hysteresis, task files, replay and the CLI."""

from __future__ import annotations

import json
import re
import signal
import sys
import time

import numpy as np
import pytest
from cli_runs import run_main

from baglm_nb.apps.online import replay
from baglm_nb.apps.online.report import RunReport, render_html
from baglm_nb.core.filtering import run_filter
from baglm_nb.core.online import Hysteresis, OnlineGrounder
from baglm_nb.core.oracles import oracle_dependency
from baglm_nb.core.simulate import simulate_video, write_simulated_cache
from baglm_nb.inputs.datasets import load_dataset
from baglm_nb.inputs.tasks import Task, load_task


@pytest.fixture(scope="module")
def video_and_scores():
    video = load_dataset("htstep")[0]
    return video, simulate_video(video)


@pytest.mark.parametrize("stepping", ["second", "segment"])
@pytest.mark.parametrize("transition", ["static", "both"])
def test_pushing_segments_equals_the_batch_filter(video_and_scores, stepping, transition):
    video, sim = video_and_scores
    dep = oracle_dependency(video)
    g = OnlineGrounder(None, video.goal, video.steps, dep, transition=transition, stepping=stepping)
    online = np.stack(
        [g.push_scores(v, p).belief for v, p in zip(sim.vsg, sim.progress, strict=False)]
    )
    per_row = np.repeat(sim.vsg, 2, axis=0), np.repeat(sim.progress, 2, axis=0)
    batch = run_filter(*per_row, dep, transition=transition, stepping=stepping)
    # the belief after a segment is the batch belief at the segment's last row
    np.testing.assert_allclose(online, batch[1::2], rtol=0, atol=1e-12)
    assert g.state.belief.shape == (video.num_steps + 1,)  # O(K) state
    g.reset()
    assert g.segment == 0 and g.push_scores(sim.vsg[0], sim.progress[0]).segment == 0


def test_estimate_fields(video_and_scores):
    video, sim = video_and_scores
    g = OnlineGrounder(None, video.goal, video.steps, oracle_dependency(video))
    est = g.push_scores(sim.vsg[0], sim.progress[0], decode_s=0.01, score_s=0.02)
    assert est.belief.sum() == pytest.approx(1.0)
    assert est.step == int(np.argmax(est.belief)) and est.confidence == est.belief.max()
    assert est.progress.shape == (video.num_steps,) and (est.t_start, est.t_end) == (0.0, 2.0)
    assert set(est.latency) == {"decode", "score", "filter"} and est.latency["filter"] > 0
    line = est.to_json()
    assert json.loads(json.dumps(line))["step_name"] == est.step_name


def test_hysteresis_waits_for_patience_and_threshold():
    h = Hysteresis(threshold=0.6, patience=3)
    seq = [
        (1, 0.9),
        (1, 0.9),
        (2, 0.9),
        (2, 0.7),
        (2, 0.65),
        (2, 0.9),
        (3, 0.5),
        (3, 0.5),
        (3, 0.5),
        (1, 0.9),
        (1, 0.9),
        (1, 0.9),
    ]
    announced = [h.update(s, c) for s, c in seq]
    assert announced == [None, None, None, None, 2, None, None, None, None, None, None, 1]
    assert h.current == 1
    with pytest.raises(ValueError, match="patience"):
        Hysteresis(patience=0)


def test_task_files(tmp_path):
    path = tmp_path / "task.json"
    path.write_text(json.dumps({"goal": "Make tea", "steps": ["boil water", "steep", "pour"]}))
    task = load_task(path)
    assert task.steps == ("boil water", "steep", "pour") and task.ordered
    np.testing.assert_array_equal(task.dependency_matrix(), [[0, 0, 0], [1, 0, 0], [0, 1, 0]])
    yaml_path = tmp_path / "task.yaml"
    yaml_path.write_text("goal: Make tea\nsteps: [a, b]\nordered: false\n")
    assert not load_task(yaml_path).dependency_matrix().any()
    cases = [
        ({"steps": ["a"]}, "'goal'"),
        ({"goal": "g", "steps": []}, "'steps'"),
        ({"goal": "g", "steps": ["a", 3]}, r"'steps\[1\]'"),
        ({"goal": "g", "steps": ["a", "a"]}, "duplicate"),
        ({"goal": "g", "steps": ["a", "b"], "ordered": "yes"}, "'ordered'"),
        ({"goal": "g", "steps": ["a", "b"], "dependency": [[0, 1]]}, "'dependency'"),
        ({"goal": "g", "steps": ["a", "b"], "dependency": [[0, 2], [0, 0]]}, r"\[0, 1\]"),
        ({"goal": "g", "steps": ["a"], "colour": 1}, "'colour'"),
    ]
    for data, message in cases:
        path.write_text(json.dumps(data))
        with pytest.raises(ValueError, match=message) as err:
            load_task(path)
        assert "task.json" in str(err.value)
    path.write_text("{oops")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_task(path)
    assert Task("g", ("a", "b"), dependency=np.eye(2)).dependency_matrix()[0, 0] == 1


def test_replay_pace(video_and_scores):
    video, sim = video_and_scores
    g = OnlineGrounder(None, video.goal, video.steps, oracle_dependency(video))
    start = time.perf_counter()
    out = list(replay(g, sim.vsg[:4], sim.progress[:4], pace="realtime", speed=20.0))
    assert len(out) == 4 and time.perf_counter() - start >= 3 * 2 / 20.0 - 0.01
    assert [e.segment for e in out] == [0, 1, 2, 3]


def test_html_report_is_self_contained(video_and_scores):
    """A replay's report: self-contained, and its latency section holds no all-zero decode and
    score rows (nothing was decoded or scored): the filter's time only, and a line saying why."""
    video, sim = video_and_scores
    g = OnlineGrounder(None, video.goal, video.steps, oracle_dependency(video), threshold=0.3)
    ests = [g.push_scores(v, p) for v, p in zip(sim.vsg[:60], sim.progress[:60], strict=False)]
    page = render_html(RunReport(ests, video.steps, title="Run <1>"))
    assert "Run &lt;1&gt;" in page and page.count("data:image/png;base64,") == 1  # no latency bars
    assert 'id="no-truth"' in page and page.count("<tr>") >= video.num_steps  # steps table
    assert "http://" not in page and "https://" not in page and "<script" not in page
    latency = page.split("<h2>Latency per segment</h2>", 1)[1]
    assert 'id="latency-note"' in latency and "no model ran" in latency
    rows = re.findall(r"<tr><td>(\w+)</td><td>([\d.]+)</td><td>([\d.]+)</td></tr>", latency)
    filter_ms = sorted(e.latency["filter"] * 1000 for e in ests)
    assert [r[0] for r in rows] == ["filter"] and float(rows[0][2]) > 0
    assert float(rows[0][1]) == pytest.approx(float(np.median(filter_ms)), abs=1e-3)
    assert all(e.latency["decode"] == e.latency["score"] == 0.0 for e in ests)


def _follow_cmd(cache, uid, *extra):
    return [sys.executable, "-m", "baglm_nb", "follow", "--replay", str(cache), *extra, "--", uid]


def test_cli_replay_writes_log_and_report(tmp_path):
    video = load_dataset("htstep")[0]
    cache = write_simulated_cache("htstep", tmp_path, videos=[video])
    log, report = tmp_path / "events.jsonl", tmp_path / "report.html"
    # in this process (the verb's output; test_cli_ctrl_c_keeps_a_complete_log runs a process)
    run = run_main(
        *_follow_cmd(
            cache, video.uid, "--jsonl", str(log), "--html", str(report), "--threshold", "0.5"
        )[3:]
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert run.stderr == ""  # nothing but the announcements, on stdout
    events = [json.loads(x) for x in log.read_text().splitlines()]
    lines = [x for x in events if x["event"] == "segment"]  # alerts are events of their own
    assert len(lines) == video.num_rows() // 2 and lines[0]["source"].startswith("replay of")
    changes = [x for x in lines if x["announced"]]
    assert out.count("] step: ") == len(changes) > 0
    assert "status: 283 segments" in out and report.stat().st_size > 10_000


def test_cli_ctrl_c_keeps_a_complete_log(tmp_path, cli_forks):
    video = load_dataset("htstep")[0]
    cache = write_simulated_cache("htstep", tmp_path, videos=[video])
    log = tmp_path / "events.jsonl"
    cmd = _follow_cmd(
        cache,
        video.uid,
        "--pace",
        "realtime",
        "--jsonl",
        str(log),
        "--html",
        str(tmp_path / "r.html"),
    )
    # A process of its own, forked from the session's warm Python (:mod:`cli_forks`), with
    # Ctrl-C's handler as a new interpreter installs it (also under a test runner started in
    # the background, which ignores SIGINT): the signal reaches a real process mid-run.
    proc = cli_forks.light.start(cmd[3:])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not log.exists() or len(log.read_text()) < 10):
        time.sleep(0.2)
    time.sleep(0.5)  # a line logged, the next one on its way: Ctrl-C mid-run
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted (Ctrl-C)" in out
    lines = log.read_text().splitlines()
    assert 1 <= len(lines) < 283
    assert [json.loads(x)["segment"] for x in lines] == list(range(len(lines)))
    assert (tmp_path / "r.html").exists()
