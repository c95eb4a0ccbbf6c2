"""The GPU path of ``benchmarks/scoring_cost.py`` runs, at toy widths, on the CPU.

``--device cuda --size full`` must run unchanged on a GPU machine, which these machines are not:
``--size full --dry-run`` builds the published InternVL3-8B / Qwen2.5-VL-7B architecture at toy
widths and runs the same code (scorer, both recipes, the comparison, the report). Nothing here is
timed: the benchmark's figures come from running it, not from tests.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "scoring_cost.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    """The script in a new process, as a user runs it."""
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def script():
    """The script loaded once as a module (not as ``__main__``: its ``main()`` is called)."""
    spec = importlib.util.spec_from_file_location("scoring_cost_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _main(script, *args: str) -> subprocess.CompletedProcess:
    """``main()`` of the script in this process with ``args`` as its command line: the exit
    status and the printed text, as :func:`_run` gives them. The global state it changes
    (argv, torch's thread count, the global RNG the model's initialisation draws from) is
    restored."""
    out, err, threads, argv = io.StringIO(), io.StringIO(), torch.get_num_threads(), sys.argv
    try:
        sys.argv = [str(SCRIPT), *args]
        with (
            torch.random.fork_rng(devices=[]),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            rc = script.main()
    finally:
        sys.argv = argv
        torch.set_num_threads(threads)
    return subprocess.CompletedProcess(args, rc, out.getvalue(), err.getvalue())


@pytest.mark.slow
@pytest.mark.parametrize(
    "family,name", [("internvl", "InternVL3-8B"), ("qwen2_5_vl", "Qwen2.5-VL-7B")]
)
def test_the_full_size_path_runs_at_toy_widths(script, family, name):
    # in this process (what runs is the script's code, not a process boundary), on 2 segments
    # rather than the dry run's 4: still 2 per pass, the warm-up, both recipes and the report
    out = _main(script, "--size", "full", "--dry-run", "--compare", "--family", family,
                "--segments", "2")  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stdout
    assert text.startswith("DRY RUN:")
    assert f"random-init/{name}-toy-width (label random-init, torch.float32, SDPA) on CPU" in text
    assert re.search(
        r"workbench: [0-9.]+ s/segment, [0-9.]+ segments/s on the CPU; phases: "
        r"shared [0-9.]+ s, vsg [0-9.]+ s, prog [0-9.]+ s",
        text,
    )
    agree = float(re.search(r"outputs agree to ([0-9.e+-]+) relative", text).group(1))
    assert agree <= 1e-4
    # the same prompts as the tiny model's: every question's tokens are accounted for
    tokens = re.search(r"published ([0-9,]+) \(K\+1 = 11 prompts.*workbench ([0-9,]+)", text)
    published, work = (int(x.replace(",", "")) for x in tokens.groups())
    assert published > work > 0


def test_the_full_size_path_without_cuda_says_so(script):
    out = _run("--size", "full")  # the exit status of a real process
    assert out.returncode == 2 and "--size full needs CUDA" in out.stderr
    out = _main(script, "--dry-run")  # the same exit path: in this process
    assert out.returncode == 2 and "--dry-run goes with --size full" in out.stderr
