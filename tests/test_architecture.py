"""The package's shape: stable import paths, one place per rule, small modules and functions."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "baglm_nb"
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)
MAX_MODULE_LINES = 620  # "about 600"
MAX_FUNCTION_LINES = 79

#: The import paths users' own notebooks call (issue: keep them working after any move).
STABLE = {
    "baglm_nb.datasets": ("load_dataset", "dataset_stats"),
    "baglm_nb.filtering": ("run_filter",),
    "baglm_nb.evaluation": ("evaluate",),
    "baglm_nb.simulate": ("simulate_dataset", "per_second"),
    "baglm_nb.localization": ("localize", "detect_segments", "article_grounding_map"),
    "baglm_nb.online": ("OnlineGrounder",),
}


@pytest.mark.parametrize("module", sorted(STABLE))
def test_stable_import_paths(module):
    mod = importlib.import_module(module)
    for name in STABLE[module]:
        obj = getattr(mod, name)
        home = importlib.import_module(obj.__module__)
        assert getattr(home, name) is obj and home.__name__ != module  # a re-export


def _rel(path: Path) -> str:
    return str(path.relative_to(PACKAGE.parent))


def test_modules_are_small_and_documented():
    too_long = {
        _rel(p): n for p in MODULES if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not too_long, f"modules over {MAX_MODULE_LINES} lines: {too_long}"
    undocumented = [_rel(p) for p in MODULES if not ast.get_docstring(ast.parse(p.read_text()))]
    assert not undocumented, f"modules without a docstring: {undocumented}"


def test_functions_are_short():
    long = {}
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long[f"{_rel(path)}:{node.name}"] = n
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def _definitions(pattern: str) -> list[str]:
    rx = re.compile(pattern, re.MULTILINE)
    return [_rel(p) for p in MODULES if rx.search(p.read_text())]


@pytest.mark.parametrize(
    ("pattern", "home"),
    [
        (r"^def find_video_file\(", ["baglm_nb/inputs/video.py"]),
        (r"^def (frame_indices|num_segments|ground_truth|first_starts)\(",
         ["baglm_nb/inputs/grid.py"]),
        (r"np\.repeat\(.*axis=0", ["baglm_nb/inputs/grid.py"]),
        (r"^def (_?atomic\w*|_save_atomic|_write_json\w*)\(", ["baglm_nb/stores/atomic.py"]),
        (r"VideoDecoder\(", ["baglm_nb/inputs/video.py"]),
        (r"\bav\.open\(", ["baglm_nb/inputs/live.py"]),
        (r"^class StreamGrid\b", ["baglm_nb/inputs/grid.py"]),
        (r"first\.get\(seg\.step", ["baglm_nb/inputs/grid.py"]),
    ],
)  # fmt: skip
def test_each_rule_lives_in_one_place(pattern, home):
    assert _definitions(pattern) == home


#: The paper's headline R@1 values (main table); other modules read them from analyses/paper.py.
HEADLINE = {57.4, 59.8, 43.3, 51.0, 52.0, 54.3, 45.2, 47.9}


def test_paper_values_are_not_copied_into_code():
    copies = []
    for path in MODULES:
        if path.name == "paper.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, float):
                if node.value in HEADLINE:
                    copies.append(f"{_rel(path)}:{node.lineno}")
    assert not copies, f"paper values written into code: {copies}"


STAGES = ("inputs", "models", "stores", "core", "analyses", "apps")
#: The two imports against the data-flow order that the architecture allows (docs/architecture.md).
ALLOWED_UPWARD = {("models", "stores"), ("core/simulate.py", "analyses.paper")}


def test_stages_import_only_earlier_stages():
    upward = []
    for path in MODULES:
        rel = path.relative_to(PACKAGE)
        if len(rel.parts) < 2 or rel.parts[0] not in STAGES:
            continue
        stage = rel.parts[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("baglm_nb."):
                target = node.module.split(".", 1)[1]
                other = target.split(".")[0]
                if other in STAGES and STAGES.index(other) > STAGES.index(stage):
                    key = (stage, other) if (stage, other) in ALLOWED_UPWARD else (str(rel), target)
                    if key not in ALLOWED_UPWARD:
                        upward.append(f"{rel}:{node.lineno} -> {node.module}")
    assert not upward, f"imports against the stage order: {upward}"


def test_cli_verbs_live_in_one_package():
    from baglm_nb.apps.cli import main

    parser = main.build_parser()
    verbs = parser._subparsers._group_actions[0].choices  # noqa: SLF001
    assert set(verbs) == {"stats", "evaluate", "import", "simulate", "calibrate", "sim-check",
                          "score", "deps", "localize", "follow", "alerts"}  # fmt: skip
    main_text = (PACKAGE / "__main__.py").read_text()
    assert "add_parser" not in main_text and "apps.cli.main" in main_text


def _vocabularies() -> dict[str, tuple[set[str], str]]:
    """Each vocabulary's names and the one module allowed to write them as a collection."""
    from baglm_nb.inputs import variants
    from baglm_nb.inputs.datasets import DATASETS

    home = "baglm_nb/inputs/variants.py"
    return {
        "transition": (set(variants.TRANSITIONS), home),
        "prior": (set(variants.PRIORS), home),
        "stepping": (set(variants.STEPPINGS), home),
        "precision": (set(variants.PRECISIONS), home),
        "gap mode": (set(variants.GAP_MODES), home),
        "localization": (set(variants.LOCALIZATIONS), home),
        "off-step progress": (set(variants.OFF_STEP_PROGRESS), home),
        "dataset": (set(DATASETS), "baglm_nb/inputs/datasets.py"),
    }


def _string_collections(tree: ast.AST):
    """``(lineno, names)`` of every tuple, list, set or ``Literal[...]`` of >= 2 str constants."""
    for node in ast.walk(tree):
        elts = None
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            elts = node.elts
        elif isinstance(node, ast.Subscript) and getattr(node.value, "id", "") == "Literal":
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if elts and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in elts):
            names = {e.value for e in elts}
            if len(names) >= 2:
                yield node.lineno, names


def test_the_vocabulary_is_written_in_one_place():
    """No literal collection of transition, prior, stepping, precision, gap-mode, localization
    or dataset names outside its home (inputs/variants.py; DATASETS for the dataset names)."""
    vocabularies = _vocabularies()
    copies = []
    for path in MODULES:
        for lineno, names in _string_collections(ast.parse(path.read_text())):
            for what, (vocabulary, home) in vocabularies.items():
                if names <= vocabulary and _rel(path) != home:
                    copies.append(f"{_rel(path)}:{lineno} {what} names {sorted(names)}")
    assert not copies, f"vocabulary written outside its module: {copies}"


def test_no_code_branches_on_a_dataset_name():
    """Dataset differences are DatasetSpec fields: no ``==``/``!=``/``in`` against a name."""
    from baglm_nb.inputs.datasets import DATASETS

    branches = []
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                for side in (node.left, *node.comparators):
                    if isinstance(side, ast.Constant) and side.value in DATASETS:
                        branches.append(f"{_rel(path)}:{node.lineno} {side.value!r}")
    assert not branches, f"code that branches on a dataset name: {branches}"


def test_dataset_lists_come_from_DATASETS():
    """The Makefile and the notebooks hold no literal list of every dataset."""
    import json

    from baglm_nb.inputs.datasets import DATASETS

    root = PACKAGE.parent
    makefile = (root / "Makefile").read_text()
    assert not [line for line in makefile.splitlines() if all(n in line for n in DATASETS)]
    copies = []
    for notebook in sorted((root / "notebooks").glob("*.ipynb")):
        for cell in json.loads(notebook.read_text())["cells"]:
            if cell["cell_type"] == "code":
                tree = ast.parse("".join(cell["source"]))
                for lineno, names in _string_collections(tree):
                    if names == set(DATASETS):
                        copies.append(
                            f"{notebook.name}: {''.join(cell['source']).splitlines()[lineno - 1]}"
                        )
    assert not copies, f"literal lists of every dataset (use list(DATASETS)): {copies}"


def test_grid_does_not_import_datasets():
    """inputs/grid.py reads videos through its GridVideo protocol, so datasets -> grid only."""
    tree = ast.parse((PACKAGE / "inputs" / "grid.py").read_text())
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "baglm_nb.inputs.datasets" not in modules
