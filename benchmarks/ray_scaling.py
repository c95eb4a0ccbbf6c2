"""Scoring throughput on Ray: 1 vs 2 single-thread workers (goal >= 1.7x), cache identical.

Starts a local Ray cluster on 127.0.0.1 (``--cpus`` CPUs, default 2; session files in a temporary
folder, its own auth token, no usage statistics) and scores ``--copies`` copies of each test clip
(``tests/data/videos``, linked under new video uids) with the tiny random-init InternVL model
(``random-init:internvl``, label "random-init"; its scores mean nothing), first with one worker,
then with two, each worker with one CPU and one torch thread. Prints for each run the segments per
second of the scoring phase (from the moment every worker has loaded the model to the last video;
loading the model is a one-off cost, also printed), the driver's own share of that time (writing
the cache and the progress bar; goal < 5%), the throughput ratio (goal >= 1.7x) and whether the
two caches hold equal arrays. On a machine with fewer free cores than workers the ratio cannot
reach 2. With few videos a worker waits at the end for the other's last video: 4 copies (12
videos, 5 segments each, about 4 s of scoring) measured 1.66x on a quiet machine where 10 copies
measure 1.79-1.85x and 16 copies 1.87x.

    .venv/bin/python benchmarks/ray_scaling.py [--copies 10] [--cpus 2]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

# Before ``import ray``: loopback address only, this run's own token, no usage statistics, and
# the patience a busy 2-core machine needs to start the node's agents.
os.environ.update(
    {
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_agent_register_timeout_ms": "120000",
        "RAY_raylet_start_wait_time_s": "120",
    }
)

import ray  # noqa: E402

from baglm_nb.inputs.video import probe  # noqa: E402
from baglm_nb.models.ray_pool import RayOptions  # noqa: E402
from baglm_nb.models.scoring import score_dataset  # noqa: E402
from baglm_nb.stores.scores import ScoreCache  # noqa: E402

CLIPS = Path(__file__).resolve().parent.parent / "tests" / "data" / "videos"
STEPS = ["pick up the object", "turn it", "put it down"]


def make_videos(folder: Path, copies: int) -> Path:
    """``copies`` links to each test clip and their COIN-format annotation file."""
    records = []
    for clip in sorted(p for p in CLIPS.iterdir() if p.suffix in (".mp4", ".avi")):
        info = probe(clip)
        for n in range(copies):
            uid = f"{clip.stem}-{n}"
            (folder / "videos" / f"{uid}{clip.suffix}").symlink_to(clip)
            records.append(
                {
                    "video_uid": uid,
                    "video_num_frames": info.num_frames,
                    "video_fps": info.fps,
                    "activity": "HandleObject",
                    "step_headline": STEPS,
                    "clips": [
                        {
                            "annotations": [
                                {
                                    "language_queries": [
                                        {
                                            "clip_start_sec": 0.5,
                                            "clip_end_sec": 3.0,
                                            "query": STEPS[0],
                                        }
                                    ]
                                }
                            ]
                        }
                    ],
                }
            )
    (folder / "ann" / "coin_video_annots.json").write_text(json.dumps(records))
    return folder


def run(folder: Path, workers: int) -> dict:
    """Score every video with ``workers`` single-thread workers into ``folder/w<workers>``."""
    summary = score_dataset(
        "coin",
        folder / "videos",
        "random-init:internvl",
        root=folder / f"w{workers}",
        annotations=folder / "ann",
        show_progress=False,
        engine=RayOptions(workers=workers, num_cpus_per_worker=1, wait_for_workers=True),
    )
    cache = ScoreCache.open(summary["cache"])
    segments = sum(cache.read_video(u).num_segments for u in summary["scored"])
    t = summary["seconds"]
    rate = segments / t["scoring"]
    print(
        f"{workers} worker(s): {len(summary['scored'])} videos, {segments} segments in "
        f"{t['scoring']:.1f} s: {rate:.2f} segments/s (model loaded in {t['startup']:.1f} s); "
        f"driver {100 * t['driver'] / t['scoring']:.1f}% of the scoring time "
        f"(goal < 5%)",
        flush=True,
    )
    return {"rate": rate, "cache": cache, "uids": summary["scored"], **t}


def _equal(a: ScoreCache, b: ScoreCache, uid: str) -> bool:
    x, y = a.read_video(uid), b.read_video(uid)
    return np.array_equal(x.vsg, y.vsg) and np.array_equal(x.progress, y.progress)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=10, help="links per test clip (default 10)")
    ap.add_argument("--cpus", type=int, default=2, help="CPUs of the local cluster")
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="baglm-rs-"))
    try:
        (folder / "videos").mkdir()
        (folder / "ann").mkdir()
        make_videos(folder, args.copies)
        ray.init(
            num_cpus=args.cpus,
            _node_ip_address="127.0.0.1",
            _temp_dir=str(folder / "r"),
            include_dashboard=False,
            logging_level="WARNING",
        )
        print(
            f"local Ray cluster on {ray.get_runtime_context().gcs_address}, {args.cpus} CPUs; "
            f"tiny random-init InternVL, {3 * args.copies} videos",
            flush=True,
        )
        one, two = run(folder, 1), run(folder, 2)
        same = sorted(one["uids"]) == sorted(two["uids"]) and all(
            _equal(one["cache"], two["cache"], u) for u in one["uids"]
        )
        print(
            f"throughput 2 workers / 1 worker: {two['rate'] / one['rate']:.2f}x (goal >= "
            f"1.7x); caches identical: {'yes' if same else 'NO'}"
        )
        return 0 if same else 1
    finally:
        ray.shutdown()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
