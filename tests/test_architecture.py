"""The package's shape: stable import paths, one place per rule, small modules and functions."""

from __future__ import annotations

import ast
import functools
import importlib
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "baglm_nb"
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)
MAX_MODULE_LINES = 620  # "about 600"
MAX_FUNCTION_LINES = 79

#: The import paths users' own notebooks call: they keep working after any move.
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


@functools.cache
def _tree(path: Path) -> ast.Module:
    """The parsed source of ``path``, parsed once for all the tests of this file (read-only:
    no test changes a tree)."""
    return ast.parse(path.read_text())


def _rel(path: Path) -> str:
    return str(path.relative_to(PACKAGE.parent))


def test_modules_are_small_and_documented():
    too_long = {
        _rel(p): n for p in MODULES if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not too_long, f"modules over {MAX_MODULE_LINES} lines: {too_long}"
    undocumented = [_rel(p) for p in MODULES if not ast.get_docstring(_tree(p))]
    assert not undocumented, f"modules without a docstring: {undocumented}"


def test_functions_are_short():
    long = {}
    for path in MODULES:
        for node in ast.walk(_tree(path)):
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
        (r"^def find_video_file\(", ["baglm_nb/inputs/video_records.py"]),
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


#: The paper's headline R@1 values (main table); other modules read them from inputs/paper.py.
HEADLINE = {57.4, 59.8, 43.3, 51.0, 52.0, 54.3, 45.2, 47.9}


def test_paper_values_are_not_copied_into_code():
    copies = []
    for path in MODULES:
        if path.name == "paper.py":
            continue
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Constant) and isinstance(node.value, float):
                if node.value in HEADLINE:
                    copies.append(f"{_rel(path)}:{node.lineno}")
    assert not copies, f"paper values written into code: {copies}"


#: The stages in data-flow order: a module imports only from its own stage and earlier ones.
STAGES = ("inputs", "stores", "models", "core", "analyses", "apps")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(node: ast.AST, name: str, is_package: bool) -> list[str]:
    """The dotted names an import statement can bind: a module, or a name inside one."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    module = node.module or ""
    if node.level:  # relative: resolved against the importing module's package
        base = name.split(".") if is_package else name.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        module = ".".join(base + ([module] if module else []))
    return [module] + [f"{module}.{alias.name}" for alias in node.names]


def _import_graph() -> dict[str, dict[str, int]]:
    """``{module: {imported baglm_nb module: first line}}``, module-level and function-level
    imports alike (an import inside a function still ties the two modules together)."""
    paths = {_module_name(p): p for p in MODULES}
    graph: dict[str, dict[str, int]] = {}
    for name, path in paths.items():
        edges = graph.setdefault(name, {})
        for node in ast.walk(_tree(path)):
            for target in _imported(node, name, path.name == "__init__.py"):
                if target in paths and target != name:
                    edges.setdefault(target, node.lineno)
    return graph


def _circles(graph: dict[str, dict[str, int]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan), each a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = {stack.pop()}
            while v not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found.append(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_stages_import_only_earlier_stages():
    upward = []
    for name, edges in sorted(_import_graph().items()):
        stage = (name.split(".") + [""])[1]
        if stage not in STAGES:
            continue
        for target, line in sorted(edges.items()):
            other = (target.split(".") + [""])[1]
            if other in STAGES and STAGES.index(other) > STAGES.index(stage):
                upward.append(f"{name}:{line} -> {target}")
    assert not upward, f"imports against the stage order {' -> '.join(STAGES)}: {upward}"


def test_stage_packages_say_their_number():
    for number, stage in enumerate(STAGES, start=1):
        doc = ast.get_docstring(ast.parse((PACKAGE / stage / "__init__.py").read_text()))
        assert doc.startswith(f"Stage {number}, {stage}:"), (stage, doc.splitlines()[0])


def test_imports_have_no_circle():
    graph = _import_graph()
    circles = _circles(graph)
    described = [
        " ; ".join(
            f"{a} -> {b}:{graph[a][b]}" for a in sorted(c) for b in sorted(graph[a]) if b in c
        )
        for c in circles
    ]
    assert not circles, "import circles (module- or function-level imports):\n" + "\n".join(
        described
    )


def test_circle_finder_finds_a_function_level_circle():
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 4}, "e": {}}
    assert _circles(graph) == [frozenset({"a", "b", "c"})]
    tree = ast.parse("def f():\n    from baglm_nb.inputs import grid\n")
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom))
    assert _imported(node, "baglm_nb.inputs.video", False) == [
        "baglm_nb.inputs",
        "baglm_nb.inputs.grid",
    ]
    relative = ast.parse("from ..stores import atomic").body[0]
    assert _imported(relative, "baglm_nb.models.scoring", False) == [
        "baglm_nb.stores",
        "baglm_nb.stores.atomic",
    ]


def test_cli_verbs_live_in_one_package():
    """``apps/cli/main.py::VERBS`` lists every verb module (the modules with ``register``);
    the parser's verbs are what those modules register, each verb by one module."""
    import argparse

    from baglm_nb.apps.cli import main

    registering = [
        p.stem for p in _cli_modules() if re.search(r"^def register\(", p.read_text(), re.M)
    ]
    assert sorted(main.VERBS) == sorted(registering)
    parser = main.build_parser()
    verbs = parser._subparsers._group_actions[0].choices  # noqa: SLF001
    registered: list[str] = []
    for name in main.VERBS:
        alone = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"baglm_nb.apps.cli.{name}").register(alone)
        registered += list(alone.choices)
    assert sorted(registered) == sorted(verbs) and len(set(registered)) == len(registered)
    assert {"evaluate", "follow", "import"} <= set(verbs)  # the scan does read the modules
    main_text = (PACKAGE / "__main__.py").read_text()
    assert "add_parser" not in main_text and "apps.cli.main" in main_text


MAP = PACKAGE.parent / "docs" / "architecture.md"
_PY = re.compile(r"(?<![\w/.])((?:[a-z_]+/)*[a-z_][a-z0-9_]*\.py)\b")
_FOLDER = re.compile(r"(?<![\w/.])([a-z_]+)/(?=[\s(]|$)")


def _map_sections() -> dict[str, str]:
    """The map's code block cut where each stage's name starts a line: ``{stage: its text}``."""
    block = MAP.read_text().split("```")[1]
    sections: dict[str, str] = {}
    stage = None
    for line in block.splitlines():
        head = line.split("/")[0] if "/" in line[:10] else ""
        if head in STAGES or head == "notebooks":
            stage = head
            line = line[len(head) + 1 :]
        if stage in STAGES:
            sections[stage] = sections.get(stage, "") + line + "\n"
    return sections


def _groups(text: str) -> list[tuple[str, int, int]]:
    """``(folder, start, end)`` of the parenthesised text after each ``folder/ (``: what the map
    says that package holds."""
    groups = []
    for match in re.finditer(r"(?<![\w/.])([a-z_]+)/ \(", text):
        depth, end = 1, match.end()
        while depth and end < len(text):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        groups.append((match.group(1), match.end(), end))
    return groups


def _map_paths() -> tuple[set[Path], set[Path]]:
    """What the map's code block names, as it writes it: ``x.py`` relative to its stage's folder
    (inside ``folder/ (...)``, to that folder; ``stage/x.py`` as written) and ``folder/``. Returns
    the paths named so, and the modules a ``folder/ (...)`` names by their bare stem."""
    named, by_stem = set(), set()
    for stage, text in _map_sections().items():
        groups = _groups(text)
        for match in _PY.finditer(text):
            name = match.group(1)
            inside = [f for f, a, b in groups if a <= match.start() < b]
            if name.split("/")[0] in STAGES:
                named.add(PACKAGE / name)
            else:
                named.add(PACKAGE / stage / "/".join(inside[-1:] + [name]))
        for folder in _FOLDER.findall(text):
            named.add(PACKAGE / stage / folder)
        for folder, a, b in groups:
            stems = re.findall(r"[a-z_][a-z0-9_]*", text[a:b])
            by_stem.update(PACKAGE / stage / folder / f"{s}.py" for s in stems)
    return named, by_stem


def test_map_names_only_what_exists():
    named, _ = _map_paths()
    missing = sorted(str(p.relative_to(PACKAGE)) for p in named if not p.exists())
    assert not missing, f"docs/architecture.md's map names what baglm_nb lacks: {missing}"


def test_map_names_every_module():
    named, by_stem = _map_paths()
    unnamed = [
        _rel(p)
        for p in MODULES
        if p.parent != PACKAGE and p.name != "__init__.py" and p not in named | by_stem
    ]
    assert not unnamed, f"modules docs/architecture.md's map does not name: {unnamed}"


def test_map_stable_import_paths_are_the_tested_ones():
    text = MAP.read_text()
    paragraph = text.split("**Stable import paths**")[1].split("\n\n")[0]
    assert set(re.findall(r"`(baglm_nb\.\w+)`", paragraph)) == set(STABLE)
    top = {f"baglm_nb.{p.stem}" for p in PACKAGE.glob("*.py") if not p.name.startswith("_")}
    assert top == set(STABLE)  # every top-level module is a stable path, tested above


def _resolves(dotted: str) -> bool:
    """Whether ``dotted`` is a module of baglm_nb, or a name (chain) inside one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(obj, attribute):
                return False
            obj = getattr(obj, attribute)
        return True
    return False


def test_map_prose_names_what_exists():
    """The text and the table under the map: `stage.module[.name]`, `stage/x.py[::name]` and
    `tests/x.py` exist."""
    prose = MAP.read_text().split("```")[2]
    stages = "|".join(STAGES)
    dotted = re.findall(rf"`((?:{stages})(?:\.\w+)+)`", prose)
    files = re.findall(rf"`((?:{stages})/[\w/]+\.py)(?:::(\w+))?`", prose)
    dotted += [f"{p[:-3].replace('/', '.')}.{name}".rstrip(".") for p, name in files]
    wrong = [d for d in dotted if not _resolves(f"baglm_nb.{d}")]
    tests = re.findall(r"`(tests/[\w/]+\.py)`", prose)
    wrong += [t for t in tests if not (PACKAGE.parent / t).exists()]
    assert dotted and tests and not wrong, f"docs/architecture.md names what is not there: {wrong}"


def test_importing_changes_no_global_state():
    """No module runs a call at import (``matplotlib.use``, ``os.environ`` writes, warning
    filters...): a notebook, a test or a CLI sets its own process state. Freezing a module's own
    constant (``.setflags(write=False)``) is allowed."""
    calls = []
    for path in MODULES:
        for node in _tree(path).body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                func = node.value.func
                if not (isinstance(func, ast.Attribute) and func.attr == "setflags"):
                    calls.append(f"{_rel(path)}:{node.lineno} {ast.unparse(node)}")
            elif any("environ" in ast.unparse(t) for t in targets):
                calls.append(f"{_rel(path)}:{node.lineno} {ast.unparse(node)}")
    assert not calls, f"statements that change global state at import: {calls}"


def _imports_of(path: Path) -> set[str]:
    """The ``baglm_nb`` modules one module imports, function-level imports included."""
    out = set()
    for node in ast.walk(_tree(path)):
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
    assert not {
        m
        for m in ray_side
        if m.startswith(
            ("baglm_nb.models.scoring", "baglm_nb.models.dependencies", "baglm_nb.models.dispatch")
        )
    }


def test_served_model_strings_are_recognised_in_one_place():
    """``openai:<name>`` is read by ``models.served.is_served`` / ``served_name`` only."""
    found = [
        f"{_rel(p)}:{node.lineno}"
        for p in MODULES
        for node in ast.walk(_tree(p))
        if isinstance(node, ast.Constant) and node.value == "openai:"
    ]
    assert [f.split(":")[0] for f in found] == ["baglm_nb/models/served.py"], found
    from baglm_nb.models.served import is_served, served_name

    assert is_served("openai:Qwen/Qwen2.5-VL-7B-Instruct") and not is_served("internvl3-8b")
    assert not is_served("random-init:openai") and not is_served("OpenAI:m")
    assert served_name("openai:m") == "m" and served_name("m") == "m"


def test_scorer_and_engine_parameters_are_typed():
    """No parameter named ``deps``, ``scores``, ``source``, ``scorer``, ``engine`` or ``backend``
    is untyped or typed ``Any``."""
    loose = []
    for path in MODULES:
        for node in ast.walk(_tree(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for a in [*node.args.args, *node.args.kwonlyargs]:
                    if a.arg in ("deps", "scores", "source", "scorer", "engine", "backend") and (
                        a.annotation is None or ast.unparse(a.annotation) in ("Any", "object")
                    ):
                        loose.append(f"{_rel(path)}:{node.lineno} {node.name}({a.arg})")
    assert not loose, f"parameters without a real type: {loose}"


def test_family_adapters_and_passes_do_not_import_the_scorer():
    """The scorer (models/engine.py) uses the family specs and the passes; they reach it only
    through its public interface (``passes.PassScorer``), never by importing it back."""
    lower = [
        PACKAGE / "models" / "passes.py",
        *sorted((PACKAGE / "models" / "families").glob("*.py")),
    ]
    back = {
        _rel(p): sorted(m for m in _imports_of(p) if m.startswith("baglm_nb.models.engine"))
        for p in lower
    }
    assert not {k: v for k, v in back.items() if v}
    private = _definitions(r"\.(_fam|_probs|_cache_config)\b")
    assert private == []


def test_family_tables_live_in_the_specs():
    """No module but the family specs (``models/families/``) names a family's model classes or
    its original-format ``model_type``."""
    pattern = r"(ForConditionalGeneration\b|\"internvl_chat\")"
    outside = [p for p in _definitions(pattern) if not p.startswith("baglm_nb/models/families/")]
    assert outside == []


def test_light_inputs_modules_import_no_heavy_library():
    """Only the video and live readers of ``inputs`` load torch, numba, transformers or PyAV."""
    import subprocess
    import sys

    heavy_ok = {"video", "live", "live_items", "frame_times"}
    light = sorted(
        p.stem
        for p in (PACKAGE / "inputs").glob("*.py")
        if p.stem not in heavy_ok and p.stem != "__init__"
    )
    assert {"datasets", "grid", "tasks"} <= set(light) and "preprocess" not in light
    code = (
        "import importlib, sys\n"
        f"for m in {light!r}: importlib.import_module('baglm_nb.inputs.' + m)\n"
        "print(sorted(x for x in ('torch', 'numba', 'transformers', 'av') if x in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_building_the_command_line_loads_no_heavy_library():
    """Every verb registers without pandas, numba, torch or transformers, so a quick verb
    (``render`` after each notebook, ``--help``, ``stats --names``) starts in a fraction of a
    second; the verbs load them when they run."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from baglm_nb.apps.cli.main import build_parser\n"
        "build_parser()\n"
        "heavy = ('pandas', 'numba', 'torch', 'transformers', 'av', 'ray')\n"
        "print(sorted(x for x in heavy if x in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


#: Where score and dependency caches may be opened: their stores and the two resolver modules.
CACHE_OPENERS = ("baglm_nb/stores/", "baglm_nb/core/sources.py", "baglm_nb/core/observations.py")


def _cache_opens(path: Path) -> list[int]:
    """Lines of ``path`` that call ``ScoreCache.open`` or ``DependencyCache.open``."""
    return [
        node.lineno
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.Attribute)
        and node.attr == "open"
        and isinstance(node.value, ast.Name)
        and node.value.id in ("ScoreCache", "DependencyCache")
    ]


def test_caches_are_opened_only_by_the_resolvers():
    """The resolver rule: every other module hands its setting to core/sources.py."""
    outside, inside = [], set()
    for path in MODULES:
        lines = _cache_opens(path)
        if _rel(path).startswith(CACHE_OPENERS):
            inside.update([_rel(path)] if lines else [])
        else:
            outside += [f"{_rel(path)}:{n}" for n in lines]
    assert not outside, f"caches opened outside the resolvers: {outside}"
    # the scan does find the calls where they belong
    assert {"baglm_nb/core/sources.py", "baglm_nb/core/observations.py"} <= inside


#: The one module that constructs caches, and the writers that must get theirs from it.
CACHE_FACTORY = "baglm_nb/stores/caches.py"
CACHE_WRITERS = (
    "baglm_nb/core/simulate.py",
    "baglm_nb/models/dependencies.py",
    "baglm_nb/models/scoring.py",
    "baglm_nb/stores/importer.py",
)
_CACHE_CLASSES = ("ScoreCache", "DependencyCache", "ParquetFolder")


def _calls(path: Path, names: tuple[str, ...]) -> list[int]:
    """Lines of ``path`` that call a name of ``names`` (``f(...)`` or ``x.f(...)``)."""
    return [
        node.lineno
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.Call)
        and (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) in names
    ]


def test_caches_are_created_only_by_the_factory():
    """A cache folder and its config.json are made by constructing a cache, which only
    stores/caches.py::create_cache does; every writer calls it, and the config is written by
    the constructor alone (stores/parquet.py)."""
    constructed, creators = [], set()
    for path in MODULES:
        rel = _rel(path)
        if rel != CACHE_FACTORY:
            constructed += [f"{rel}:{n}" for n in _calls(path, _CACHE_CLASSES)]
        if _calls(path, ("create_cache",)):
            creators.add(rel)
        if rel != "baglm_nb/stores/parquet.py":
            assert not _calls(path, ("_create_or_check_config",)), rel
    assert not constructed, f"caches constructed outside {CACHE_FACTORY}: {constructed}"
    assert set(CACHE_WRITERS) <= creators, sorted(set(CACHE_WRITERS) - creators)
    # the scan does see a construction where there is one
    assert _calls(PACKAGE / "stores" / "caches.py", _CACHE_CLASSES)
    assert _calls(PACKAGE / "stores" / "parquet.py", ("_create_or_check_config",))


def _cli_modules() -> list[Path]:
    return sorted((PACKAGE / "apps" / "cli").glob("*.py"))


def test_only_cli_main_maps_errors_to_exit_codes():
    """The verbs raise; only apps/cli/main.py prints ``error:`` lines and picks exit statuses."""
    found = []
    for path in _cli_modules():
        if path.name == "main.py":
            continue
        for node in ast.walk(_tree(path)):
            text = None
            if isinstance(node, ast.Name) and node.id == "SystemExit":
                text = "SystemExit"
            elif isinstance(node, ast.Attribute) and node.attr == "exit":
                text = "an exit call"
            elif isinstance(node, ast.Return) and isinstance(node.value, ast.Constant):
                text = f"return {node.value.value}" if node.value.value in (1, 2) else None
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = "an 'error:' line" if node.value.startswith("error:") else None
            if text:
                found.append(f"{_rel(path)}:{node.lineno}: {text}")
    assert not found, f"a verb maps an error to an exit status itself: {found}"


def test_server_flags_are_declared_once():
    """One ServerOptions (apps/cli/options.py) declares the flags of every served model."""
    flags = r"\"--(base-url|api-key-env|concurrency|request-attempts|top-logprobs)\""
    assert _definitions(flags) == ["baglm_nb/apps/cli/options.py"]


def _modules_imported_by(path: Path) -> set[str]:
    """The modules ``path`` imports, at any level."""
    names = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom):
            names.add(node.module or "")
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_the_follow_verb_only_parses_and_calls():
    """apps/cli/follow.py parses its flags into a FollowConfig and calls; the run lives in
    apps/online, which never calls back into the command line; apps/render.py renders and
    parses no command line."""
    assert len((PACKAGE / "apps" / "cli" / "follow.py").read_text().splitlines()) <= 175
    for path in [*sorted((PACKAGE / "apps" / "online").glob("*.py")), PACKAGE / "apps/render.py"]:
        cli_imports = [m for m in _modules_imported_by(path) if m.startswith("baglm_nb.apps.cli")]
        assert not cli_imports, path
    assert "argparse" not in _modules_imported_by(PACKAGE / "apps" / "render.py")


def _command_line_uses(source: str) -> list[str]:
    """Where ``source`` sees a parsed command line: argparse imported, a ``Namespace`` named,
    a parameter called ``args``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [getattr(node, "module", None) or ""] + [a.name for a in node.names]
            if any(name.split(".")[0] == "argparse" for name in names):
                found.append(f"{node.lineno}: imports argparse")
        elif isinstance(node, ast.Name | ast.Attribute):
            if (node.id if isinstance(node, ast.Name) else node.attr) == "Namespace":
                found.append(f"{node.lineno}: a Namespace")
        elif isinstance(node, ast.arg) and node.arg == "args":
            found.append(f"{node.lineno}: a parameter 'args'")
    return found


def test_apps_online_never_sees_the_command_line():
    """The command line builds a FollowConfig (apps/follow_config.py); apps/online reads it and
    never the parsed flags: no module of it imports argparse, names a Namespace or takes
    ``args``."""
    paths = [*sorted((PACKAGE / "apps" / "online").glob("*.py")), PACKAGE / "apps/follow_config.py"]
    found = [f"{_rel(p)}:{where}" for p in paths for where in _command_line_uses(p.read_text())]
    assert not found, f"apps/online sees the command line: {found}"
    # the check finds each kind of use
    bad = "import argparse\ndef f(args: argparse.Namespace): pass\n"
    assert [x.split(": ")[1] for x in _command_line_uses(bad)] == [
        "imports argparse",
        "a parameter 'args'",
        "a Namespace",
    ]
    session = ast.parse((PACKAGE / "apps/online/session.py").read_text())
    run = next(n for n in session.body if getattr(n, "name", "") == "run_follow")
    assert ast.unparse(run.args.args[0].annotation) == "FollowConfig"


def test_only_cli_main_turns_a_signal_into_an_exit_status():
    """A followed run stopped by a signal raises ``Interrupted(signum)``; only apps/cli/main.py
    turns it into 130 / 143: no other module adds 128 to a number or writes 130 or 143."""
    found = []
    for path in MODULES:
        if _rel(path) == "baglm_nb/apps/cli/main.py":
            continue
        for node in ast.walk(_tree(path)):
            plus_128 = isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)
            plus_128 = plus_128 and 128 in [
                getattr(x, "value", None) for x in (node.left, node.right)
            ]
            status = isinstance(node, ast.Constant) and type(node.value) is int
            if plus_128 or (status and node.value in (130, 143)):
                found.append(f"{_rel(path)}:{node.lineno}")
    assert not found, f"an exit status of a signal outside apps/cli/main.py: {found}"
    main = ast.parse((PACKAGE / "apps/cli/main.py").read_text())
    assert {130, 143} <= {n.value for n in ast.walk(main) if isinstance(n, ast.Constant)}


def test_apps_online_has_no_import_circle():
    """Function-level imports count: the package's modules form no circle."""
    package = PACKAGE / "apps" / "online"
    graph: dict[str, set[str]] = {}
    for path in package.glob("*.py"):
        graph[path.stem] = {
            node.module.rsplit(".", 1)[1]
            for node in ast.walk(_tree(path))
            if isinstance(node, ast.ImportFrom)
            and (node.module or "").startswith("baglm_nb.apps.online.")
        }

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, ()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    assert not [name for name in graph if reaches(name, name, set())]


def _vocabularies() -> dict[str, tuple[set[str], str]]:
    """Each vocabulary's names and the one module allowed to write them as a collection."""
    from baglm_nb.inputs import variants
    from baglm_nb.inputs.datasets import DATASETS
    from baglm_nb.inputs.metric_specs import METRICS

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
        "metric": (set(METRICS), "baglm_nb/inputs/metric_specs.py"),
    }


#: The paper's record: its tables are keyed by the names the paper reports them under (a
#: dataset's paper values live there, ``docs/architecture.md``), so its dict keys may name them.
PAPER_RECORD = "baglm_nb/inputs/paper.py"


def _string_collections(tree: ast.AST, *, dict_keys: bool = True):
    """``(lineno, names)`` of every tuple, list, set or ``Literal[...]`` of >= 2 str constants,
    and (``dict_keys``) of every dict literal's keys when they are >= 2 str constants."""
    for node in ast.walk(tree):
        elts = None
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            elts = node.elts
        elif isinstance(node, ast.Subscript) and getattr(node.value, "id", "") == "Literal":
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        elif dict_keys and isinstance(node, ast.Dict) and None not in node.keys:
            elts = node.keys
        if elts and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in elts):
            names = {e.value for e in elts}
            if len(names) >= 2:
                yield node.lineno, names


def _help_texts(tree: ast.AST):
    """``(lineno, text)`` of every ``help=`` / ``description=`` argument: its constant parts
    (an f-string's literal text; what it interpolates is derived, not written)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg in ("help", "description"):
            parts = [
                c.value
                for c in ast.walk(node.value)
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            ]
            yield node.value.lineno, " ".join(parts)


def _named_in(text: str, vocabulary: set[str]) -> set[str]:
    return {n for n in vocabulary if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text)}


def _vocabulary_copies(path: Path, vocabularies) -> list[str]:
    """Where ``path`` writes >= 2 names of one vocabulary outside its home: a literal
    collection, a dict literal's keys (but in the paper's record), or a help string."""
    rel = _rel(path) if path.is_relative_to(PACKAGE.parent) else path.name
    tree = _tree(path)
    copies = []
    for lineno, names in _string_collections(tree, dict_keys=rel != PAPER_RECORD):
        for what, (vocabulary, home) in vocabularies.items():
            if names <= vocabulary and rel != home:
                copies.append(f"{rel}:{lineno} {what} names {sorted(names)}")
    for lineno, text in _help_texts(tree):
        for what, (vocabulary, home) in vocabularies.items():
            if len(named := _named_in(text, vocabulary)) >= 2 and rel != home:
                copies.append(f"{rel}:{lineno} help lists {what} names {sorted(named)}")
    return copies


def test_the_vocabulary_is_written_in_one_place():
    """No literal collection (dict keys included) of transition, prior, stepping, precision,
    gap-mode, localization, dataset or metric names outside its home (inputs/variants.py;
    DATASETS for the dataset names; inputs/metric_specs.py for the metric keys), and no help
    string that lists them by hand (derive it from the vocabulary)."""
    vocabularies = _vocabularies()
    copies = [c for path in MODULES for c in _vocabulary_copies(path, vocabularies)]
    assert not copies, f"vocabulary written outside its module: {copies}"


def test_the_vocabulary_rule_sees_dict_keys_and_help_strings(tmp_path):
    """The scan itself: a dict keyed by the names, and a help string listing them, are found;
    the same text built from the vocabulary is not."""
    vocabularies = {"transition": ({"static", "both", "readiness"}, "elsewhere.py")}
    bad = tmp_path / "bad.py"
    bad.write_text(
        'MARKS = {"static": 1, "both": 2}\n'
        'p.add_argument("--t", help="static, readiness or both")\n'
        'p.add_argument("--u", help=f"one of {TRANSITIONS}; static-like words: bothered")\n'
    )
    found = _vocabulary_copies(bad, vocabularies)
    assert len(found) == 2 and "names ['both', 'static']" in found[0] and "help" in found[1]


def test_no_code_branches_on_a_dataset_name():
    """Dataset differences are DatasetSpec fields: no ``==``/``!=``/``in`` against a name."""
    from baglm_nb.inputs.datasets import DATASETS

    branches = []
    for path in MODULES:
        for node in ast.walk(_tree(path)):
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


def test_result_tables_carry_their_items_and_sources_in_one_object():
    """Items live in a ``ResultTable``, never in ``DataFrame.attrs`` (``pd.concat`` drops them);
    source labels are joined in one function, which the notebooks call."""
    import json

    assert not [_rel(p) for p in MODULES if re.search(r"\.attrs\b", p.read_text())]
    assert _definitions(r'" \+ "\.join') == ["baglm_nb/analyses/result_table.py"]
    notebooks = sorted((PACKAGE.parent / "notebooks").glob("*.ipynb"))
    code = {
        n.name: "".join(
            "".join(c["source"])
            for c in json.loads(n.read_text())["cells"]
            if c["cell_type"] == "code"
        )
        for n in notebooks
    }
    assert not [name for name, text in code.items() if '" + ".join' in text]
    assert not [name for name, text in code.items() if "write_table(" in text]
