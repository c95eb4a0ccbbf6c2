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


def _imports_of(path: Path) -> set[str]:
    """The ``baglm_nb`` modules one module imports, function-level imports included."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("baglm_nb"):
            out |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("baglm_nb")}
    return out


def test_one_engine_pattern_for_scoring_and_dependencies():
    """Both drivers build their engine with ``models.dispatch.make_engine``, the only place that
    creates one, and the Ray engine knows neither driver (no scoring <-> ray_pool circle)."""
    built = _definitions(r"\b(RayPool|LocalEngine)\(")
    assert built == ["baglm_nb/models/dispatch.py"], built
    for driver in ("scoring", "dependencies"):
        assert "baglm_nb.models.dispatch.make_engine" in _imports_of(
            PACKAGE / "models" / f"{driver}.py"
        ), driver
    ray_side = _imports_of(PACKAGE / "models" / "ray_pool.py")
    ray_side |= _imports_of(PACKAGE / "models" / "ray_connect.py")
    assert not {m for m in ray_side if m.startswith(("baglm_nb.models.scoring",
                                                     "baglm_nb.models.dependencies",
                                                     "baglm_nb.models.dispatch"))}  # fmt: skip


def test_served_model_strings_are_recognised_in_one_place():
    """``openai:<name>`` is read by ``models.served.is_served`` / ``served_name`` only."""
    found = [f"{_rel(p)}:{node.lineno}" for p in MODULES
             for node in ast.walk(ast.parse(p.read_text()))
             if isinstance(node, ast.Constant) and node.value == "openai:"]  # fmt: skip
    assert [f.split(":")[0] for f in found] == ["baglm_nb/models/served.py"], found
    from baglm_nb.models.served import is_served, served_name

    assert is_served("openai:Qwen/Qwen2.5-VL-7B-Instruct") and not is_served("internvl3-8b")
    assert not is_served("random-init:openai") and not is_served("OpenAI:m")
    assert served_name("openai:m") == "m" and served_name("m") == "m"


def test_scorer_and_engine_parameters_are_typed():
    """No parameter named ``scorer``, ``engine`` or ``backend`` is untyped or typed ``Any``."""
    loose = []
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for a in [*node.args.args, *node.args.kwonlyargs]:
                    if a.arg in ("scorer", "engine", "backend") and (
                        a.annotation is None or ast.unparse(a.annotation) in ("Any", "object")
                    ):
                        loose.append(f"{_rel(path)}:{node.lineno} {node.name}({a.arg})")
    assert not loose, f"parameters without a real type: {loose}"


def test_result_tables_carry_their_items_and_sources_in_one_object():
    """Items live in a ``ResultTable``, never in ``DataFrame.attrs`` (``pd.concat`` drops them);
    source labels are joined in one function, which the notebooks call."""
    import json

    assert not [_rel(p) for p in MODULES if re.search(r"\.attrs\b", p.read_text())]
    assert _definitions(r'" \+ "\.join') == ["baglm_nb/analyses/result_table.py"]
    notebooks = sorted((PACKAGE.parent / "notebooks").glob("*.ipynb"))
    code = {n.name: "".join("".join(c["source"]) for c in json.loads(n.read_text())["cells"]
                            if c["cell_type"] == "code") for n in notebooks}  # fmt: skip
    assert not [name for name, text in code.items() if '" + ".join' in text]
    assert not [name for name, text in code.items() if "write_table(" in text]
