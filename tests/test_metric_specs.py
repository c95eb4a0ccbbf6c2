"""One spec per metric: the recipe "add a metric" (docs/architecture.md) followed in a test, and
the outputs and docs that the specs drive."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from baglm_nb.analyses.display import axis_label, header, in_percent
from baglm_nb.apps.cli.main import main
from baglm_nb.apps.online.report import RunReport, render_html
from baglm_nb.core import sources
from baglm_nb.core.online import OnlineGrounder
from baglm_nb.core.online_metrics import announcements, measure, online_keys
from baglm_nb.inputs import metric_specs
from baglm_nb.inputs.datasets import DATASETS
from baglm_nb.inputs.metric_specs import METRICS, MetricSpec, metric_keys, metric_spec

DOCS = Path(__file__).resolve().parent.parent / "docs" / "metrics.md"

#: The metric the recipe adds: step announcements per minute of video, a ratio of two counts
#: that ``video_counts`` already makes (so its function is the existing one).
NEW = MetricSpec(
    "announcements_per_min",
    "step announcements",
    "per min",
    "announcements of a step per minute of video",
    "pooled_ratio",
    None,
    "online",
    ("announced", "minutes"),
)


def literal_announcements_per_min(videos, beliefs, d=2) -> float:
    """The new metric as a literal loop: step announcements (``follow``'s hysteresis on each
    segment's last row, scores normalised per row) over minutes of video, pooled."""
    said = minutes = 0
    for video in videos:
        b = np.asarray(beliefs[video.uid], dtype=np.float64)
        b = b / b.sum(axis=1, keepdims=True)
        for s, state in announcements(b[d - 1 :: d]):
            said += state < video.num_steps and s * d < b.shape[0]
        minutes += b.shape[0] / 60
    return said / minutes


@pytest.fixture
def new_metric(monkeypatch):
    """The recipe's one step: a spec entry in ``METRICS``."""
    monkeypatch.setitem(METRICS, NEW.key, NEW)
    return NEW


def test_a_new_metric_is_one_spec(new_metric, capsys):
    """Added as one spec, the metric reaches the metrics, the evaluate JSON and text, the
    tables' headers, the follow report and the docs' table, with the literal loop's value."""
    assert online_keys()[-1] == new_metric.key
    assert header(new_metric.key) == "step announcements per min"
    assert f"| `{new_metric.key}` | online |" in metric_specs.metric_table()

    assert main(["evaluate", "--dataset", "htstep", "--scores", "simulated", "--limit", "2",
                 "--json"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    result = json.loads(out.strip().splitlines()[-1])
    assert result["metrics"][new_metric.key] == new_metric.describe()
    assert "step announcements per min" in out  # the text table, by its header
    obs = sources.observations("htstep", "simulated", limit=2)
    raw = {u: obs.vsg[u] for u in obs.uids()}
    want = literal_announcements_per_min(obs.videos, raw)
    assert result["online"]["off_the_shelf"][new_metric.key] == pytest.approx(want, rel=1e-12)
    assert measure("htstep", obs.videos, raw, scores=True)[new_metric.key] == pytest.approx(want)
    assert result["online"]["baglm"][new_metric.key] >= 0

    video = obs.videos[0]
    dep = sources.dependencies("htstep", sources.SIMULATED_LLM).matrix(video)
    g = OnlineGrounder(None, video.goal, video.steps, dep)
    vsg, prog = obs.vsg[video.uid][::2], obs.progress[video.uid][::2]
    estimates = [g.push_scores(v, p) for v, p in zip(vsg, prog, strict=True)]
    page = render_html(
        RunReport(estimates, video.steps, title="t", video=video, hysteresis=(0.5, 2))
    )
    quality = page.split('<table id="quality">')[1].split("</table>")[0]
    assert f"<td>{new_metric.key}</td>" in quality and new_metric.description in quality


def test_every_reader_takes_the_specs_at_call_time(new_metric):
    """No reader copies the keys at import: the spec added by the fixture is seen by each."""
    assert new_metric.key in metric_keys("online")
    assert metric_spec(new_metric.key) is new_metric
    assert not in_percent(new_metric.key) and axis_label(new_metric.key) == new_metric.header


def test_docs_table_is_the_specs():
    """docs/metrics.md's table between its markers is :func:`metric_table` (regenerate it with
    the command the page gives)."""
    text = DOCS.read_text()
    block = text.split("<!-- metric_table: begin -->\n")[1].split("\n<!-- metric_table: end -->")[0]
    assert block == metric_specs.metric_table(), "docs/metrics.md's table differs:\n" + (
        metric_specs.metric_table()
    )


def test_docs_define_every_online_metric():
    """Each online metric has its full definition in docs/metrics.md's definitions table."""
    text = DOCS.read_text().split("## Online quality: the definitions")[1]
    defined = set(re.findall(r"^\| `(\w+)`(?:, `(\w+)`)?", text, re.MULTILINE))
    keys = {k for pair in defined for k in pair if k}
    assert set(metric_keys("online")) <= keys


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"aggregation": "mean"}, "aggregation must be one of"),
        ({"group": "offline"}, "group must be one of"),
        ({"counts": ("announced",)}, "takes 2 counts"),
        ({"key": "announcements per min"}, "identifier"),
    ],
)
def test_a_bad_spec_is_refused_where_it_is_written(change, words):
    fields = {**NEW.__dict__, **change}
    with pytest.raises(ValueError, match=words):
        MetricSpec(**fields)


def test_headers_carry_the_unit():
    assert metric_spec("delay_median_s").header == "delay median (s)"
    assert metric_spec("frame_accuracy").header == "per-second accuracy"  # a fraction
    assert metric_spec("flicker_per_min").header == "top-state changes per min"
    assert axis_label("frame_accuracy") == "per-second accuracy (%)" and in_percent("announce_f1")
    assert axis_label("workbench") == "R@1 (%)"
    with pytest.raises(KeyError, match="unknown metric 'nope'; known: r_at_1"):
        metric_spec("nope")


def test_each_dataset_names_its_recall_metric():
    """A dataset's recall protocol names a grounding metric; its label is the spec's."""
    for spec in DATASETS.values():
        metric = metric_spec(spec.recall.metric)
        assert metric.group == "grounding" and spec.recall.label == metric.label
    assert {DATASETS[d].recall.label for d in ("htstep", "crosstask")} == {"R@1", "Avg. R@1"}


def test_an_online_spec_the_aggregation_cannot_serve_is_refused(monkeypatch):
    bad = MetricSpec("r_online", "R", "%", "x", "pair_mean", True, "online")
    monkeypatch.setitem(METRICS, bad.key, bad)
    obs = sources.observations("htstep", "simulated", limit=1)
    with pytest.raises(ValueError, match="online metric r_online: no per-video pair_mean"):
        measure("htstep", obs.videos, obs.vsg, scores=True)
