"""How fast a live ``follow`` ends: after a stall, and after Ctrl-C, timed from outside.

A committed clip (``tests/data/videos/cup.mp4``, looped at its own frame rate) is served over
RTSP on 127.0.0.1 by ``tests/stream_servers.py``; ``python -m baglm_nb follow URL`` runs in a
subprocess with the tiny random-init model, ``--jsonl`` and ``--html``. Once it has logged two
events the server stalls (it stops sending; the connection stays open). Then:

* **stall** (``--timeout T``): the time from the last frame the server sent to the line that
  says "no frames for ..." (goal: within T + 1 s), and from that line to the process's exit
  (goal: within 2 s; the report is written in between);
* **Ctrl-C** (``--timeout 60``, SIGINT one second into the stall): the time from the signal to
  the process's exit, with the report written (goal: within 1 s).

Each line gives the figure, its ratio to the goal, the load average and the machine's
stretch at the time (``tests/busy_machine.py``: the wall time of CPU-bound work
over its CPU time; 1 on a quiet machine). On a busy machine the CPU-bound parts take about
``stretch`` times longer; the tests bound them so.

    .venv/bin/python benchmarks/live_shutdown.py [--runs 3] [--timeout 3]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the stream servers and timing helper of the tests

from busy_machine import machine_stretch  # noqa: E402
from stream_servers import FollowProcess, RtspServer  # noqa: E402

CLIP = ROOT / "tests" / "data" / "videos" / "cup.mp4"
STEPS = ["pick up the cup", "turn the cup", "put the cup down"]
GOAL_EXIT_AFTER_MESSAGE_S = 2.0
GOAL_EXIT_AFTER_SIGINT_S = 1.0


def _started(server: RtspServer, folder: Path, timeout: float) -> FollowProcess:
    task = folder / "task.json"
    task.write_text(json.dumps({"goal": "handle a cup", "steps": STEPS}))
    model = ["--task", str(task), "--model", "random-init:internvl", "--timeout", f"{timeout:g}"]
    run = FollowProcess(server.url, folder, *model)
    run.wait_for_events(2, timeout=600)
    return run


def stall(timeout: float) -> dict[str, float]:
    """One stalled run: seconds from the last frame to the message, and to the exit; the CPU
    time the process used from the stall to its exit."""
    with tempfile.TemporaryDirectory() as tmp, RtspServer(CLIP, loop=True) as server:
        with _started(server, Path(tmp), timeout) as run:
            server.stall()
            cpu = run.cpu_s()
            code = run.wait(timeout=120)
            last = max(server.frames_sent.values())
            said = run.first("no frames for")
    if code != 1:
        raise SystemExit(f"follow exited {code}, not 1:\n{run.output()}")
    return {"message": said - last, "exit": run.exited - said, "cpu": run.cpu_total - cpu}


def ctrl_c() -> dict[str, float]:
    """One run interrupted one second into a stall: seconds from SIGINT to the exit, and the
    CPU time the process used in them."""
    with tempfile.TemporaryDirectory() as tmp, RtspServer(CLIP, loop=True) as server:
        with _started(server, Path(tmp), 60) as run:
            server.stall()
            time.sleep(1.0)
            cpu = run.cpu_s()
            sent = time.perf_counter()
            run.proc.send_signal(signal.SIGINT)
            code = run.wait(timeout=120)
            written = run.report.exists()
    if code != 130 or not written:
        raise SystemExit(f"follow exited {code} (report written: {written}):\n{run.output()}")
    return {"exit": run.exited - sent, "cpu": run.cpu_total - cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=3.0, help="follow's --timeout (s)")
    args = parser.parse_args()
    stalls, interrupts, stretches = [], [], []
    for _ in range(args.runs):
        stretches.append(machine_stretch())
        stalls.append(stall(args.timeout))
        interrupts.append(ctrl_c())
        stretches.append(machine_stretch())
    load = os.getloadavg()[0]
    where = f"(load {load:.1f} on {os.cpu_count()} cores, stretch {max(stretches):.2f})"
    goal_message = args.timeout + 1
    for name, values, goal in (
        ("stall: last frame to the message", [s["message"] for s in stalls], goal_message),
        ("stall: message to exit", [s["exit"] for s in stalls], GOAL_EXIT_AFTER_MESSAGE_S),
        ("Ctrl-C: signal to exit", [i["exit"] for i in interrupts], GOAL_EXIT_AFTER_SIGINT_S),
    ):
        worst = max(values)
        print(
            f"{name}: median {statistics.median(values):.2f} s, max {worst:.2f} s over "
            f"{len(values)} runs ({worst / goal:.2f}x the goal of {goal:g} s) {where}"
        )
    # CPU time: near what the wall time would be on a quiet machine (the work is serial)
    for name, values in (
        ("stall to exit (the --timeout wait included)", [s["cpu"] for s in stalls]),
        ("Ctrl-C to exit", [i["cpu"] for i in interrupts]),
    ):
        print(f"CPU time of the process, {name}: max {max(values):.2f} s")


if __name__ == "__main__":
    main()
