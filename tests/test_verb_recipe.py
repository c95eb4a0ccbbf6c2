"""docs/architecture.md's recipe for a CLI verb, followed: a module in ``apps/cli/`` with
``register(verbs)``, listed in ``apps/cli/main.py::VERBS``, and nothing else. The new verb is in
the parser and its help, takes ``--debug``, is dispatched to, and its errors go through the
one error rule (exit 2 for bad input, 1 for a failed run, one ``error:`` line)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import baglm_nb.apps.cli as cli_package
from baglm_nb.apps.cli import main as cli_main

ROOT = Path(__file__).resolve().parent.parent
NAME = "toy_verb"

#: The verb module as the recipe has it: it parses, calls and raises; main maps errors.
MODULE = '''
"""``python -m baglm_nb toy-verb``: add two numbers (a verb added by the recipe)."""

import argparse


def register(verbs) -> None:
    """Add the ``toy-verb`` verb."""
    p = verbs.add_parser("toy-verb", help="add two numbers (the recipe's example verb)")
    p.add_argument("a", type=float)
    p.add_argument("b", type=float)
    p.add_argument("--fail", action="store_true", help="raise a failed run")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the ``toy-verb`` verb."""
    if args.a < 0:
        raise ValueError(f"a: must be >= 0, got {args.a:g}")
    if args.fail:
        raise RuntimeError("the run failed")
    print(args.a + args.b)
    return 0
'''


@pytest.fixture
def verb_folder(tmp_path: Path) -> Path:
    """A folder holding the new verb's module, to be searched as part of ``apps/cli/``."""
    (tmp_path / f"{NAME}.py").write_text(textwrap.dedent(MODULE))
    return tmp_path


@pytest.fixture
def added_verb(verb_folder, monkeypatch):
    """The verb added in this process: its module on the package's path, its name in VERBS."""
    monkeypatch.setattr(cli_package, "__path__", [*cli_package.__path__, str(verb_folder)])
    monkeypatch.setattr(cli_main, "VERBS", (*cli_main.VERBS, NAME))
    monkeypatch.delitem(sys.modules, f"baglm_nb.apps.cli.{NAME}", raising=False)
    yield
    sys.modules.pop(f"baglm_nb.apps.cli.{NAME}", None)


def test_a_verb_added_by_the_recipe_is_parsed_helped_and_dispatched(added_verb, capsys):
    parser = cli_main.build_parser()
    assert "toy-verb" in parser.format_help()
    assert "add two numbers" in parser.format_help()
    args = parser.parse_args(["toy-verb", "1", "2", "--debug"])
    assert args.debug and args.func.__module__ == f"baglm_nb.apps.cli.{NAME}"
    assert cli_main.main(["toy-verb", "1.5", "2"]) == 0
    assert capsys.readouterr().out.strip() == "3.5"
    # its errors follow the one rule of apps/cli/main.py
    assert cli_main.main(["toy-verb", "-1", "2"]) == cli_main.EXIT_BAD_INPUT
    assert capsys.readouterr().err.strip() == "error: a: must be >= 0, got -1"
    assert cli_main.main(["toy-verb", "1", "2", "--fail"]) == cli_main.EXIT_FAILED
    assert capsys.readouterr().err.strip() == "error: the run failed"


def test_without_the_verbs_entry_the_module_is_not_a_verb(verb_folder, monkeypatch):
    """The VERBS entry is what registers it: the module alone adds nothing."""
    monkeypatch.setattr(cli_package, "__path__", [*cli_package.__path__, str(verb_folder)])
    assert "toy-verb" not in cli_main.build_parser().format_help()


def test_a_verb_added_by_the_recipe_runs_as_a_process(verb_folder):
    """``python -m baglm_nb``'s own entry point (main with exit_process) in a subprocess."""
    code = (
        "import sys\n"
        "import baglm_nb.apps.cli as package\n"
        "from baglm_nb.apps.cli import main\n"
        f"package.__path__.append({str(verb_folder)!r})\n"
        f"main.VERBS = (*main.VERBS, {NAME!r})\n"
        "main.main(sys.argv[1:], exit_process=True)\n"
    )
    run = [sys.executable, "-c", code]
    done = subprocess.run([*run, "toy-verb", "2", "3"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip() == "5.0", done.stderr
    bad = subprocess.run([*run, "toy-verb", "-2", "3"], capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
        "error: a: must be >= 0, got -2"
    ]
