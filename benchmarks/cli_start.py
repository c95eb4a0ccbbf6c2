"""How long a cheap command-line run takes, start to exit: ``python -m baglm_nb <verb>``.

Each verb runs as a person (or a test) runs it, in a new process, on a representative run
that needs no model, plot or notebook (a replay, a small evaluation, a simulation, the bad
input of a verb that would load a model); most of such a run's time used to be imports it did
not need (``tests/test_import_cost.py`` checks, by module name, that they stay out). Prints,
per verb, the median wall time of ``--runs`` runs (default 3) and its ratio to the goal
(``--goal``, default 1.5 s), and the load average and the machine's stretch
(``tests/busy_machine.py``: 1 on a quiet machine; on a busy one the times grow about as much).

    .venv/bin/python benchmarks/cli_start.py [--runs 3] [--goal 1.5] [--verb NAME ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the timing helper of the tests

from busy_machine import machine_stretch  # noqa: E402

#: The runs timed: name -> (argv, expected exit status); ``{tmp}`` is a scratch folder.
RUNS = {
    "follow --replay": (
        ["follow", "--replay", "simulated", "--dataset", "htstep", "--", "-25-1nbOki0"], 0
    ),
    "evaluate": (["evaluate", "--dataset", "coin", "--scores", "simulated", "--limit", "3"], 0),
    "simulate": (["simulate", "--dataset", "coin", "--limit", "2", "--cache-root", "{tmp}"], 0),
    "alerts": (["alerts", "--dataset", "coin", "--limit", "2"], 0),
    "sim-check": (["sim-check", "--dataset", "coin", "--limit", "2"], 0),
    "calibrate --stored": (
        ["calibrate", "--stored", "--dataset", "ego4d_goalstep", "--twin", "iid"], 0
    ),
    "deps --backend oracle": (
        ["deps", "--dataset", "coin", "--backend", "oracle", "--no-progress",
         "--cache-root", "{tmp}"], 0,
    ),
    "stats": (["stats", "--dataset", "htstep"], 0),
    "score (bad input)": (
        ["score", "--dataset", "coin", "--video-dir", "{tmp}/missing", "--model",
         "random-init:internvl"], 2,
    ),
    "follow --model (bad input)": (["follow", "{tmp}/clip.mp4", "--model", "x"], 2),
    "render (bad input)": (["render", "{tmp}/missing.ipynb"], 2),
}  # fmt: skip


def time_run(argv: list[str], status: int, runs: int) -> float:
    """The median wall time (s) of ``runs`` runs of ``python -m baglm_nb ARGV``, start to
    exit; a run that exits with another status than ``status`` stops the benchmark."""
    times = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            args = [a.replace("{tmp}", tmp) for a in argv]
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "baglm_nb", *args],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=600,
            )
            times.append(time.perf_counter() - start)
        if done.returncode != status:
            raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}, not {status}:\n"
                             f"{done.stderr[-2000:]}")  # fmt: skip
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per verb (the median is shown)")
    parser.add_argument("--goal", type=float, default=1.5, help="seconds per run")
    parser.add_argument("--verb", nargs="+", choices=list(RUNS), help="only these runs")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}, stretch {machine_stretch():.1f}x")
    width = max(map(len, RUNS))
    for name in args.verb or RUNS:
        argv, status = RUNS[name]
        took = time_run(argv, status, args.runs)
        print(
            f"{name:<{width}}  {took:6.2f} s (median of {args.runs})  "
            f"{took / args.goal:5.2f}x the {args.goal:g} s goal",
            flush=True,
        )
    print(f"load average {os.getloadavg()[0]:.1f}, stretch {machine_stretch():.1f}x")


if __name__ == "__main__":
    main()
