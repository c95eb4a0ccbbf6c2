"""``python -m baglm_nb score``: score a dataset's videos into the score cache."""

from __future__ import annotations

import argparse
import json


def register(verbs) -> None:
    """Add the ``score`` verb."""
    from baglm_nb.inputs.datasets import DATASETS

    p = verbs.add_parser(
        "score",
        help="stream a dataset's videos through an LMM into the score cache",
        description="Resumes where a killed run stopped; failures are recorded and skipped. "
        "--model takes a registry id (internvl2.5-8b, internvl3-8b, qwen2.5-vl-7b, "
        "llava-onevision-7b), a local weights folder, or random-init:<family> (a tiny random "
        "model for testing the mechanics; its scores mean nothing).",
    )
    p.add_argument("--dataset", required=True, choices=sorted(DATASETS))
    p.add_argument("--video-dir", required=True, help="folder with <video_uid>.<ext> files")
    p.add_argument("--model", required=True)
    p.add_argument("--limit", type=int, default=None, help="score the first N videos only")
    p.add_argument("--segment-duration", type=int, default=2)
    p.add_argument("--sampling-fps", type=float, default=2.0)
    p.add_argument("--batch-segments", type=int, default=16)
    p.add_argument("--cache-root", default="data/cache")
    p.add_argument("--annotations", default=None, help="folder with the annotation files")
    p.add_argument(
        "--trust-remote-code",
        action="store_true",
        help="allow the original InternVL2.5 repository code (runs remote code)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the ``score`` verb."""
    from baglm_nb.models.scoring import check_inputs, make_scorer, score_dataset

    check_inputs(args.dataset, args.video_dir, annotations=args.annotations, limit=args.limit)
    scorer = make_scorer(args.model, trust_remote_code=args.trust_remote_code)
    summary = score_dataset(
        args.dataset, args.video_dir, scorer, root=args.cache_root,
        segment_duration=args.segment_duration, sampling_fps=args.sampling_fps,
        limit=args.limit, batch_segments=args.batch_segments, annotations=args.annotations,
    )  # fmt: skip
    print(json.dumps({**summary, "scored": len(summary["scored"]),
                      "already_cached": len(summary["already_cached"])}, indent=2))  # fmt: skip
    return 1 if summary["failed"] else 0
