"""Alerts (core/alerts.py): closed-form cases, a literal loop of the definitions on real
annotations, mistakes injected into real annotation files (analyses/mistakes.py), the alert
table (analyses/alerts.py), and ``follow`` / ``alerts`` on the command line."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest
from cli_runs import follow_args, one_error_line, run_main

from baglm_nb.analyses.alerts import alert_table, video_alerts
from baglm_nb.analyses.mistakes import dependent_pairs, inject, mistakes_of
from baglm_nb.core import sources
from baglm_nb.core.alerts import (
    DONE_LEVEL,
    AlertMonitor,
    alerts_for,
    has_dependencies,
    last_steps,
    needs,
)
from baglm_nb.core.online import OnlineGrounder
from baglm_nb.core.simulate import default_params, simulate_video
from baglm_nb.inputs.datasets import load_dataset
from baglm_nb.inputs.grid import first_starts

CHAIN = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=float)  # 1 needs 0, 2 needs 1
STEPS = ("a", "b", "c")
UID = "-25-1nbOki0"  # HT-Step, K = 10


def _zeros(s: int, k: int = 3) -> np.ndarray:
    return np.zeros((s, k))


def _key(alerts) -> list[tuple]:
    return [(a.kind, a.segment, a.missing, a.needed_by) for a in alerts]


# --------------------------------------------------------------------------------------------
# closed-form cases


def test_needs_and_last_steps():
    need = needs(CHAIN, 0.5)
    assert need.tolist() == [[False] * 3, [True, False, False], [False, True, False]]
    assert last_steps(need).tolist() == [False, False, True]
    d = np.array([[1.0, 0.5], [0.49, 1.0]])
    assert needs(d, 0.5).tolist() == [[False, True], [False, False]]  # >=, diagonal never
    assert needs(d, 0.0).tolist() == [[False, True], [True, False]]
    assert not has_dependencies(np.eye(3)) and not has_dependencies(None)
    assert has_dependencies(CHAIN)
    with pytest.raises(ValueError, match=r"threshold must be in \[0, 1\], got 1.5"):
        needs(CHAIN, 1.5)


def test_a_step_started_before_its_prerequisite_and_the_skip_it_implies():
    """a at segment 0, then c (which needs b) at segment 1: b is missing; c is the last step,
    so b is reported skipped at once; nothing more at the end."""
    alerts = alerts_for(CHAIN, STEPS, [0, 2, None], _zeros(3), segment_duration=2)
    assert _key(alerts) == [("missing_prerequisite", 1, 1, (2,)), ("skipped", 1, 1, (2,))]
    assert [a.t for a in alerts] == [4.0, 4.0]  # the end of segment 1
    first = alerts[0].to_json()
    assert first["event"] == "alert" and first["missing_name"] == "b"
    assert first["needed_by_names"] == ["c"] and "'b', which it needs" in first["message"]


def test_observed_done_is_the_running_progress_at_the_level():
    progress = _zeros(2)
    progress[1, 1] = DONE_LEVEL  # b observed done in the segment where c is announced
    alerts = alerts_for(CHAIN, STEPS, [0, 2], progress)
    assert alerts == []
    progress[1, 1] = np.nextafter(DONE_LEVEL, 0)
    assert _key(alerts_for(CHAIN, STEPS, [0, 2], progress))[0] == (
        "missing_prerequisite",
        1,
        1,
        (2,),
    )


def test_each_pair_once_and_skipped_at_the_end_of_the_video():
    d = CHAIN.copy()
    d[2, 1] = 0.0  # 1 needs 0 only: the last step is 1
    progress = _zeros(4)
    progress[2:, 1] = 0.9  # b seen by progress only (never announced): no missing alert
    assert _key(alerts_for(d, STEPS, [None, None, None, None], progress)) == [
        ("skipped", 3, 0, (1,))
    ]
    # c needs a and b; c announced twice while b is unseen: one alert per pair
    d = np.array([[0, 0, 0], [0, 0, 0], [1, 1, 0]], dtype=float)
    alerts = alerts_for(d, STEPS, [0, 2, None, 2], _zeros(4))
    assert _key(alerts)[0] == ("missing_prerequisite", 1, 1, (2,))
    assert [a.kind for a in alerts].count("missing_prerequisite") == 1


def test_the_threshold_decides_what_a_step_needs():
    d = CHAIN * 0.6
    assert alerts_for(d, STEPS, [2], _zeros(1), threshold=0.6) != []
    assert alerts_for(d, STEPS, [2], _zeros(1), threshold=0.61) == []


def test_monitor_finish_once_and_reset():
    monitor = AlertMonitor(CHAIN, STEPS)
    assert monitor.finish() == []  # nothing fed: nothing to say
    monitor.update(0, 1, np.zeros(3))  # b (not a last step) before a
    assert [a.kind for a in monitor.raised] == ["missing_prerequisite"]
    assert _key(monitor.finish()) == [("skipped", 0, 0, (1,))]
    assert monitor.finish() == [] and len(monitor.raised) == 2
    monitor.reset()
    assert monitor.raised == [] and not monitor.seen.any()


@pytest.mark.parametrize("dataset", ["htstep", "crosstask", "coin"])
def test_done_level_separates_steps_on_screen_from_the_others(dataset):
    """Why ``DONE_LEVEL`` is 0.7 (docs/alerts.md): on the simulated default no step that is
    never a segment's true state reaches 0.5, and nine in ten of the others reach 0.7."""
    on, off = [], []
    oracle = sources.dependencies(dataset, "oracle")
    for video in load_dataset(dataset)[:30]:
        sim = simulate_video(video)
        grounder = OnlineGrounder(None, video.goal, video.steps, oracle.matrix(video))
        for s in range(sim.num_segments):
            est = grounder.push_scores(sim.vsg[s], sim.progress[s])
        present = set(sim.truth.tolist())
        for j in range(video.num_steps):
            (on if j in present else off).append(est.progress[j])
    assert off and max(off) < 0.5 < DONE_LEVEL
    assert np.mean(np.array(on) >= DONE_LEVEL) > 0.9


# --------------------------------------------------------------------------------------------
# the definitions as a literal loop, against the monitor on real annotations


def _literal(d, k, announced, progress, threshold, level):
    """The docs' definitions, written out: seen, needs, last steps, both alert kinds."""

    def need(a, b):
        return a != b and d[a][b] >= threshold

    def seen(j, s):
        return any(announced[t] == j or progress[t][j] >= level for t in range(s + 1))

    last = [
        any(need(a, b) for b in range(k)) and not any(need(c, a) for c in range(k))
        for a in range(k)
    ]
    out, pairs, skipped = [], set(), set()

    def skip(s):
        for j in range(k):
            by = tuple(a for a in range(k) if seen(a, s) and need(a, j))
            if j not in skipped and not seen(j, s) and by:
                skipped.add(j)
                out.append(("skipped", s, j, by))

    for s, a in enumerate(announced):
        if a is None or not 0 <= a < k:
            continue
        for j in range(k):
            if need(a, j) and not seen(j, s) and (a, j) not in pairs:
                pairs.add((a, j))
                out.append(("missing_prerequisite", s, j, (a,)))
        if last[a]:
            skip(s)
    skip(len(announced) - 1)
    return out


@pytest.mark.parametrize("deps", ["simulated-llm:llama", "simulated-llm:gpt", "oracle"])
def test_the_monitor_is_the_literal_definition_on_real_videos(deps):
    videos = load_dataset("htstep")[:6]
    resolved = sources.dependencies("htstep", deps)
    total = 0
    for video in videos:
        d = resolved.matrix(video)
        sim = simulate_video(video)
        grounder = OnlineGrounder(None, video.goal, video.steps, d)
        monitor = AlertMonitor(d, video.steps)
        announced, progress, online = [], [], []
        for s in range(sim.num_segments):
            est = grounder.push_scores(sim.vsg[s], sim.progress[s])
            online += monitor.feed(est)
            announced.append(
                None
                if est.announced is None
                else (list(video.steps) + ["none"]).index(est.announced)
            )
            progress.append(est.progress.copy())
        online += monitor.finish()
        expected = _literal(d, video.num_steps, announced, progress, 0.5, DONE_LEVEL)
        assert _key(online) == expected
        assert _key(alerts_for(d, video.steps, announced, np.array(progress))) == expected
        assert _key(video_alerts(video, sim.vsg, sim.progress, d)) == expected
        total += len(expected)
    assert total > 0 or deps == "oracle"


# --------------------------------------------------------------------------------------------
# mistakes injected into the real annotations


def test_dependent_pairs_follow_the_group_order():
    every = load_dataset("htstep")
    video = every[0]
    group = [v for v in every if v.group == video.group and v.steps == video.steps]
    pairs = dependent_pairs(video, group)
    order = list(first_starts(video))
    assert pairs and all(order.index(k) == order.index(j) + 1 for j, k in pairs)
    for j, k in pairs:
        for other in group:
            starts = first_starts(other)
            if j in starts and k in starts:
                assert starts[j] < starts[k]
    assert dependent_pairs(video, [video]) == [
        (a, b)
        for a, b in zip(order, order[1:], strict=False)
        if first_starts(video)[a] < first_starts(video)[b]
    ]


def test_skip_removes_the_step_from_the_scores_and_swap_exchanges_it():
    video = load_dataset("htstep")[0]
    j, k = dependent_pairs(video, [video])[0]
    skip = inject(video, "skip", (j, k))
    assert all(s.step_index != j for s in skip.video.segments)
    assert len(skip.video.segments) == len(video.segments) - sum(
        s.step_index == j for s in video.segments
    )
    params = default_params("htstep")
    before, after = simulate_video(video, params), simulate_video(skip.video, params)
    assert (before.truth == j).any() and not (after.truth == j).any()
    same = before.truth == after.truth  # same uid, same noise: only the edited rows differ
    assert np.array_equal(before.vsg[same], after.vsg[same])
    assert not np.array_equal(before.vsg[~same], after.vsg[~same])
    swap = inject(video, "swap", (j, k))
    pairs = [(s.start, s.end, s.step_index) for s in swap.video.segments]
    old = [(s.start, s.end, {j: k, k: j}.get(s.step_index, s.step_index)) for s in video.segments]
    assert pairs == old and swap.dependent_start == first_starts(video)[j]
    assert swap.video.uid == video.uid and swap.original is video
    with pytest.raises(ValueError, match="mistake kind"):
        inject(video, "repeat", (j, k))


def test_mistakes_are_seeded_per_video():
    videos = load_dataset("coin")[:40]
    first = mistakes_of(videos, "skip")
    again = mistakes_of(videos, "skip")
    assert [(m.video.uid, m.step, m.dependent) for m in first] == [
        (m.video.uid, m.step, m.dependent) for m in again
    ]
    m = first[0]
    pairs = dependent_pairs(m.original, videos)
    rng = np.random.default_rng([0, zlib.crc32(m.original.uid.encode()), 0])
    assert (m.step, m.dependent) == pairs[int(rng.integers(len(pairs)))]
    other = mistakes_of(videos, "skip", seed=7)
    assert [(x.step, x.dependent) for x in other] != [(x.step, x.dependent) for x in first]


# --------------------------------------------------------------------------------------------
# the alert table


def test_alert_table_rows_are_what_their_items_give():
    result = alert_table(["htstep"], limit=8, show_progress=False)
    table, items = result.frame, result.items
    assert list(table["D"].unique()) == ["oracle", "simulated-llm:llama", "simulated-llm:gpt"]
    assert set(table["source"]) == {"simulated"} and len(table) == 6
    for row in table.itertuples():
        part = items[(items["D"] == row.D) & (items["mistake"] == row.mistake)]
        clean = items[(items["D"] == row.D) & (items["mistake"] == "none")]
        assert row.videos == len(part) and row.detected == int(part["detected"].sum())
        assert row.detection_pct == round(100 * part["detected"].mean(), 1)
        assert row.unedited_videos == len(clean) == 8
        assert row.false_alerts_per_video == round(clean["alerts"].mean(), 3)
        delays = part.loc[part["detected"], "delay_s"]
        assert (delays >= 0).all()
    oracle_skip = table[(table["D"] == "oracle") & (table["mistake"] == "skip")].iloc[0]
    assert oracle_skip.detection_pct > 50  # the removed step is the oracle chain's
    # one item recomputed by hand: the first skipped video with the oracle D
    item = items[(items["mistake"] == "skip") & (items["D"] == "oracle")].iloc[0]
    every = load_dataset("htstep")
    m = next(
        x for x in mistakes_of(every[:8], "skip", groups=every) if x.video.uid == item.video_uid
    )
    sim = simulate_video(m.video)
    alerts = video_alerts(
        m.video, sim.vsg, sim.progress, sources.dependencies("htstep", "oracle").matrix(m.original)
    )
    hits = [
        a.t - m.dependent_start for a in alerts if a.missing == m.step and a.t >= m.dependent_start
    ]
    assert item.alerts == len(alerts) and bool(item.detected) == bool(hits)
    if hits:
        assert item.delay_s == min(hits)


# --------------------------------------------------------------------------------------------
# the command line


@pytest.mark.parametrize("value", ["1.5", "-0.1", "nan"])
def test_an_alert_threshold_outside_0_1_is_bad_input(value):
    out = run_main(*follow_args(UID, dataset="htstep", alert_threshold=value))
    line = one_error_line(out.stderr)
    assert out.returncode == 2 and line.startswith("error: --alert-threshold") and value in line


def test_alerts_asked_for_without_a_dependency_matrix_is_bad_input(tmp_path):
    out = run_main(*follow_args(UID, dataset="htstep", deps="none", alerts=True))
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [
        "error: --alerts needs a dependency matrix D, and --deps none gives no prerequisites"
    ]
    video = next(v for v in load_dataset("htstep") if v.uid == UID)
    task = tmp_path / "task.json"
    task.write_text(json.dumps({"goal": video.goal, "steps": list(video.steps)}))
    out = run_main(*follow_args(UID, dataset="htstep", task=task, alerts=True))
    assert out.returncode == 2 and "'dependency' field" in out.stderr
    zero = tmp_path / "zero.json"
    zero.write_text(
        json.dumps(
            {
                "goal": video.goal,
                "steps": list(video.steps),
                "dependency": np.eye(video.num_steps).tolist(),
            }
        )
    )
    out = run_main(*follow_args(UID, dataset="htstep", task=zero, alerts=True))
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [
        f"error: --alerts needs a dependency matrix D, and the task file {zero} has no "
        "prerequisite in 'dependency' (all zero off the diagonal)"
    ]
    log = tmp_path / "events.jsonl"
    out = run_main(*follow_args(UID, dataset="htstep", task=task, jsonl=log))
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("alerts: off") == 1 and "has no 'dependency' field" in out.stdout
    events = [json.loads(x)["event"] for x in log.read_text().splitlines()]
    assert "alert" not in events and events.count("segment") == video.num_rows() // 2


def test_follow_writes_alert_events_printed_and_in_the_report(tmp_path):
    log, report = tmp_path / "events.jsonl", tmp_path / "report.html"
    out = run_main(
        *follow_args(UID, dataset="htstep", deps="simulated-llm:llama", jsonl=log, html=report)
    )
    assert out.returncode == 0, out.stderr
    assert "alerts: on (from D, --alert-threshold 0.5)" in out.stdout
    events = [json.loads(x) for x in log.read_text().splitlines()]
    segments = [e for e in events if e["event"] == "segment"]
    alerts = [e for e in events if e["event"] == "alert"]
    assert alerts and out.stdout.count("] alert: ") == len(alerts)
    video = next(v for v in load_dataset("htstep") if v.uid == UID)
    d = sources.dependencies("htstep", "simulated-llm:llama").matrix(video)
    names = list(video.steps) + ["none"]
    announced = [None if e["announced"] is None else names.index(e["announced"]) for e in segments]
    progress = np.array([e["progress"] for e in segments])  # rounded to 1e-6 in the log
    expected = alerts_for(d, video.steps, announced, progress)
    assert [(a["kind"], a["segment"], a["missing"], tuple(a["needed_by"])) for a in alerts] == (
        _key(expected)
    )
    assert alerts[-1]["t"] <= segments[-1]["t_end"]
    page = report.read_text()
    assert '<table id="alerts">' in page and 'id="alerts-timeline"' in page
    assert page.count("<tr><td>", page.index('<table id="alerts">')) >= len(alerts)
    # the same D given in a task file: alerts on by default, the same alerts
    task, again = tmp_path / "task.json", tmp_path / "again.jsonl"
    task.write_text(
        json.dumps({"goal": video.goal, "steps": list(video.steps), "dependency": d.tolist()})
    )
    out = run_main(*follow_args(UID, dataset="htstep", task=task, jsonl=again))
    assert out.returncode == 0 and "alerts: on" in out.stdout
    repeated = [json.loads(x) for x in again.read_text().splitlines()]
    assert [e for e in repeated if e["event"] == "alert"] == alerts


def test_no_alerts_option_and_the_alerts_verb(tmp_path):
    out = run_main(*follow_args(UID, dataset="htstep", deps="simulated-llm:llama", alerts=False))
    assert out.returncode == 0 and "alerts: off (--no-alerts)" in out.stdout
    assert "] alert: " not in out.stdout
    out = run_main(
        "alerts",
        "--dataset",
        "htstep",
        "--limit",
        "3",
        "--deps",
        "oracle",
        "--out",
        str(tmp_path / "alerts"),
    )
    assert out.returncode == 0, out.stderr
    assert "simulated observations, not a real model" in out.stdout
    assert (tmp_path / "alerts.csv").is_file() and (tmp_path / "alerts.items.parquet").is_file()
    params = json.loads((tmp_path / "alerts.summary.json").read_text())["parameters"]
    assert params["limit"] == 3 and params["deps"] == ["oracle"]
    bad = run_main("alerts", "--alert-threshold", "2")
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
        "error: --alert-threshold must be in [0, 1], got 2"
    ]
