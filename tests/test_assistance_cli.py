"""``evaluate`` and ``follow`` with the online metrics and fixed-lag smoothing."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_runs import one_error_line

from baglm_nb.apps.cli.main import main
from baglm_nb.core import sources
from baglm_nb.core.filtering import run_filter
from baglm_nb.core.online_metrics import online_keys
from baglm_nb.inputs.metric_specs import metric_spec

UID = "-25-1nbOki0"  # HT-Step, Make Nigerian Style Jollof Rice


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_evaluate_json_reports_the_online_metrics(capsys):
    code, out, _ = _run(
        capsys,
        "evaluate",
        "--dataset",
        "htstep",
        "--scores",
        "simulated",
        "--limit",
        "4",
        "--json",
        "--smoothing-lag-s",
        "inf",
    )
    assert code == 0
    result = json.loads(out.strip().splitlines()[-1])
    online = result["online"]
    assert online["smoothing_lag_s"] is None and online["patience"] == 2
    for method in ("baglm", "off_the_shelf"):
        assert tuple(online[method]) == online_keys()
        assert 0 <= online[method]["frame_accuracy"] <= 1
    # every metric key of the result is described by its spec
    assert result["metric"] == "r_at_1"
    assert list(result["metrics"]) == ["r_at_1", *online_keys()]
    assert result["metrics"]["delay_median_s"] == metric_spec("delay_median_s").describe()
    assert result["metrics"]["delay_median_s"]["higher_is_better"] is False
    assert "online quality" in out and "smoothing lag inf" in out
    # one row per metric, by its spec's header, with its direction
    assert "delay median (s)" in out and "annotated-state changes per min" in out
    assert [line for line in out.splitlines() if line.startswith("per-second accuracy")][
        0
    ].endswith("higher")


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("-1", "must be a whole number >= 0 or 'inf'"),
        ("2.5", "whole number"),
        ("soon", "whole number"),
    ],
)
def test_evaluate_refuses_bad_lags(capsys, value, words):
    code, _, err = _run(
        capsys,
        "evaluate",
        "--dataset",
        "htstep",
        "--scores",
        "simulated",
        "--limit",
        "1",
        f"--smoothing-lag-s={value}",
    )
    line = one_error_line(err, other_lines=True)
    assert code == 2 and "--smoothing-lag-s" in line and repr(value) in line and words in line


def test_evaluate_refuses_smoothing_in_published_precision(capsys):
    code, _, err = _run(
        capsys,
        "evaluate",
        "--dataset",
        "htstep",
        "--scores",
        "simulated",
        "--limit",
        "1",
        "--precision",
        "float32-published",
        "--smoothing-lag-s",
        "4",
    )
    line = one_error_line(err, other_lines=True)
    assert code == 2 and "--smoothing-lag-s 4" in line and "float64 only" in line


def test_evaluate_refuses_a_lag_off_the_segment_grid(capsys):
    # the earlier spelling --smoothing-lag is still read; the message names the flag with its unit
    args = ["--limit", "1", "--stepping", "segment", "--smoothing-lag", "3"]
    code, _, err = _run(capsys, "evaluate", "--dataset", "htstep", "--scores", "simulated", *args)
    line = one_error_line(err, other_lines=True)
    assert code == 2 and "--smoothing-lag-s 3" in line and "multiple of the segment" in line


def test_lag_flags_say_their_unit(capsys):
    """evaluate's lag is in seconds, follow's in segments: the flags and their help say so."""
    for verb, flag, unit in (
        ("evaluate", "--smoothing-lag-s", "L in seconds"),
        ("follow", "--lag-segments", "N in segments"),
    ):
        with pytest.raises(SystemExit):
            main([verb, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert flag in text and unit in text, verb
        assert "--smoothing-lag " not in text and "--smoothing-lag," not in text, verb


@pytest.mark.parametrize("value", ["-1", "1.5", "inf", "x"])
def test_follow_refuses_bad_lags(capsys, value):
    code, _, err = _run(
        capsys, "follow", "--replay", "--dataset", "htstep", f"--lag-segments={value}", "--", UID
    )
    line = one_error_line(err, other_lines=True)
    assert code == 2 and "--lag-segments" in line and repr(value) in line


def test_follow_smoothing_emits_lagged_smoothed_estimates(capsys, tmp_path):
    jsonl, page = tmp_path / "run.jsonl", tmp_path / "run.html"
    code, out, _ = _run(
        capsys,
        "follow",
        "--replay",
        "--dataset",
        "htstep",
        "--lag-segments",
        "3",
        "--jsonl",
        str(jsonl),
        "--html",
        str(page),
        "--",
        UID,
    )
    assert code == 0 and "said 6 s late" in out
    events = _segment_events(jsonl)
    assert [e["segment"] for e in events] == list(range(len(events)))
    assert {e["lag_s"] for e in events} == {6.0}
    # each emitted belief is the batch fixed-lag smoother's (6 s) on the segment's last row
    obs = sources.observations("htstep", "simulated", videos=[v for v in obs_videos(UID)])
    dep = sources.dependencies("htstep", sources.SIMULATED_LLM).matrix(obs.videos[0])  # the default
    batch = run_filter(obs.vsg[UID], obs.progress[UID], dep, smoothing_lag_s=6)[1::2]
    assert np.abs(np.array([e["belief"] for e in events]) - batch).max() < 1e-6
    k = len(obs.videos[0].steps)
    assert all(e["step_number"] == (None if e["step"] == k else e["step"] + 1) for e in events)
    html = page.read_text()
    from baglm_nb.inputs.follow_defaults import FOLLOW_PATIENCE_SEGMENTS, FOLLOW_THRESHOLD

    said = f"threshold {FOLLOW_THRESHOLD:g}, patience {FOLLOW_PATIENCE_SEGMENTS}"  # follow's
    assert 'id="quality"' in html and said in html
    assert "fixed lag of 6 s (3 segments)" in html and "step_number" in html
    assert "on screen: step" in html  # a wrong announcement names the step truly on screen


def _segment_events(jsonl) -> list[dict]:
    """The ``segment`` events of a follow run's event log (alerts are events too)."""
    events = [json.loads(line) for line in jsonl.read_text().splitlines()]
    return [e for e in events if e["event"] == "segment"]


def obs_videos(uid: str):
    from baglm_nb.inputs.datasets import load_dataset

    return [v for v in load_dataset("htstep") if v.uid == uid]


def test_follow_report_metrics_match_the_core_on_the_run(capsys, tmp_path):
    """Without smoothing, the report's numbers are the core metrics of the run's own beliefs
    and announcements."""
    from baglm_nb.core.online_metrics import announcements, dataset_metrics, video_counts

    jsonl, page = tmp_path / "run.jsonl", tmp_path / "run.html"
    code, _, _ = _run(
        capsys,
        "follow",
        "--replay",
        "--dataset",
        "htstep",
        "--threshold",
        "0.3",
        "--patience",
        "1",
        "--jsonl",
        str(jsonl),
        "--html",
        str(page),
        "--",
        UID,
    )
    assert code == 0
    events = _segment_events(jsonl)
    beliefs = np.repeat(np.array([e["belief"] for e in events]), 2, axis=0)
    video = obs_videos(UID)[0]
    said = [(e["segment"], e["step"]) for e in events if e["announced"]]
    assert said == announcements(beliefs[1::2], 0.3, 1)
    values = dataset_metrics("htstep", {UID: video_counts(video, beliefs, said)}, [video])
    html = page.read_text()
    assert "threshold 0.3, patience 1" in html
    for key in ("frame_accuracy", "announce_precision", "flicker_per_min"):
        assert f"<td>{key}</td><td>{values[key]:.3f}</td>" in html
