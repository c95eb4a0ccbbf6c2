"""scripts/warm_caches.py: `make setup`'s last step builds what every first run would build."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
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


def test_the_numba_step_reaches_every_kernel(warm):
    kernels = _kernels()
    assert len(kernels) >= 20  # filtering, smoothing, published numerics, localization, ...
    warm.warm_numba()
    # each kernel has a compiled (or cache-loaded) signature in this process: the step ran a
    # path through it, so its on-disk cache now holds that signature
    assert sorted(name for name, k in kernels.items() if not k.signatures) == []


def test_the_model_steps_leave_what_their_first_use_reads(warm):
    from baglm_nb.models.gguf import convert_gguf, model_cache_dir
    from baglm_nb.models.llm_local import smollm2_gguf
    from baglm_nb.models.testing import random_gguf

    warm.warm_models()
    warm.warm_fixtures()
    folder = convert_gguf(smollm2_gguf())
    assert folder.parent == model_cache_dir() and (folder / ".complete").is_file()
    for seed in (0, 1):
        paths = random_gguf("qwen2_5_vl", seed=seed) if seed else random_gguf("qwen2_5_vl")
        assert all(p.is_file() and p.stat().st_size > 0 for p in paths)


def test_a_failing_step_is_one_error_line_and_exit_1(warm, monkeypatch, capsys):
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
