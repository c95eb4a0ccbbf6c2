"""Real-time bounds in tests that hold on a busy machine: :func:`machine_stretch`.

A test that bounds wall-clock time states the behaviour's bound on a quiet machine and
multiplies its CPU-bound part by :func:`machine_stretch`, measured in the same test: on a quiet
machine the bound is the behaviour's own, on a loaded one it grows with the load, so the test
fails for slow code, not for a busy CI machine. Waits that are the behaviour itself (a
``--timeout``) are not stretched.
"""

from __future__ import annotations

import time


def machine_stretch(cpu_s: float = 0.1) -> float:
    """How much this machine stretches CPU-bound work right now: the wall time of a short
    pure-Python loop over its CPU time (this thread's), at least 1. About 1 on a quiet machine;
    about the number of busy threads per core on a loaded one. A test's real-time bound is the
    behaviour's bound on a quiet machine, its CPU-bound part multiplied by this."""
    wall, cpu = time.perf_counter(), time.thread_time()
    while time.thread_time() - cpu < cpu_s:
        sum(range(1000))
    return max(1.0, (time.perf_counter() - wall) / (time.thread_time() - cpu))
