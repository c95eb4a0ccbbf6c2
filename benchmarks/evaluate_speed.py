"""Time ``evaluate`` on all of HT-Step from a warm score cache (issue goal: < 2 s on 2 cores).

Writes a simulated HT-Step score cache once (600 videos, labelled ``simulated``) into a
temporary folder, warms it (one full pass, so files sit in the page cache and numba has
compiled), then times the in-process pipeline: read the cache, run the filter on every video
and compute BaGLM's and the off-the-shelf R@1. Also times the whole CLI command
``python -m baglm_nb evaluate`` (interpreter start and imports included).

    .venv/bin/python benchmarks/evaluate_speed.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time

from baglm_nb.core.observations import from_cache
from baglm_nb.core.pipeline import compare
from baglm_nb.core.simulate import write_simulated_cache

GOAL_S = 2.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        path = write_simulated_cache("htstep", root)
        compare(from_cache(path), "oracle")  # warm: page cache + numba
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            result = compare(from_cache(path), "oracle")
            times.append(time.perf_counter() - start)
        cmd = [
            sys.executable,
            "-m",
            "baglm_nb",
            "evaluate",
            "--dataset",
            "htstep",
            "--scores",
            str(path),
            "--deps",
            "oracle",
        ]
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        cli = time.perf_counter() - start
    best = min(times)
    print(
        f"videos: {result['videos']} (simulated scores), BaGLM {result['baglm']:.1f}, "
        f"off-the-shelf {result['off_the_shelf']:.1f}"
    )
    print(
        f"read cache + filter + evaluate, in process: best {best:.3f} s of {args.repeats} "
        f"({best / GOAL_S:.2f} of the {GOAL_S:.0f} s goal)"
    )
    print(
        f"whole CLI command (interpreter start and imports included): {cli:.3f} s "
        f"({cli / GOAL_S:.2f} of the goal)"
    )


if __name__ == "__main__":
    main()
