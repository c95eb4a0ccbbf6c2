"""``python -m baglm_nb score``: score a dataset's videos into the score cache.

Examples::

    python -m baglm_nb score --dataset htstep --video-dir videos/ --model internvl3-8b
    LOCAL_KEY=none python -m baglm_nb score --dataset htstep --video-dir videos/ \\
        --backend openai --base-url http://127.0.0.1:8000/v1 --api-key-env LOCAL_KEY \\
        --model Qwen/Qwen2.5-VL-7B-Instruct --concurrency 8
"""

from __future__ import annotations

import argparse
import json

from baglm_nb.apps.cli.options import add_served_arguments, served_scorer


def register(verbs) -> None:
    """Add the ``score`` verb."""
    from baglm_nb.inputs.datasets import DATASETS

    p = verbs.add_parser(
        "score",
        help="stream a dataset's videos through an LMM into the score cache",
        description="Resumes where a killed run stopped; failures are recorded and skipped. "
        "--model takes a registry id (internvl2.5-8b, internvl3-8b, qwen2.5-vl-7b, "
        "llava-onevision-7b), a local weights folder, random-init:<family> (a tiny random "
        "model for testing the mechanics; its scores mean nothing), or, with --backend openai "
        "(or as openai:NAME), the name of a model behind an OpenAI-compatible server.",
        epilog=__doc__.split("Examples::", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--dataset", required=True, choices=sorted(DATASETS))
    p.add_argument("--video-dir", required=True, help="folder with <video_uid>.<ext> files")
    p.add_argument("--model", required=True)
    p.add_argument("--backend", choices=["local", "openai"], default="local",
                   help="local weights (default) or an OpenAI-compatible server")  # fmt: skip
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
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_served_arguments(p)
    p.set_defaults(func=run)


def _scorer(args: argparse.Namespace):
    from baglm_nb.models.scoring import make_scorer

    if args.backend == "openai" or args.model.startswith("openai:"):
        return served_scorer(args, args.model.removeprefix("openai:"))
    return make_scorer(args.model, trust_remote_code=args.trust_remote_code)


def run(args: argparse.Namespace) -> int:
    """Run the ``score`` verb."""
    from baglm_nb.models.openai_client import ServerError
    from baglm_nb.models.scoring import check_inputs, score_dataset

    check_inputs(args.dataset, args.video_dir, annotations=args.annotations, limit=args.limit)
    scorer = _scorer(args)
    try:
        summary = score_dataset(
            args.dataset, args.video_dir, scorer, root=args.cache_root,
            segment_duration=args.segment_duration, sampling_fps=args.sampling_fps,
            limit=args.limit, batch_segments=args.batch_segments, annotations=args.annotations,
            show_progress=not args.no_progress,
        )  # fmt: skip
    except ServerError as exc:
        raise ServerError(
            f"{exc}; finished videos are kept: run the same command again to resume"
        ) from None
    print(json.dumps({**summary, "scored": len(summary["scored"]),
                      "already_cached": len(summary["already_cached"])}, indent=2))  # fmt: skip
    return 1 if summary["failed"] else 0
