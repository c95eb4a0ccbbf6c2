"""``benchmarks/suite_cost.py``: the machine's busy CPU seconds and a command's cost."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "suite_cost.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("suite_cost_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_busy_cpu_is_user_nice_system_irq_softirq_steal(script):
    tick = os.sysconf("SC_CLK_TCK")
    stat = "cpu  100 20 30 1000 50 5 6 7 40 0\ncpu0 1 2 3 4 5 6 7 8 9 0\n"
    assert script.busy_cpu_s(stat) == pytest.approx((100 + 20 + 30 + 5 + 6 + 7) / tick)
    with pytest.raises(ValueError, match="'cpu' line"):
        script.busy_cpu_s("intr 1 2 3\n")


def test_a_command_run_reports_its_cpu_within_the_machines_and_its_exit_status():
    work = "import sys; sum(i * i for i in range(2_000_000)); sys.exit(3)"
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--", sys.executable, "-c", work],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 3, run.stderr
    reaped = float(re.search(r"reaped CPU: ([\d.]+) s", run.stdout).group(1))
    busy = float(re.search(r"machine busy CPU: ([\d.]+) s", run.stdout).group(1))
    wall = float(re.search(r"wall: ([\d.]+) s = ([\d.]+) x", run.stdout).group(1))
    assert 0 < reaped <= busy + 0.05  # the machine's busy time includes the command's own
    assert "(exit 3)" in run.stdout and wall > 0
