"""The README's quick start, run as written in a fresh shell.

The ``bash`` block under "## Quick start" is read from README.md and every command in it is run,
in order, by one ``bash --noprofile --norc -e`` with an empty environment (``env -i``: no
activated venv, no ``VIRTUAL_ENV``, a PATH of the system's directories only, a new HOME), in a
copy of this repository (``.venv`` linked in), so nothing the commands write lands in the
checkout under test. The copy's code is what runs: ``PYTHONPATH`` names the copy, as the
editable install names a user's own checkout.

None is skipped; the long ones run with small parameters, or as a dry run where running them
would change the machine or recurse:

* ``make setup`` installs system packages (apt-get, as root) and packages into ``.venv``, the
  environment this very test runs in: it runs as ``make -n setup`` (the target resolves to
  ``scripts/setup.sh``), the script is parsed with ``bash -n``, and the test checks that what it
  builds is there (``.venv/bin/python``, ``.venv/bin/jupyter``, the ``python3`` kernelspec).
* ``make test`` would run this test inside itself: it runs through the same target on one
  other test file (``PYTEST_ARGS``, ``TEST_WORKERS=0``), which proves the target finds pytest
  in ``.venv`` from a fresh shell.
* ``make figures`` runs for real, with ``make data`` (the simulated cache of one dataset,
  ``DATASETS=ego4d_goalstep``, the smallest: the same rule as for the four) and one notebook
  (``NOTEBOOKS=notebooks/00_dataset_statistics.ipynb``); its HTML must exist.
* ``make lab`` blocks until stopped: it is started on a free 127.0.0.1 port (``LAB_PORT``) with a
  known token, must answer HTTP (the server's ``/api``, the explorer notebook and the
  ``python3`` kernelspec) within 120 s, and is stopped (its whole process group).
* Every other command (``source .venv/bin/activate``, ``python -m baglm_nb follow ...``) runs
  exactly as written.

The block runs once per module (``quick_start``): the test of the block and the test of its
``follow`` line look at the same run.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: What each long or machine-changing command runs instead (module docstring); None: make lab.
SMALL = {
    "make setup": "make -n setup | grep 'bash scripts/setup.sh' && bash -n scripts/setup.sh",
    "make test": "make test TEST_WORKERS=0 "
    "PYTEST_ARGS='-q -p no:cacheprovider tests/test_environment.py::test_makefile_targets'",
    # make data for the smallest dataset (DATASETS: the Makefile's list of them), the same
    # rule and `simulate --manifest` as for all four; notebook 00 reads the annotations only
    "make figures": "make figures NOTEBOOKS=notebooks/00_dataset_statistics.ipynb "
    "DATASETS=ego4d_goalstep",
    "make lab": None,
}
#: Folders of the checkout that are outputs or tools, not the repository (.gitignore).
NOT_COPIED = {".venv", ".git", "build", ".pytest_cache", ".ruff_cache", "__pycache__"}
OUTPUTS = {"data/cache", "figures/_work", "tests/artifacts"}


def quick_start_commands(readme: str) -> list[str]:
    """The commands of the first ``bash`` block under "## Quick start", comments removed."""
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    commands = []
    for line in block.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if words:
            commands.append(" ".join(shlex.quote(w) for w in words))
    return commands


def _ignore(folder: str, names: list[str]) -> set[str]:
    rel = Path(folder).relative_to(ROOT)
    skip = {n for n in names if n in NOT_COPIED or n.endswith(".egg-info")}
    if rel.parts[:1] == ("baglm_nb",):
        # the package's compiled modules and numba's on-disk caches, as a clone has them once
        # it was used (make setup warms them): copied with their files' times, so that the
        # copy's processes load them rather than compile every kernel again (each numba
        # kernel's cache is checked against its source file's time and size)
        skip.discard("__pycache__")
    skip |= {n for n in names if (rel / n).as_posix() in OUTPUTS}
    if rel.as_posix() == "figures":  # rendered notebooks; figures/README.md is tracked
        skip |= {n for n in names if (ROOT / "figures" / n).is_dir()}
    return skip


@pytest.fixture(scope="module")
def fresh_copy(tmp_path_factory) -> Path:
    """A copy of the repository's files with ``.venv`` linked in (a clone after make setup,
    its package's ``__pycache__`` included: :func:`_ignore`)."""
    copy = tmp_path_factory.mktemp("clone") / "baglm-workbench"
    shutil.copytree(ROOT, copy, ignore=_ignore, symlinks=True)
    (copy / ".venv").symlink_to((ROOT / ".venv").resolve())
    return copy


def fresh_env(copy: Path) -> dict[str, str]:
    """The environment of a new login: nothing of this test process's (no venv on PATH)."""
    home = copy.parent / "home"
    home.mkdir(exist_ok=True)
    return {
        "HOME": str(home),
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(copy),
    }


def test_the_quick_start_block_names_every_command():
    commands = quick_start_commands((ROOT / "README.md").read_text())
    makes = [c for c in commands if c.startswith("make ")]
    assert makes == ["make setup", "make test", "make figures", "make lab"]
    assert "source .venv/bin/activate" in commands
    python = [c for c in commands if c.startswith("python ")]
    assert python and commands.index("source .venv/bin/activate") < commands.index(python[0])
    targets = subprocess.run(
        ["make", "-C", str(ROOT), "-s", "help"], capture_output=True, text=True, check=True
    ).stdout
    for command in makes:
        assert f"  {command} " in targets, f"make help does not list {command!r}"


@pytest.fixture(scope="module")
def quick_start(fresh_copy) -> subprocess.CompletedProcess:
    """The quick start block run once in a fresh shell in ``fresh_copy`` (module docstring),
    each command's output after a ``>>> <command>`` line (:func:`command_output`)."""
    commands = quick_start_commands((ROOT / "README.md").read_text())
    script = ["set -euo pipefail"]
    for command in commands:
        run = SMALL.get(command, command)
        if run is not None:  # make lab: test_make_lab_serves_the_explorer_on_localhost
            script += [f"echo '>>> {command}'", run]
    return subprocess.run(
        [
            "env",
            "-i",
            *[f"{k}={v}" for k, v in fresh_env(fresh_copy).items()],
            "bash",
            "--noprofile",
            "--norc",
            "-c",
            "\n".join(script),
        ],
        cwd=fresh_copy,
        capture_output=True,
        text=True,
        timeout=600,
    )


def command_output(stdout: str, command: str) -> str:
    """What ``command`` printed in the quick start's ``stdout`` (up to the next command)."""
    return stdout.split(f">>> {command}\n", 1)[1].split("\n>>> ", 1)[0]


@pytest.mark.slow
@pytest.mark.timeout(900)  # make data + one notebook + a pytest run + a replay, on 2 busy cores
def test_the_quick_start_runs_as_written_in_a_fresh_shell(fresh_copy, quick_start):
    commands = quick_start_commands((ROOT / "README.md").read_text())
    out = quick_start
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert out.stdout.count(">>> ") == len(commands) - 1
    venv = fresh_copy / ".venv"
    for tool in ("bin/python", "bin/jupyter", "share/jupyter/kernels/python3/kernel.json"):
        assert (venv / tool).exists(), f"make setup did not build {tool}"
    assert "1 passed" in out.stdout  # make test, through .venv's pytest
    assert (fresh_copy / "data/cache/prepared.json").is_file()  # make data
    html = fresh_copy / "figures/00_dataset_statistics/00_dataset_statistics.html"
    assert html.stat().st_size > 10_000
    report = fresh_copy / "reports/follow.html"  # python -m baglm_nb follow ..., activated venv
    assert "SIMULATED observations" in report.read_text()
    assert "status: 283 segments" in out.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, token: str) -> dict:
    return json.loads(_read(url, token))


def _read(url: str, token: str) -> bytes:
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read()


@pytest.mark.slow
def test_make_lab_serves_the_explorer_on_localhost(fresh_copy):
    """``make lab`` from a fresh shell (as root here when the tests run as root: it adds
    ``--allow-root``): JupyterLab of ``.venv`` answers on 127.0.0.1 with the explorer and the
    project's kernel, its page asks for no news and no build check and the server checks for
    no update (:mod:`baglm_nb.apps.lab`), then it is stopped."""
    port, token = _free_port(), "quickstart-test"
    command = f"make lab LAB_PORT={port} LAB_ARGS=--IdentityProvider.token={token}"
    env = fresh_env(fresh_copy)
    proc = subprocess.Popen(
        [
            "env",
            "-i",
            *[f"{k}={v}" for k, v in env.items()],
            "bash",
            "--noprofile",
            "--norc",
            "-c",
            command,
        ],
        cwd=fresh_copy,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline, version = time.monotonic() + 120, None
        while version is None and time.monotonic() < deadline and proc.poll() is None:
            try:
                version = _get(f"{base}/api", token)["version"]
            except OSError:
                time.sleep(0.5)
        assert version, f"make lab did not answer on {base}"
        explorer = _get(f"{base}/api/contents/explore.ipynb?content=0", token)
        assert explorer["type"] == "notebook" and explorer["name"] == "explore.ipynb"
        specs = _get(f"{base}/api/kernelspecs", token)
        argv = specs["kernelspecs"]["python3"]["spec"]["argv"][0]
        assert Path(argv).resolve() == (ROOT / ".venv" / "bin" / "python").resolve()
        page = _read(f"{base}/lab/tree/explore.ipynb", token).decode()
        config = re.search(r'id="jupyter-config-data"[^>]*>(.*?)</script>', page, re.S)
        config = json.loads(config.group(1))
        assert config["buildCheck"] is False and config["news"] == {"disabled": True}
        assert _get(f"{base}/lab/api/update", token) == {"notification": None}
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            log, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            log, _ = proc.communicate(timeout=30)
    assert f"--ip=127.0.0.1 --port={port}" in log and "--no-browser" in log  # make echoes it
    assert f"the explorer is {base}/lab/tree/explore.ipynb" in log  # the URL it opens to
    assert ("--allow-root" in log) == (os.geteuid() == 0)


def _notebook_parameters(stem: str) -> dict:
    """The values of a notebook's ``parameters`` cell, as the notebook would run them."""
    nb = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    values: dict = {}
    exec("".join(cell["source"]), values)  # noqa: S102 - the repository's own notebook
    return values


@pytest.mark.slow
@pytest.mark.timeout(900)  # the quick start's run (quick_start), when this test comes first
def test_the_quick_start_follow_line_agrees_with_notebook_09s_timeline(fresh_copy, quick_start):
    """The README's ``follow`` line, run as written (in the quick start's fresh shell, its
    venv activated: ``quick_start``), names its D and settings and prints the same video
    metrics as notebook 09's timeline of that video (its smoothed panel, computed here with
    the notebook's own parameters: ``follow``'s defaults)."""
    from baglm_nb.analyses.assistance import quality_text, timeline_data
    from baglm_nb.core import sources
    from baglm_nb.inputs.follow_defaults import FOLLOW_ANNOUNCEMENT

    command = next(
        c
        for c in quick_start_commands((ROOT / "README.md").read_text())
        if c.startswith("python -m baglm_nb follow")
    )
    words = shlex.split(command)
    assert quick_start.returncode == 0, quick_start.stdout[-3000:] + quick_start.stderr[-3000:]
    printed = command_output(quick_start.stdout, command)
    nb = _notebook_parameters("09_assistance")
    uid, dataset = words[-1], words[words.index("--dataset") + 1]
    assert (dataset, uid) == (nb["timeline_dataset"], nb["timeline_video"])
    threshold, patience, lag = FOLLOW_ANNOUNCEMENT  # the notebook's timeline: follow's defaults
    assert (nb["timeline_threshold"], nb["timeline_patience"], nb["timeline_lag"]) == (
        threshold, patience, lag,
    )  # fmt: skip
    obs = sources.observations(dataset, "simulated")  # the notebook: every video
    data = timeline_data(obs, nb["deps"], uid, lag, threshold=threshold, patience=patience)
    lines = printed.splitlines()
    settings = next(x for x in lines if x.startswith("settings: "))
    assert f"D: {nb['deps']}; threshold: {threshold:g}; patience: {patience} " in settings
    assert lines.index(settings) < 3  # among the first lines
    panel = data["smoothed" if lag else "filter"]
    assert f"quality on this video: {quality_text(panel['metrics'])} " in printed
    assert " nan" not in printed.lower()
    report = (fresh_copy / words[words.index("--html") + 1]).read_text()  # the shell's folder
    assert f"<td>{nb['deps']}</td>" in report and ">nan<" not in report.lower()
    assert "<th>smoothing lag</th>" in report and f"<td>{lag} segment" in report
