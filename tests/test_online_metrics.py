"""The online metrics against literal loops, on real annotations and simulated beliefs."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from baglm_nb.core import sources
from baglm_nb.core.online import OnlineGrounder
from baglm_nb.core.online_metrics import (
    announcements,
    dataset_metrics,
    measure,
    online_keys,
    truth_states,
    video_counts,
)
from baglm_nb.core.pipeline import compare, run_baglm


@pytest.fixture(scope="module")
def htstep():
    obs = sources.observations("htstep", "simulated", limit=8)
    return obs, run_baglm(obs, "simulated-llm:llama")


@pytest.fixture(scope="module")
def crosstask():
    from baglm_nb.inputs.datasets import load_dataset

    by_task = {}
    for v in load_dataset("crosstask"):
        by_task.setdefault(v.task, []).append(v)
    videos = [v for task in list(by_task)[:4] for v in by_task[task][:5]]
    obs = sources.observations("crosstask", "simulated", videos=videos)
    return obs, run_baglm(obs, "simulated-llm:llama")


def covering(video, row):
    """The steps annotated at per-second ``row`` (floor(start) <= row <= ceil(end))."""
    return {s.step_index for s in video.segments if math.floor(s.start) <= row <= math.ceil(s.end)}


def literal_counts(video, beliefs, said, d=2, lag_s=0.0):
    t_len, k = beliefs.shape[0], video.num_steps
    rows_correct = step_rows = step_rows_correct = 0
    for t in range(t_len):
        top = max(range(k + 1), key=lambda i: (beliefs[t, i], -i))
        steps = covering(video, t)
        ok = (top in steps) if top < k else not steps
        rows_correct += ok
        if steps:
            step_rows += 1
            step_rows_correct += ok
    announced = correct = 0
    delays = {}
    for s, state in said:
        if state == k:
            continue
        announced += 1
        if state in covering(video, s * d):
            correct += 1
            if state not in delays:
                start = max(
                    x.start
                    for x in video.segments
                    if x.step_index == state and math.floor(x.start) <= s * d <= math.ceil(x.end)
                )
                delays[state] = (s + 1) * d + lag_s - start
    annotated = {s.step_index for s in video.segments if math.floor(s.start) < t_len}
    tops = [int(np.argmax(beliefs[t])) for t in range(t_len)]
    truth = []
    for t in range(t_len):
        here = [x for x in video.segments if math.floor(x.start) <= t <= math.ceil(x.end)]
        truth.append(max(here, key=lambda x: x.start).step_index if here else k)
    return {
        "rows": t_len,
        "rows_correct": rows_correct,
        "step_rows": step_rows,
        "step_rows_correct": step_rows_correct,
        "announced": announced,
        "announced_correct": correct,
        "steps_annotated": len(annotated),
        "steps_found": len(delays),
        "delays": list(delays.values()),
        "changes": sum(tops[t] != tops[t - 1] for t in range(1, t_len)),
        "truth_changes": sum(truth[t] != truth[t - 1] for t in range(1, t_len)),
        "minutes": t_len / 60,
    }


def test_announcements_are_follows(htstep):
    """The batch announcements are those an OnlineGrounder replay makes on the same scores."""
    obs, beliefs = htstep
    video = obs.videos[0]
    g = OnlineGrounder(
        None,
        video.goal,
        video.steps,
        sources.dependencies("htstep", "simulated-llm:llama").matrix(video),
        threshold=0.4,
        patience=2,
    )
    vsg, prog = obs.vsg[video.uid][::2], obs.progress[video.uid][::2]
    ests = [g.push_scores(v, p) for v, p in zip(vsg, prog, strict=True)]
    followed = [(e.segment, e.step) for e in ests if e.announced]
    rows = np.stack([e.belief for e in ests])
    assert announcements(rows, 0.4, 2) == followed
    assert followed  # something was announced
    assert np.abs(rows - beliefs[video.uid][1::2]).max() < 1e-12


def test_video_counts_are_a_literal_loop(htstep):
    obs, beliefs = htstep
    for video in obs.videos:
        for b in (beliefs[video.uid], obs.vsg[video.uid]):
            said = announcements(b[1::2], 0.3, 1)
            for lag in (0.0, 6.0):
                got = video_counts(video, b, said, lag_s=lag)
                want = literal_counts(video, b, said, lag_s=lag)
                assert got.keys() == want.keys()
                for key in want:
                    assert got[key] == pytest.approx(want[key], abs=1e-12), (video.uid, key)


def test_dataset_metrics_pool_counts(htstep):
    obs, beliefs = htstep
    per = {
        v.uid: video_counts(v, beliefs[v.uid], announcements(beliefs[v.uid][1::2]))
        for v in obs.videos
    }
    got = dataset_metrics("htstep", per, obs.videos)
    assert tuple(got) == online_keys()
    total = {k: sum(c[k] for c in per.values()) for k in per[obs.uids()[0]] if k != "delays"}
    delays = [d for c in per.values() for d in c["delays"]]
    p = total["announced_correct"] / total["announced"]
    r = total["steps_found"] / total["steps_annotated"]
    assert got["frame_accuracy"] == pytest.approx(total["rows_correct"] / total["rows"])
    assert got["frame_accuracy_on_steps"] == pytest.approx(
        total["step_rows_correct"] / total["step_rows"]
    )
    assert got["announce_precision"] == pytest.approx(p)
    assert got["announce_recall"] == pytest.approx(r)
    assert got["announce_f1"] == pytest.approx(2 * p * r / (p + r))
    ordered, half = sorted(delays), len(delays) // 2
    median = ordered[half] if len(delays) % 2 else (ordered[half - 1] + ordered[half]) / 2
    assert got["delay_median_s"] == pytest.approx(median)
    assert got["flicker_per_min"] == pytest.approx(total["changes"] / total["minutes"])
    assert got["truth_flicker_per_min"] == pytest.approx(total["truth_changes"] / total["minutes"])
    assert 0.3 < got["frame_accuracy"] < 1 and got["flicker_per_min"] > got["truth_flicker_per_min"]


def test_crosstask_is_averaged_per_task_over_r1_subsets(crosstask):
    obs, beliefs = crosstask
    per = {
        v.uid: video_counts(v, beliefs[v.uid], announcements(beliefs[v.uid][1::2]))
        for v in obs.videos
    }
    got = dataset_metrics("crosstask", per, obs.videos)
    uids = obs.uids()
    means = []
    for seed in range(20):
        random.seed(seed)
        chosen = random.sample(uids, min(1850, len(uids)))
        tasks = {}
        for uid in chosen:
            task = next(v.task for v in obs.videos if v.uid == uid)
            a, b = tasks.get(task, (0, 0))
            tasks[task] = (a + per[uid]["rows_correct"], b + per[uid]["rows"])
        means.append(np.mean([a / b for a, b in tasks.values()]))
    assert got["frame_accuracy"] == pytest.approx(np.mean(means), abs=1e-12)
    pooled = sum(c["rows_correct"] for c in per.values()) / sum(c["rows"] for c in per.values())
    assert got["frame_accuracy"] != pytest.approx(pooled, abs=1e-6)  # per task, not pooled


def test_truth_states_take_the_later_start_on_a_shared_row(htstep):
    obs, _ = htstep
    video = obs.videos[0]
    states = truth_states(video, video.num_rows())
    for t in range(len(states)):
        here = [x for x in video.segments if math.floor(x.start) <= t <= math.ceil(x.end)]
        assert states[t] == (
            max(here, key=lambda x: x.start).step_index if here else video.num_steps
        )


def test_off_the_shelf_announces_on_normalised_scores(htstep):
    obs, _ = htstep
    raw = {u: obs.vsg[u] for u in obs.uids()}
    got = measure("htstep", obs.videos, raw, scores=True, threshold=0.3)
    per = {}
    for v in obs.videos:
        b = raw[v.uid] / raw[v.uid].sum(axis=1, keepdims=True)
        per[v.uid] = video_counts(v, b, announcements(b[1::2], 0.3, 2))
    assert got == pytest.approx(dataset_metrics("htstep", per, obs.videos), nan_ok=True)


def test_compare_reports_online_metrics_with_smoothing(htstep):
    obs, _ = htstep
    result = compare(
        obs, "simulated-llm:llama", online={"threshold": 0.5, "patience": 2}, smoothing_lag_s=None
    )
    online = result["online"]
    assert online["smoothing_lag_s"] is None and online["threshold"] == 0.5
    for method in ("baglm", "off_the_shelf"):
        assert set(online[method]) == set(online_keys())
    filt = compare(obs, "simulated-llm:llama", online={"threshold": 0.5, "patience": 2})
    smoothed = {k: online["baglm"][k] for k in ("frame_accuracy", "flicker_per_min")}
    assert smoothed != {k: filt["online"]["baglm"][k] for k in smoothed}
    assert online["off_the_shelf"] == filt["online"]["off_the_shelf"]


def test_absent_step_share_is_a_literal_loop():
    """Of the rows where a step is annotated, the share whose top state is a step without any
    annotated interval: a literal loop over videos and rows, on random beliefs and on the
    oracle chain's, which goes to such steps more often than a simulated LLM's D."""
    from baglm_nb.core.online_metrics import absent_step_share
    from baglm_nb.inputs.grid import ground_truth

    obs = sources.observations("htstep", "simulated", limit=8)
    rng = np.random.default_rng(0)
    beliefs = {u: rng.random(v.shape) for u, v in obs.vsg.items()}
    beliefs[obs.videos[0].uid][:, 0] = 2.0  # ties broken by the first state, as argmax does
    rows = absent = 0
    for video in obs.videos:
        b = beliefs[video.uid]
        y = ground_truth(video, len(b))
        done = {seg.step_index for seg in video.segments}
        for t in range(len(b)):
            if not y[t, : video.num_steps].any():
                continue
            rows += 1
            top = max(range(b.shape[1]), key=lambda i: (b[t, i], -i))
            absent += top < video.num_steps and top not in done
    assert absent_step_share(obs.videos, beliefs) == pytest.approx(absent / rows, abs=1e-15)
    assert 0 < absent < rows
    oracle = absent_step_share(obs.videos, run_baglm(obs, "oracle"))
    assert oracle > absent_step_share(obs.videos, run_baglm(obs, "simulated-llm:llama"))
    assert math.isnan(absent_step_share(obs.videos, {}))
