"""Every ``--json`` flag of every verb: its output parses as strict JSON (no NaN, no Infinity),
the document is stdout's last line, and it says what the text above it says.

:data:`JSON_RUNS` names one run per verb that has the flag; a verb that gains ``--json`` fails
:func:`test_every_json_flag_has_a_run_here` until it gets one.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from authors_files import write_authors_files

from baglm_nb.apps.cli.main import build_parser, main
from baglm_nb.inputs.datasets import load_dataset


def _reject(constant: str):
    raise ValueError(f"not JSON: {constant}")


def strict_json(text: str):
    """``text`` parsed as strict JSON (Python's ``json`` accepts NaN and Infinity; JSON does
    not)."""
    return json.loads(text, parse_constant=_reject)


def _run_json(capsys, argv: list[str]) -> tuple[str, object]:
    """Run ``argv``; (stdout, the JSON document on its last line)."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    *text, last = out.strip().splitlines()
    assert text, out  # the text comes first, the JSON last
    return out, strict_json(last)


def _localize(capsys, tmp_path: Path) -> None:
    stem = tmp_path / "loc"
    argv = ["localize", "--dataset", "htstep", "--scores", "simulated", "--limit", "3"]
    out, doc = _run_json(capsys, [*argv, "--out", str(stem), "--json"])
    assert doc["title"] in out and "simulated observations, not a real model" in doc["title"]
    table = pd.read_csv(stem.with_suffix(".csv"))
    assert doc["rows"] == len(table) == len(doc["values"])
    assert list(doc["values"][0]) == list(table.columns)
    for row, (_, expected) in zip(doc["values"], table.iterrows(), strict=True):
        for column, value in expected.items():
            got = row[column]
            if isinstance(value, float) and math.isnan(value):  # the CSV reads "" as NaN too
                assert got in (None, ""), (column, got)  # NaN is null, not the NaN token
            elif isinstance(value, float):
                assert got == pytest.approx(value, rel=1e-12), column
            else:
                assert got == value, column
    assert doc == strict_json(stem.with_suffix(".summary.json").read_text()) | {
        "parameters": doc["parameters"]
    }
    assert doc["parameters"]["dataset"] == "htstep" and doc["parameters"]["json"] is True


def _evaluate(capsys, tmp_path: Path) -> None:
    argv = ["evaluate", "--dataset", "coin", "--scores", "simulated", "--limit", "3", "--json"]
    out, doc = _run_json(capsys, argv)
    assert f"{doc['baglm']:.1f}" in out and f"{doc['off_the_shelf']:.1f}" in out
    assert f"videos evaluated: {doc['videos']}" in out and doc["videos"] == 3
    assert set(doc["online"]) >= {"baglm", "off_the_shelf"}
    assert doc["precision_agreement"]["pairs"] > 0


def _import(capsys, tmp_path: Path) -> None:
    videos = load_dataset("htstep")[:2]
    src = tmp_path / "published"
    write_authors_files(src, videos)
    argv = ["import", str(src), "--dataset", "htstep", "--no-progress"]
    out, doc = _run_json(capsys, [*argv, "--cache-root", str(tmp_path / "cache"), "--json"])
    assert doc["videos_imported"] == 2 and doc["files_refused"] == 0
    assert f"imported: {doc['files_imported']} files ({doc['videos_imported']} videos" in out
    assert Path(doc["scores_path"]).is_dir() and Path(doc["dependencies_path"]).is_dir()


#: One run per verb with ``--json``: it checks the document against the verb's own text.
JSON_RUNS = {"localize": _localize, "evaluate": _evaluate, "import": _import}


def test_every_json_flag_has_a_run_here():
    verbs = build_parser()._subparsers._group_actions[0].choices
    with_json = {
        name
        for name, parser in verbs.items()
        if any("--json" in action.option_strings for action in parser._actions)
    }
    assert with_json == set(JSON_RUNS)


@pytest.mark.parametrize("verb", sorted(JSON_RUNS))
def test_json_output_parses_and_agrees_with_the_text(verb, capsys, tmp_path):
    JSON_RUNS[verb](capsys, tmp_path)


def test_strict_json_refuses_nan():
    from baglm_nb.apps.cli.options import json_value

    with pytest.raises(ValueError, match="NaN"):
        strict_json(json.dumps({"x": float("nan")}))
    value = {
        "a": float("nan"),
        "b": (1, np.float32(0.5)),
        "c": np.array([1.0, np.inf]),
        3: Path("p"),
    }
    assert strict_json(json.dumps(json_value(value))) == {
        "a": None,
        "b": [1, 0.5],
        "c": [1.0, None],
        "3": "p",
    }
