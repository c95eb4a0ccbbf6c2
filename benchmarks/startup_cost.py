"""What bytecode saves the test run: CPU seconds of one pytest-xdist worker's collection and of a
command-line process, without and with ``.pyc`` files beside the sources.

``make test`` runs pytest with ``PYTHONDONTWRITEBYTECODE`` unset (the Makefile), so that pytest
keeps its assertion-rewritten test modules and every process the tests start reads baglm_nb's
``.pyc`` instead of compiling it; ``make setup`` compiles baglm_nb (``compileall``). This script
measures both in a throwaway copy of the checkout's tracked files (so the checkout's own
``__pycache__`` folders are neither used nor touched), one run after the other:

* ``pytest --collect-only`` (what each of ``make test``'s workers does before its first test):
  with ``PYTHONDONTWRITEBYTECODE=1`` and no caches (every run in an environment that sets it),
  writing (a fresh clone's first ``make test``), then reading them (every later run);
* ``python -m baglm_nb evaluate`` of 3 simulated COIN videos (after a first run that fills
  numba's caches): from source, then after ``python -m compileall baglm_nb`` (the ``make setup``
  step, timed too).

Prints the CPU seconds (user + sys) and wall seconds of each, and the ratio of the warm run to
the one from source.

    .venv/bin/python benchmarks/startup_cost.py [--runs 1]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVALUATE = ["-m", "baglm_nb", "evaluate", "--dataset", "coin", "--scores", "simulated",
            "--limit", "3"]  # fmt: skip


def copy_checkout(dest: Path) -> None:
    """The tracked files of the checkout (``git ls-files``), without any ``__pycache__``."""
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """CPU seconds (user + sys, the process and its children) and wall seconds of a run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall


def pyc_files(root: Path) -> list[Path]:
    """The ``.pyc`` files under ``root`` (the copy's own, not a virtual environment's)."""
    return [p for p in root.rglob("*.pyc") if ".venv" not in p.parts]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="rounds of every measurement")
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="baglm-startup-") as tmp:
        repo = Path(tmp) / "repo"
        copy_checkout(repo)
        base = {**os.environ, "PYTHONPATH": str(repo), "MPLBACKEND": "Agg"}
        no_write = {**base, "PYTHONDONTWRITEBYTECODE": "1"}
        write = {k: v for k, v in base.items() if k != "PYTHONDONTWRITEBYTECODE"}
        collect = [py, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
        rows: list[tuple[str, float, float]] = []
        for _ in range(args.runs):
            for p in pyc_files(repo):
                p.unlink()
            rows.append(("collect, PYTHONDONTWRITEBYTECODE=1", *timed(collect, repo, no_write)))
            rows.append(("collect, writing (first run)", *timed(collect, repo, write)))
            rows.append(("collect, reading (later runs)", *timed(collect, repo, write)))
            for p in pyc_files(repo):
                p.unlink()
            # numba's kernels compiled into the copy's caches first (as make setup's warm step
            # does for a checkout), so that both runs below only load them
            timed([py, *EVALUATE], repo, no_write)
            rows.append(("evaluate, from source", *timed([py, *EVALUATE], repo, no_write)))
            compile_all = [py, "-m", "compileall", "-q", "baglm_nb"]
            rows.append(("compileall baglm_nb (make setup)", *timed(compile_all, repo, base)))
            rows.append(("evaluate, with .pyc", *timed([py, *EVALUATE], repo, no_write)))
    width = max(len(name) for name, _, _ in rows)
    for name, cpu, wall in rows:
        print(f"{name:<{width}}  {cpu:6.2f} CPU-s  {wall:6.2f} s wall")
    cpu = {name: [c for n, c, _ in rows if n == name] for name, _, _ in rows}
    for warm, cold in (
        ("collect, reading (later runs)", "collect, PYTHONDONTWRITEBYTECODE=1"),
        ("evaluate, with .pyc", "evaluate, from source"),
    ):
        ratio = sum(cpu[warm]) / sum(cpu[cold])
        print(f"{warm} / {cold}: {ratio:.2f} of the CPU seconds")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
