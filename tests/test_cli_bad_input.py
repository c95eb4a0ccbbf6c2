"""Doing nothing is not success, out-of-range options are bad input, and library warnings stay
out of the terminal: one ``error:`` line naming the option, folder or
file, exit 2, and nothing written."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from authors_files import write_authors_files
from cli_runs import one_error, run_main
from clips import score_argv
from test_scoring import CLIPS, write_annotations

from baglm_nb.apps.cli.main import EXIT_BAD_INPUT, main
from baglm_nb.inputs.datasets import load_dataset
from baglm_nb.stores.dependencies import DependencyCache
from baglm_nb.stores.keys import DependencyKey

ROOT = Path(__file__).resolve().parent.parent


def test_import_of_an_empty_folder_is_an_error(tmp_path, capsys):
    src = tmp_path / "published"
    src.mkdir()
    code = main(
        [
            "import",
            str(src),
            "--dataset",
            "coin",
            "--cache-root",
            str(tmp_path / "c"),
            "--no-progress",
        ]
    )
    assert code == EXIT_BAD_INPUT
    line = one_error(capsys)
    assert str(src) in line and "no file matched a coin video" in line and "no .pt files" in line


def test_import_of_another_datasets_files_names_the_unmatched_files(tmp_path, capsys):
    src = tmp_path / "published"
    video = load_dataset("htstep")[0]
    write_authors_files(src, [video])
    code = main(
        [
            "import",
            str(src),
            "--dataset",
            "coin",
            "--cache-root",
            str(tmp_path / "c"),
            "--no-progress",
        ]
    )
    assert code == EXIT_BAD_INPUT
    line = one_error(capsys)
    assert "3 unmatched .pt file(s)" in line
    assert f"vsg/internvl2.5-8b/{video.uid}.pt" in line and f"prereq/{video.group}.pt" in line


@pytest.mark.parametrize("limit", ["0", "-3"])
def test_simulate_limit_below_one_is_refused_and_writes_nothing(tmp_path, capsys, limit):
    root = tmp_path / "cache"
    code = main(["simulate", "--dataset", "coin", "--cache-root", str(root), "--limit", limit])
    assert code == EXIT_BAD_INPUT
    assert one_error(capsys) == f"error: --limit {limit} is out of range: expected >= 1"
    assert not root.exists()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["calibrate", "--dataset", "coin", "--tol", "-1"], "--tol -1 is out of range"),
        (["calibrate", "--dataset", "coin", "--tol", "nan"], "--tol nan is out of range"),
        (["localize", "--dataset", "coin", "--scores", "simulated", "--threshold", "-1"],
         "--threshold -1 is out of range: expected >= 0 and <= 1"),
        (["localize", "--dataset", "coin", "--scores", "simulated", "--overlap", "7"],
         "--overlap 7 is out of range: expected >= 0 and <= 1"),
        (["deps", "--dataset", "coin", "--backend", "oracle", "--thresholds", "2", "-1"],
         "--thresholds 2 is out of range: expected >= 0 and <= 1"),
        (["evaluate", "--dataset", "coin", "--scores", "simulated", "--limit", "0"],
         "--limit 0 is out of range: expected >= 1"),
    ],
)  # fmt: skip
def test_out_of_range_options_are_bad_input(capsys, argv, expected):
    assert main(argv) == EXIT_BAD_INPUT
    assert expected in one_error(capsys)


def test_calibrate_refuses_an_unknown_preset_before_fitting(capsys):
    assert main(["calibrate", "--deps", "llama", "bogus"]) == EXIT_BAD_INPUT
    captured = capsys.readouterr()
    assert captured.out == ""  # llama was not fitted first
    assert captured.err.strip() == (
        "error: --deps: unknown preset(s) ['bogus']; presets: ['gpt', 'llama']"
    )


def test_score_batch_segments_zero_is_refused_before_creating_anything(tmp_path, capsys):
    root = tmp_path / "cache"
    code = main(
        [
            "score",
            "--dataset",
            "coin",
            "--video-dir",
            str(CLIPS),
            "--model",
            "random-init:internvl",
            "--batch-segments",
            "0",
            "--cache-root",
            str(root),
            "--no-progress",
        ]
    )
    assert code == EXIT_BAD_INPUT
    assert one_error(capsys) == "error: --batch-segments 0 is out of range: expected >= 1"
    assert not root.exists()


def test_evaluate_on_a_partial_cache_says_n_of_m(tmp_path, capsys):
    root = tmp_path / "cache"
    assert main(["simulate", "--dataset", "coin", "--cache-root", str(root), "--limit", "3"]) == 0
    folder = next(root.rglob("config.json")).parent
    capsys.readouterr()
    assert main(["evaluate", "--dataset", "coin", "--scores", str(folder), "--deps", "oracle"]) == 0
    total = len(load_dataset("coin"))
    out = capsys.readouterr().out
    assert f"videos evaluated: 3 of {total} annotated videos" in out
    args = ["evaluate", "--dataset", "coin", "--scores", str(folder), "--deps", "oracle"]
    assert main([*args, "--limit", "5"]) == 0
    assert "videos evaluated: 3 of 5 annotated videos" in capsys.readouterr().out
    assert main([*args, "--limit", "2"]) == 0
    assert "videos evaluated: 2\n" in capsys.readouterr().out


def test_a_missing_dependency_group_is_a_named_bad_input(tmp_path, capsys):
    videos = load_dataset("coin")
    first, other = videos[0], next(v for v in videos if v.group != videos[0].group)
    limit = videos.index(other) + 1
    cache = DependencyCache(tmp_path, DependencyKey("coin", "partial-llm", "v1"))
    cache.write(first.group, first.steps, [[0.0] * first.num_steps] * first.num_steps)
    code = main(
        [
            "evaluate",
            "--dataset",
            "coin",
            "--scores",
            "simulated",
            "--limit",
            str(limit),
            "--deps",
            str(cache.path),
        ]
    )
    assert code == EXIT_BAD_INPUT
    line = one_error(capsys)
    assert f"no dependency matrix for video {other.uid!r} (group {other.group!r})" in line
    assert str(cache.path) in line and "missing key" not in line


def _score(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    ann = write_annotations(tmp_path / "ann", ["cup"])
    cmd = [
        sys.executable,
        "-m",
        "baglm_nb",
        *score_argv(ann, tmp_path / "cache"),
        "--no-progress",
        *extra,
    ]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=280)


def test_library_warnings_stay_out_of_the_terminal_unless_debug(tmp_path):
    quiet = _score(tmp_path / "a")  # a real process: what its terminal shows
    assert quiet.returncode == 0, quiet.stderr
    assert json.loads(quiet.stdout)["scored"] == 1
    assert "Warning" not in quiet.stderr, quiet.stderr
    ann = write_annotations(tmp_path / "b" / "ann", ["cup"])  # --debug runs too (in-process)
    debug = run_main(*score_argv(ann, tmp_path / "b" / "cache"), "--no-progress", "--debug")
    assert debug.returncode == 0, debug.stderr


@pytest.mark.parametrize("debug", [False, True])
def test_library_warnings_are_hidden_unless_debug_and_ours_are_kept(debug, monkeypatch):
    """The filter of ``cli/main.py``: a library's warning (any category) and any deprecation
    notice are hidden, the workbench's own warnings kept; ``--debug`` hides nothing."""
    import warnings

    from baglm_nb.apps.cli.main import quiet_library_warnings

    monkeypatch.setattr(sys, "warnoptions", [])
    monkeypatch.delenv("TRANSFORMERS_VERBOSITY", raising=False)
    monkeypatch.delenv("TRANSFORMERS_NO_ADVISORY_WARNINGS", raising=False)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        quiet_library_warnings(debug)
        warnings.warn_explicit(
            "`x` is deprecated",
            FutureWarning,
            "modeling.py",
            1,
            module="transformers.modeling_utils",
        )
        warnings.warn_explicit("a note", UserWarning, "decoder.py", 1, module="torchcodec.x")
        warnings.warn_explicit("old", DeprecationWarning, "mine.py", 1, module="somelib")
        warnings.warn_explicit(
            "cache without fingerprint",
            UserWarning,
            "obs.py",
            1,
            module="baglm_nb.core.observations",
        )
    shown = [str(w.message) for w in seen]
    if debug:
        assert len(shown) == 4
    else:
        assert shown == ["cache without fingerprint"]


# --------------------------------------------------------------------------------------------
# notebook parameters


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"limit": "five"}, "limit='five'"),
        ({"limit": 0}, "limit=0"),
        ({"sensitivity_limit": 2.5}, "sensitivity_limit=2.5"),
        ({"datasets": ["coin", "kinetics"]}, "datasets=['coin', 'kinetics']"),
        ({"dataset": "COIN"}, "dataset='COIN'"),
        ({"thresholds": [0.0, 2.0]}, "thresholds=[0.0, 2.0]"),
        ({"scores": 3}, "scores=3"),
        ({"match_labels": "yes"}, "match_labels='yes'"),
    ],
)
def test_check_parameters_names_the_parameter(params, named):
    from baglm_nb.apps.parameters import check_parameters

    with pytest.raises(ValueError, match="^notebook parameter " + re.escape(named) + ": expected"):
        check_parameters(params)


def test_check_parameters_accepts_every_notebooks_defaults():
    from baglm_nb.apps.parameters import check_parameters

    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(notebook.read_text())["cells"]
        source = next(
            "".join(c["source"])
            for c in cells
            if "parameters" in c.get("metadata", {}).get("tags", [])
        )
        namespace: dict = {}
        exec(source, namespace)  # the committed defaults (plain literals)
        check_parameters({k: v for k, v in namespace.items() if k != "__builtins__"})
        calls = [c for c in cells if "check_parameters(globals())" in "".join(c["source"])]
        assert len(calls) == 1, notebook.name


def test_check_parameters_returns_the_parameters_not_what_ipython_adds():
    import json as json_module

    from baglm_nb.apps.parameters import check_parameters

    namespace = {
        "__name__": "__main__",
        "_ih": [""],
        "In": [""],
        "Out": {},
        "_": None,
        "get_ipython": print,
        "json_module": json_module,
        "check_parameters": print,
        "DATASETS": {"coin": "a spec the parameters cell imports"},
        "datasets": ["coin"],
        "limit": 3,
        "scores": {},
        "video_dir": None,
        "threshold": 0.5,
        "match_labels": False,
        "lags": [0, None],
    }
    assert check_parameters(namespace) == {
        "datasets": ["coin"],
        "limit": 3,
        "scores": {},
        "video_dir": None,
        "threshold": 0.5,
        "match_labels": False,
        "lags": [0, None],
    }


def test_a_notebook_run_with_a_wrong_parameter_type_names_it(tmp_path):
    from cli_runs import papermill_cli  # papermill's command line, in this process

    notebook = ROOT / "notebooks" / "03_main_results.ipynb"
    argv = [str(notebook), str(tmp_path / "out.ipynb"), "-k", "python3", "--cwd", str(tmp_path),
            "--no-progress-bar", "-p", "limit", "five"]  # fmt: skip
    status, last = papermill_cli(argv)
    assert status != 0
    assert "ValueError: notebook parameter limit='five': expected a whole number >= 1" in last
    assert not list(tmp_path.glob("*.csv"))  # stopped before any work
