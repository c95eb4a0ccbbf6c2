"""What a command (by default ``make test``) costs the machine: wall seconds, the CPU seconds of
the processes it reaped, and the busy CPU seconds of the whole machine while it ran.

``/usr/bin/time`` counts only the processes a command waits for; Ray's workers and daemons and
chromium's renderers are never reaped by the test run, so their CPU is missing there. The busy
CPU seconds of the whole machine (``/proc/stat``: every CPU's user, nice, system, irq, softirq
and steal time, not idle or iowait) count them, and everything else that runs meanwhile: run it
on a quiet machine. The goal of issue 35 is a ``make test`` of at most 300 s on 2 cores; the
script prints the wall time's ratio to it and the busy CPU seconds against what 300 s of all the
machine's cores allow.

    .venv/bin/python benchmarks/suite_cost.py [--goal-s 300] [-- COMMAND ...]

Exits with the command's exit status.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

GOAL_S = 300.0


def busy_cpu_s(stat_text: str | None = None) -> float:
    """Busy CPU seconds of all cores since boot, from ``/proc/stat``'s ``cpu`` line (user, nice,
    system, irq, softirq and steal; guest time is already inside user and nice)."""
    if stat_text is None:
        with open("/proc/stat") as f:
            stat_text = f.read()
    fields = stat_text.split("\n", 1)[0].split()
    if fields[0] != "cpu":
        raise ValueError(f"/proc/stat: expected the 'cpu' line first, got {fields[0]!r}")
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--goal-s", type=float, default=GOAL_S, help="the wall-time goal (s)")
    parser.add_argument("command", nargs="*", default=["make", "test"])
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    before_busy, before = busy_cpu_s(), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    code = subprocess.call(args.command)
    wall_s = time.perf_counter() - t0
    busy_s, after = busy_cpu_s() - before_busy, resource.getrusage(resource.RUSAGE_CHILDREN)
    reaped_s = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    budget_s = args.goal_s * cores
    print(f"command: {' '.join(args.command)} (exit {code})")
    print(f"wall: {wall_s:.1f} s = {wall_s / args.goal_s:.2f} x the {args.goal_s:.0f} s goal")
    print(f"reaped CPU: {reaped_s:.1f} s ({reaped_s / wall_s:.0%} of one core)")
    print(
        f"machine busy CPU: {busy_s:.1f} s ({busy_s / (wall_s * cores):.0%} of {cores} cores) "
        f"= {busy_s / budget_s:.2f} x the {budget_s:.0f} CPU-s that {args.goal_s:.0f} s of "
        f"{cores} cores allow"
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
