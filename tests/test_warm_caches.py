"""scripts/warm_caches.py: `make setup`'s last step builds what every first run would build."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import pkgutil
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numba.core.registry
import pytest

import baglm_nb

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def warm():
    spec = importlib.util.spec_from_file_location("warm_caches", ROOT / "scripts/warm_caches.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _kernels() -> dict[str, numba.core.registry.CPUDispatcher]:
    """Every numba kernel of baglm_nb, by ``module.name`` (modules whose source uses numba)."""
    found = {}
    for info in pkgutil.walk_packages(baglm_nb.__path__, "baglm_nb."):
        path = Path(importlib.util.find_spec(info.name).origin)
        if info.ispkg or not re.search(r"@numba\.njit", path.read_text()):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, numba.core.registry.CPUDispatcher):
                found[f"{info.name}.{name}"] = value
    return found


#: Run in a process of its own, as make setup runs the step: the kernels its paths reached.
REACHED = """
import importlib.util, json, sys
sys.path.insert(0, {tests!r})
from test_warm_caches import _kernels
spec = importlib.util.spec_from_file_location("warm_caches", {script!r})
warm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(warm)
warm.warm_numba()
print(json.dumps(sorted(name for name, k in _kernels().items() if k.signatures)))
"""


def _entry_kernels(kernels: dict[str, numba.core.registry.CPUDispatcher]) -> list[str]:
    """The kernels called from Python: those no other kernel of their module calls (a kernel
    called by another is compiled into it, and loaded from the caller's cache with it)."""
    called = set()
    for name, k in kernels.items():
        module, _, own = name.rpartition(".")
        body = inspect.getsource(k.py_func)
        for other in kernels:
            other_module, _, other_name = other.rpartition(".")
            if other_module == module and other_name != own:
                if re.search(rf"\b{other_name}\(", body):
                    called.add(other)
    return sorted(set(kernels) - called)


def test_the_numba_step_reaches_and_caches_every_kernel():
    kernels = _kernels()
    assert len(kernels) >= 20  # filtering, smoothing, published numerics, localization, ...
    entries = _entry_kernels(kernels)
    assert "baglm_nb.core.filtering._forward" in entries
    assert "baglm_nb.core.filtering._update" not in entries  # _step calls it
    code = REACHED.format(tests=str(ROOT / "tests"), script=str(ROOT / "scripts/warm_caches.py"))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    reached = json.loads(done.stdout.strip().splitlines()[-1])
    # every kernel called from Python got a signature in that process (compiled, or loaded
    # from its cache with the kernels it calls) ...
    assert sorted(set(entries) - set(reached)) == []
    # ... and every kernel's on-disk index holds a signature for the current source (numba
    # reads an index written for another version of the file as empty)
    empty = [name for name, k in kernels.items() if not k._cache._cache_file._load_index()]
    assert sorted(empty) == []


def test_the_model_steps_leave_what_their_first_use_reads(warm, monkeypatch):
    from baglm_nb.models.gguf import convert_gguf, model_cache_dir
    from baglm_nb.models.llm_local import smollm2_gguf
    from baglm_nb.models.testing import random_gguf

    warm.warm_models()
    warm.warm_fixtures()

    # the first uses below only read: each builds its files in a fresh temporary folder first
    def no_build(*args, **kwargs):
        pytest.fail("not warm: a first use would build its files now")

    monkeypatch.setattr(tempfile, "mkdtemp", no_build)
    folder = convert_gguf(smollm2_gguf())
    assert folder.parent == model_cache_dir() and (folder / ".complete").is_file()
    for seed in (0, 1):
        paths = random_gguf("qwen2_5_vl", seed=seed) if seed else random_gguf("qwen2_5_vl")
        assert all(p.is_file() and p.stat().st_size > 0 for p in paths)


def test_a_failing_step_is_one_error_line_and_exit_1(warm, monkeypatch, capsys):
    monkeypatch.setenv("TQDM_DISABLE", "1")  # main sets it for its process: undone after this test

    def broken() -> None:
        raise RuntimeError("no space left")

    monkeypatch.setitem(warm.STEPS, "numba", broken)
    assert warm.main(["--numba"]) == 1
    out, err = capsys.readouterr()
    assert err.strip().splitlines() == ["error: warming the numba cache failed: no space left"]
    assert out == ""
    with pytest.raises(RuntimeError, match="no space left"):
        warm.main(["--numba", "--debug"])


def test_setup_runs_the_warm_step_after_the_installs():
    setup = (ROOT / "scripts/setup.sh").read_text()
    warm_at = setup.index('"$ROOT/scripts/warm_caches.py"')
    assert setup.index("pip install -e") < warm_at
    assert setup.index('fetch_gguf_converter.sh" "$VPY"') < warm_at  # the fixtures need it
    assert setup.index('wait_heartbeat "apt-get install') < warm_at
