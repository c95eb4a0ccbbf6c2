"""Glass-to-belief latency of a live RTSP stream, split into receive, decode, wait, score, filter.

A committed clip (``tests/data/videos/cup.mp4``, looped) is served over RTSP on 127.0.0.1 at its
own frame rate by ``tests/stream_servers.py`` (FFmpeg packs RTP; a small RTSP server relays it
and logs when each frame's last packet leaves). ``follow`` reads it live (PyAV, ``--lag drop``,
RTSP over TCP) and scores each 2-s segment with the tiny random-init model (random weights:
the scores are noise, the timings are real). For every scored segment, from the moment its
last sampled frame leaves the server to the moment its belief is emitted:

* **receive**: until FFmpeg's demuxer hands over the frame's packet;
* **decode**: until that frame is decoded and converted to RGB (the segment is then whole);
* **wait**: until the consumer takes the segment (queueing behind the previous segment);
* **score**: the model; **filter**: the Bayesian filter step;
* **other**: the rest (hand-over, stacking the estimate).

Goal (issue "live sources"): everything but scoring under 100 ms per segment at the 95th
percentile. The first segment (model warm-up) is left out.

    .venv/bin/python benchmarks/live_latency.py [--seconds 40] [--transport tcp|udp]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the stream servers of the tests

from stream_servers import RtspServer  # noqa: E402

from baglm_nb.apps.online import follow  # noqa: E402
from baglm_nb.core.online import OnlineGrounder  # noqa: E402
from baglm_nb.inputs.live import Gap  # noqa: E402
from baglm_nb.models.scoring import make_scorer  # noqa: E402

CLIP = ROOT / "tests" / "data" / "videos" / "cup.mp4"
STEPS = ["pick up the cup", "turn the cup", "put the cup down"]
GOAL_MS = 100.0
PARTS = ("receive", "decode", "wait", "score", "filter", "other")


def run(seconds: float, transport: str) -> tuple[list[dict[str, float]], int]:
    """Follow the stream for ``seconds``; per scored segment its latency parts (s), and the
    number of segments dropped behind live."""
    torch_threads()
    scorer = make_scorer("random-init:internvl")
    chain = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=float)
    grounder = OnlineGrounder(scorer, "handle a cup", STEPS, chain, source="random-init")
    rows, dropped = [], 0
    with RtspServer(CLIP, loop=True) as server:
        stream = follow(server.url, grounder, lag="drop", transport=transport, timeout=10)
        start = time.perf_counter()
        for item in stream:
            emitted = time.perf_counter()
            if isinstance(item, Gap):
                dropped += item.count
            else:
                rows.append(parts(item, server.sent_at(item.marks["frame_pts"]), emitted))
            if emitted - start > seconds:
                stream.close()
    return rows[1:], dropped


def torch_threads() -> None:
    """Decoding and scoring share the CPU; one torch thread keeps the tiny model steady."""
    import torch

    torch.set_num_threads(1)


def parts(est, sent: float, emitted: float) -> dict[str, float]:
    """One segment's latency split (seconds)."""
    m, lat = est.marks, est.latency
    row = {
        "receive": m["arrived"] - sent,
        "decode": m["decoded"] - m["arrived"],
        "wait": m["taken"] - m["decoded"],
        "score": lat["score"],
        "filter": lat["filter"],
    }
    row["other"] = emitted - m["taken"] - lat["score"] - lat["filter"]
    row["total"] = emitted - sent
    row["not scoring"] = row["total"] - row["score"]
    return row


def main() -> None:
    """Run and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--seconds", type=float, default=40.0, help="how long to follow (s)")
    ap.add_argument("--transport", choices=["tcp", "udp"], default="tcp")
    args = ap.parse_args()
    rows, dropped = run(args.seconds, args.transport)
    if not rows:
        raise SystemExit("error: no segment was scored")
    print(
        f"live RTSP ({args.transport}) of {CLIP.name} at 1x, tiny random-init InternVL, "
        f"--lag drop: {len(rows)} segments measured (first left out), "
        f"{dropped} dropped"
    )
    print(f"{'part':<12} {'median ms':>10} {'p95 ms':>10}")
    for name in (*PARTS, "total", "not scoring"):
        values = np.array([r[name] for r in rows]) * 1000
        print(f"{name:<12} {np.median(values):10.2f} {np.percentile(values, 95):10.2f}")
    p95 = float(np.percentile([r["not scoring"] for r in rows], 95)) * 1000
    verdict = "meets" if p95 < GOAL_MS else "misses"
    print(
        f"everything but scoring, p95: {p95:.1f} ms = {p95 / GOAL_MS:.2f} x the {GOAL_MS:.0f} ms "
        f"goal ({verdict} it)"
    )


if __name__ == "__main__":
    main()
