"""Progress output: tqdm bars sparse in logs, live on a terminal; the runner's [i/N] lines.

``baglm_nb.inputs.progress.bar_options`` is what every bar of the package takes: nothing on a
terminal, a redraw at most every ``LOG_INTERVAL_S`` seconds otherwise (a log would collect one
carriage return per redraw). ``make data`` (the ``simulate`` verb) is run into a pipe as a log
would be.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tqdm import tqdm

from baglm_nb.inputs.progress import LOG_INTERVAL_S, bar_options

ROOT = Path(__file__).resolve().parent.parent


def _redraws(**options) -> int:
    """Carriage returns a bar writes to a string over ~0.6 s of work (60 items of 10 ms)."""
    out = io.StringIO()
    for _ in tqdm(range(60), file=out, **options):
        time.sleep(0.01)
    return out.getvalue().count("\r")


def test_bars_redraw_sparsely_off_a_terminal_and_live_on_one():
    assert bar_options(io.StringIO()) == {
        "mininterval": LOG_INTERVAL_S,
        "maxinterval": 2 * LOG_INTERVAL_S,
    }
    assert LOG_INTERVAL_S <= 10  # still a line at least every 10 s on a long job
    primary, secondary = os.openpty()
    with os.fdopen(secondary, "w") as terminal:
        assert bar_options(terminal) == {}
    os.close(primary)
    # tqdm itself with those options: its start and its end only, where the default redraws
    assert _redraws(**bar_options(io.StringIO())) <= 3 < _redraws()


def test_make_data_writes_no_carriage_return_spam_to_a_log(tmp_path):
    """The ``simulate`` verb (``make data``) into a pipe: each bar draws its start and end."""
    out = subprocess.run(
        [sys.executable, "-m", "baglm_nb", "simulate", "--dataset", "coin", "crosstask",
         "--limit", "60", "--cache-root", str(tmp_path)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    bars = out.stderr.count("100%")
    assert bars == 2, out.stderr
    assert out.stderr.count("\r") <= 2 * bars, out.stderr


def _tiny_notebook(path: Path, text: str) -> None:
    """A notebook with a ``parameters`` cell and one line of output, committed clean."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("x = 1")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(f"print({text!r}, x)")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(nb, path)


def _make_figures(folder: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("MAKEFLAGS", None)
    out = subprocess.run(
        ["make", "-s", "figures"], cwd=folder, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


@pytest.mark.slow
def test_make_figures_numbers_the_notebooks_across_the_whole_run(tmp_path):
    """``make figures`` (the real Makefile and runner) on two tiny notebooks: [1/2], [2/2] with
    the elapsed time, one closing line; then nothing to do; then only the changed one, [1/1]."""
    for name in ("Makefile", "scripts/run_notebooks.sh"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / ".venv").symlink_to((ROOT / ".venv").resolve())
    (tmp_path / "baglm_nb").symlink_to(ROOT / "baglm_nb")
    (tmp_path / "notebooks").mkdir()
    _tiny_notebook(tmp_path / "notebooks/00_first.ipynb", "first")
    _tiny_notebook(tmp_path / "notebooks/01_second.ipynb", "second")
    prepared = tmp_path / "data/cache/prepared.json"  # make data's manifest, already made
    prepared.parent.mkdir(parents=True)
    prepared.write_text('{"scores": {}}')

    lines = _make_figures(tmp_path).splitlines()
    starts = [x for x in lines if re.fullmatch(r"\[\d/2\] 0\d_\w+\.ipynb \(elapsed \d+:\d\d\)", x)]
    assert [x.split()[0] for x in starts] == ["[1/2]", "[2/2]"], lines
    assert {x.split()[1] for x in starts} == {"00_first.ipynb", "01_second.ipynb"}
    assert sum(" ok in " in x for x in lines) == 2
    assert not any("[1/1]" in x or x.startswith("All ") for x in lines), lines
    assert lines[-1].startswith("figures: 2 notebook(s) executed in ")
    assert (tmp_path / "figures/01_second/01_second.html").is_file()

    again = _make_figures(tmp_path)
    assert "pages are up to date" in again and "[" not in again

    time.sleep(1.1)  # a newer modification time than the page's
    (tmp_path / "notebooks/01_second.ipynb").touch()
    lines = _make_figures(tmp_path).splitlines()
    assert [x.split()[:2] for x in lines if x.startswith("[")] == [
        ["[1/1]", "01_second.ipynb"],
        ["[1/1]", "01_second.ipynb"],
    ], lines


def _heartbeat(command: str, seconds: int = 1) -> subprocess.CompletedProcess:
    script = f'source scripts/heartbeat.sh; with_heartbeat demo "$LOG" {command}'
    return subprocess.run(
        ["bash", "-c", script],
        cwd=ROOT,
        env={**os.environ, "HEARTBEAT_S": str(seconds), "LOG": os.devnull},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_long_setup_step_prints_a_line_every_heartbeat(tmp_path):
    log = tmp_path / "step.log"
    script = (
        f"source scripts/heartbeat.sh; with_heartbeat demo {log} "
        "bash -c 'echo collecting torch; sleep 4.5; echo done'"
    )
    out = subprocess.run(
        ["bash", "-c", script], cwd=ROOT, env={**os.environ, "HEARTBEAT_S": "1"},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    beats = [x for x in out.stdout.splitlines() if x.startswith("setup: demo ... ")]
    assert len(beats) >= 3, out.stdout  # about one a second over 4.5 s
    assert all(x.endswith(" s (collecting torch)") for x in beats), beats
    assert log.read_text() == "collecting torch\ndone\n"  # the output went to the log
    assert _heartbeat("bash -c 'exit 3'").returncode == 3  # the command's status is kept


def test_every_long_step_of_make_setup_runs_under_a_heartbeat():
    """scripts/setup.sh: each pip install, the venv, the converter, the kernel and the wait for
    apt-get go through with_heartbeat / wait_heartbeat (at least a line every 10 s)."""
    text = (ROOT / "scripts/setup.sh").read_text()
    assert 'source "$ROOT/scripts/heartbeat.sh"' in text
    assert re.search(r"HEARTBEAT_S=\"\$\{HEARTBEAT_S:-(\d+)\}\"", (ROOT / "scripts/heartbeat.sh")
                     .read_text()).group(1) == "10"  # fmt: skip
    statements = re.sub(r"\\\n\s*", " ", text).splitlines()
    long_steps = [
        s
        for s in statements
        if not s.lstrip().startswith(("#", "fail ", "echo "))
        and re.search(r"-m pip install|-m venv|ipykernel install|fetch_gguf_converter\.sh\" ", s)
    ]
    assert len(long_steps) == 6, long_steps  # venv, pip x3, converter, kernel
    for step in long_steps:
        assert "with_heartbeat " in step, step
    assert 'wait "$apt_pid"' not in text and text.count('wait_heartbeat "apt-get') == 2
