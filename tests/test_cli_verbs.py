"""The ``render`` verb, and the one error rule of every verb: the verbs raise, only
:mod:`baglm_nb.apps.cli.main` prints the ``error:`` line and picks the exit status (2 bad
input, 1 failed run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cli_runs import ROOT, one_error_line, run_cli, run_main

from baglm_nb.apps.cli.main import EXIT_BAD_INPUT, EXIT_FAILED, main
from baglm_nb.apps.render import WIDGET_VIEW


def write_executed_notebook(path: Path) -> None:
    """A small executed notebook: a saved progress bar, and this machine's path in an output
    and in papermill's injected parameters cell."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    bar = {WIDGET_VIEW: {"model_id": "tqdm-model-1", "version_major": 2}, "text/plain": "0%|"}
    shown = new_output("execute_result", data={"text/plain": f"'{ROOT}/figures/a.png'"})
    params = f"# Parameters\ncache = '{ROOT}/data/cache'\nlimit = 5\n"
    injected = new_code_cell(params, metadata={"tags": ["injected-parameters"]})
    cell = new_code_cell("f()", outputs=[new_output("display_data", data=bar), shown])
    nbformat.write(new_notebook(cells=[injected, cell]), path)


def test_render_is_a_verb_that_rewrites_the_notebook_and_writes_its_page(tmp_path):
    import nbformat

    first, second = tmp_path / "a.ipynb", tmp_path / "b.ipynb"
    write_executed_notebook(first)
    write_executed_notebook(second)
    out = run_main("render", str(first), str(second))  # the verb, in this process
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [str(tmp_path / "a.html"), str(tmp_path / "b.html")]
    nb = nbformat.read(first, as_version=4)
    assert [o.output_type for o in nb.cells[1].outputs] == ["execute_result"]  # no widget
    assert nb.cells[1].outputs[0].data["text/plain"] == "'figures/a.png'"
    assert "cache = 'data/cache'" in nb.cells[0].source
    page = (tmp_path / "a.html").read_text()
    assert "figures/a.png" in page and str(ROOT) not in page and "0%|" not in page


def test_render_of_a_missing_or_broken_notebook_is_bad_input_naming_the_file(tmp_path):
    missing = tmp_path / "missing.ipynb"
    out = run_main("render", str(missing))  # the verb's status and line, in this process
    assert out.returncode == EXIT_BAD_INPUT and str(missing) in one_error_line(out.stderr)
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{}")
    out = run_main("render", str(broken))
    assert out.returncode == EXIT_BAD_INPUT
    line = one_error_line(out.stderr)
    assert line.startswith(f"error: {broken}: not a readable notebook:") and "cells" in line


def test_the_old_render_module_is_no_command_line():
    out = subprocess.run(
        [sys.executable, "-m", "baglm_nb.apps.render", "x.ipynb"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0 and out.stdout == ""  # imports, renders nothing


def test_deps_backend_without_model_is_bad_input_naming_the_option():
    # the verb's status, line and --debug traceback, in this process (tests/test_cli_errors.py:
    # the same rule through a real process)
    out = run_main("deps", "--dataset", "coin", "--backend", "transformers", "--no-progress")
    assert out.returncode == EXIT_BAD_INPUT and out.stdout == ""
    assert one_error_line(out.stderr) == "error: --backend transformers needs --model FOLDER_OR_ID"
    debug = run_main("deps", "--dataset", "coin", "--backend", "openai", "--debug")
    assert debug.returncode == EXIT_BAD_INPUT and "Traceback" in debug.stderr
    assert debug.stderr.rstrip().splitlines()[-1] == "error: --backend openai needs --model NAME"


def test_deps_does_not_import_the_authors_files(tmp_path, capsys):
    """``import`` is the one route: ``deps`` has no ``--src``, and ``--backend imported`` on a
    cache root without an import says to import the files first, naming the folder."""
    out = run_cli("deps", "--dataset", "coin", "--backend", "imported", "--src", str(tmp_path))
    assert out.returncode == EXIT_BAD_INPUT and "unrecognized arguments: --src" in out.stderr
    code = main(
        [
            "deps",
            "--dataset",
            "coin",
            "--backend",
            "imported",
            "--cache-root",
            str(tmp_path),
            "--no-progress",
        ]
    )
    assert code == EXIT_BAD_INPUT
    line = one_error_line(capsys.readouterr().err)
    assert str(tmp_path) in line and "import the authors' files first" in line


def test_a_refused_file_fails_the_import_after_the_summary(tmp_path, capsys):
    from authors_files import write_authors_files

    from baglm_nb.inputs.datasets import load_dataset

    src = tmp_path / "published"
    videos = load_dataset("coin")[:2]
    write_authors_files(src, videos)
    vsg = next((src / "vsg").rglob(f"{videos[0].uid}.pt"))
    vsg.write_bytes(b"not a tensor file")
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
    captured = capsys.readouterr()
    assert code == EXIT_FAILED
    assert "refused: 1 files (1 videos not imported)" in captured.out
    errors = [line for line in captured.err.splitlines() if line.startswith("error: ")]
    assert errors[-1] == (
        "error: 1 files refused (each named above); their 1 videos are not imported"
    )


def test_deps_groups_that_failed_are_one_error_line_and_exit_1(tmp_path, monkeypatch, capsys):
    """``--on-error continue``: the other groups are computed, then the failed ones are named in
    one ``error:`` line (exit 1) that says how to resume."""
    from test_dependencies import FakeBackend, _toy_dataset

    from baglm_nb.models import dependencies as dep

    monkeypatch.setattr(
        "baglm_nb.apps.cli.deps._backend", lambda args: FakeBackend(fail={("A", "B")})
    )
    monkeypatch.setattr(dep, "load_dataset", lambda name, root=None: _toy_dataset()[0])
    code = main(
        [
            "deps",
            "--dataset",
            "htstep",
            "--backend",
            "smollm2",
            "--cache-root",
            str(tmp_path),
            "--no-progress",
            "--on-error",
            "continue",
        ]
    )
    captured = capsys.readouterr()
    assert code == EXIT_FAILED
    assert "computed 1, reused 0, failed 1" in captured.out
    line = one_error_line(captured.err)
    assert line.startswith("error: 1 task group(s) failed: ") and "task group 'g1'" in line
    assert line.endswith("finished groups and pairs are kept: run the same command again to resume")


def test_one_server_options_for_every_verb_that_talks_to_a_server():
    """``score``, ``follow`` and ``deps`` read the same server flags into one ServerOptions;
    each verb keeps its own defaults (``deps``: the published run's 2 log-probabilities)."""
    from baglm_nb.apps.cli.main import build_parser
    from baglm_nb.apps.cli.options import ServerOptions

    parser = build_parser()
    flags = [
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--api-key-env",
        "K",
        "--concurrency",
        "3",
        "--request-attempts",
        "5",
        "--top-logprobs",
        "7",
    ]
    score = ["score", "--dataset", "coin", "--video-dir", "v", "--model", "m"]
    follow = ["follow", "x.mp4", "--model", "openai:m"]
    deps = ["deps", "--dataset", "coin", "--backend", "openai", "--model", "m"]
    parsed = [
        parser.parse_args([*score, *flags, "--timeout", "9"]),
        parser.parse_args([*follow, *flags, "--request-timeout", "9"]),
        parser.parse_args([*deps, *flags, "--timeout", "9"]),
    ]
    want = ServerOptions("http://127.0.0.1:9/v1", "K", 7, 3, 9.0, 5)
    assert [ServerOptions.from_args(args) for args in parsed] == [want, want, want]
    assert parsed[1].timeout_s == 10.0  # follow's own --timeout: the stalled-source limit
    defaults = [ServerOptions.from_args(parser.parse_args(v)) for v in (score, follow, deps)]
    published = ServerOptions(top_logprobs=2, concurrency=1, request_timeout=30.0)
    assert defaults == [ServerOptions(), ServerOptions(), published]
