"""Time ``ScoreCache.read_all`` on 600 cached videos (goal: < 1 s on 2 cores).

Writes 600 videos of 40 segments and 8 steps into a temporary score cache (fsync off, only
to make the set-up quick), reads one video to warm the imports, then times reading them all
back and checks the values.

    .venv/bin/python benchmarks/cache_read_speed.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from unittest import mock

import numpy as np

from baglm_nb.stores.keys import ScoreKey
from baglm_nb.stores.scores import ScoreCache

GOAL_S = 1.0
VIDEOS, SEGMENTS, STEPS = 600, 40, 8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(6)
    vsg = rng.dirichlet(np.ones(STEPS + 1), size=SEGMENTS).astype(np.float32)
    progress = rng.dirichlet(np.ones(10), size=(SEGMENTS, STEPS)).astype(np.float32)
    with tempfile.TemporaryDirectory() as root:
        cache = ScoreCache(Path(root), ScoreKey("htstep", "bench-model", "v1"))
        with mock.patch.object(os, "fsync", lambda fd: None):
            for i in range(VIDEOS):
                cache.write_video(f"v{i:03d}", vsg + i, progress)
        cache.read_all(["v000"])  # warm-up (imports)
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            everything = cache.read_all()
            times.append(time.perf_counter() - start)
        assert len(everything) == VIDEOS
        np.testing.assert_array_equal(everything[f"v{VIDEOS - 1:03d}"].vsg, vsg + VIDEOS - 1)
    best = min(times)
    print(
        f"read_all of {VIDEOS} videos ({SEGMENTS} segments, {STEPS} steps): best {best:.3f} s, "
        f"median {float(np.median(times)):.3f} s of {args.repeats}; goal < {GOAL_S:.1f} s, "
        f"ratio to goal {best / GOAL_S:.2f}"
    )


if __name__ == "__main__":
    main()
