"""What a followed run used: one list of (name, value) fields for the terminal and the report."""

from __future__ import annotations

import json
from types import SimpleNamespace

from baglm_nb.apps.follow_config import FollowConfig
from baglm_nb.apps.online.report import RunReport, render_html
from baglm_nb.apps.online.run_settings import dependency_label, run_settings, settings_line
from baglm_nb.core.online import Hysteresis

NAMES = ["observations", "D", "threshold", "patience", "smoothing lag", "stay"]


def test_the_fields_name_each_setting_with_its_unit():
    grounder = SimpleNamespace(source="lmm:x", segment_duration=2, hysteresis=Hysteresis(0.6, 3))
    fields = run_settings(FollowConfig(lag_segments=1), grounder)
    assert [name for name, _ in fields] == NAMES
    assert dict(fields) == {
        "observations": "lmm:x",
        "D": "simulated-llm:llama",  # the notebooks' D, the default
        "threshold": "0.6",
        "patience": "3 segments (6 s)",
        "smoothing lag": "1 segment (2 s)",
        "stay": "0 (the paper's filter)",
    }
    beyond = dict(run_settings(FollowConfig(lag_segments=1, stay=0.9), grounder))
    assert beyond["stay"] == "0.9 (beyond the paper)"
    line = settings_line(fields)
    assert line.startswith("settings: observations: lmm:x; D: simulated-llm:llama; ")
    assert line.endswith("; smoothing lag: 1 segment (2 s); stay: 0 (the paper's filter)")
    assert settings_line([("D", "")]) == "settings: D: \u2013"  # a missing value: the dash
    # the report's banner shows the same fields, in the same order
    page = render_html(RunReport([], ["a"], title="t", settings=fields))
    table = page.split('<table id="settings">', 1)[1].split("</table>", 1)[0]
    assert [h.split("</th>")[0] for h in table.split("<th>")[1:]] == NAMES
    assert "<td>3 segments (6 s)</td>" in table


def test_the_d_of_a_task_file_says_where_it_comes_from(tmp_path):
    def task(**fields) -> str:
        path = tmp_path / f"task{len(list(tmp_path.iterdir()))}.json"
        path.write_text(json.dumps({"goal": "g", "steps": ["a", "b"], **fields}))
        return str(path)

    given = dependency_label(FollowConfig(task_path=task(dependency=[[0, 0], [1, 0]])))
    assert given.startswith("the task file's 'dependency'")
    assert "chain" in dependency_label(FollowConfig(task_path=task(ordered=True)))
    assert dependency_label(FollowConfig(task_path=task(ordered=False))).startswith("none")
    assert dependency_label(FollowConfig(deps="oracle")) == "oracle"
