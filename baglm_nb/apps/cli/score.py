"""``python -m baglm_nb score``: score a dataset's videos into the score cache.

Examples::

    python -m baglm_nb score --dataset htstep --video-dir videos/ --model internvl3-8b
    LOCAL_KEY=none python -m baglm_nb score --dataset htstep --video-dir videos/ \\
        --backend openai --base-url http://127.0.0.1:8000/v1 --api-key-env LOCAL_KEY \\
        --model Qwen/Qwen2.5-VL-7B-Instruct --concurrency 8
    python -m baglm_nb score --dataset htstep --video-dir /data/htstep --model internvl3-8b
    ray start --head --num-gpus 8      # then, on the same machine:
    python -m baglm_nb score --dataset htstep --video-dir /shared/htstep --model internvl3-8b \\
        --engine ray --address auto

With ``--engine ray`` the videos are scored by Ray actors (one model per worker, ``--workers``,
``--num-gpus-per-worker``); the driver alone writes the cache, ``failures.json`` and the JSON
summary, which is the only thing printed on stdout (Ray's own lines go to stderr).
"""

from __future__ import annotations

import argparse
import json

from baglm_nb.apps.cli.options import add_served_arguments, check_range, served_scorer


def register(verbs) -> None:
    """Add the ``score`` verb."""
    from baglm_nb.inputs.datasets import DATASETS
    from baglm_nb.models.families import FAMILIES, MODELS, in_words

    p = verbs.add_parser(
        "score",
        help="stream a dataset's videos through an LMM into the score cache",
        description="Resumes where a killed run stopped; failures are recorded and skipped. "
        f"--model takes a registry id ({in_words(MODELS)}), a local weights folder, "
        f"random-init:<family> (<family>: {in_words(FAMILIES)}; a tiny random model for "
        "testing the mechanics; its scores mean nothing), or, with --backend openai "
        "(or as openai:NAME), the name of a model behind an OpenAI-compatible server.",
        epilog=__doc__.split("Examples::", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
        help="allow the original InternVL repository code (runs remote code)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_served_arguments(p)
    add_engine_arguments(p, "videos")
    p.set_defaults(func=run)


def add_engine_arguments(p: argparse.ArgumentParser, items: str | None) -> None:
    """``--engine`` and the Ray options (shared with ``deps``, which has its own
    ``--max-attempts``: ``items=None``)."""
    from baglm_nb.models.dispatch import ENGINES

    g = p.add_argument_group("engine")
    g.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="local: in this process (default); ray: actors on a cluster",
    )
    g.add_argument(
        "--address",
        default=None,
        help="ray: 'auto' (the cluster of `ray start` on this machine) or HOST:PORT "
        "of the head node; default: RAY_ADDRESS, else a local Ray instance",
    )
    g.add_argument(
        "--connect-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="ray: seconds to reach and join the cluster at --address before "
        "giving up with an error (default 30)",
    )
    g.add_argument(
        "--workers", type=int, default=None, help="ray: actors to start (default: as many as fit)"
    )
    g.add_argument(
        "--num-gpus-per-worker",
        type=float,
        default=None,
        help="ray: GPUs per actor (default: 1 with GPUs, else 0)",
    )
    g.add_argument(
        "--num-cpus-per-worker",
        type=float,
        default=1.0,
        help="ray: CPU cores (and torch threads) per actor (default 1)",
    )
    if items is not None:
        g.add_argument(
            "--max-attempts",
            type=int,
            default=3,
            help=f"ray: workers that may die on one of the {items} before it is "
            "recorded as failed (default 3)",
        )


def engine_from_args(args: argparse.Namespace):
    """``"local"`` or the :class:`~baglm_nb.models.ray_pool.RayOptions` of the arguments."""
    if args.engine == "local":
        return "local"
    from baglm_nb.models.ray_pool import RayOptions

    return RayOptions(
        address=args.address,
        workers=args.workers,
        num_gpus_per_worker=args.num_gpus_per_worker,
        num_cpus_per_worker=args.num_cpus_per_worker,
        max_attempts=args.max_attempts,
        connect_timeout=args.connect_timeout,
    )


def scorer_spec(args: argparse.Namespace):
    """The :class:`~baglm_nb.models.scoring.ScorerSpec` of ``--model``."""
    from baglm_nb.models.scoring import ScorerSpec

    return ScorerSpec(args.model, trust_remote_code=args.trust_remote_code)


def run(args: argparse.Namespace) -> int:
    """Run the ``score`` verb."""
    from baglm_nb.apps.cli.options import stdout_to_stderr
    from baglm_nb.models.openai_client import ServerError
    from baglm_nb.models.scoring import check_engine, check_inputs, score_dataset
    from baglm_nb.models.served import is_served, served_name
    from baglm_nb.models.served_checks import ServerRefused

    check_range("--batch-segments", args.batch_segments, 1)
    check_range("--segment-duration", args.segment_duration, 1)
    check_range("--sampling-fps", args.sampling_fps, 0, low_open=True)
    check_inputs(args.dataset, args.video_dir, annotations=args.annotations, limit=args.limit)
    served = args.backend == "openai" or is_served(args.model)
    check_engine(args.model, args.engine, served=served)
    scorer = served_scorer(args, served_name(args.model)) if served else None
    engine = engine_from_args(args)
    try:
        with stdout_to_stderr(args.engine == "ray"):
            summary = score_dataset(
                args.dataset,
                args.video_dir,
                scorer or scorer_spec(args),
                root=args.cache_root,
                segment_duration=args.segment_duration,
                sampling_fps=args.sampling_fps,
                limit=args.limit,
                batch_segments=args.batch_segments,
                annotations=args.annotations,
                engine=engine,
                show_progress=not args.no_progress,
            )
    except ServerRefused:
        raise  # its message says what to do: running again does not help
    except ServerError as exc:
        if isinstance(exc, ValueError):  # bad input (no such model): nothing to resume
            raise
        raise ServerError(
            f"{exc}; finished videos are kept: run the same command again to resume"
        ) from None
    print(
        json.dumps(
            {
                **summary,
                "scored": len(summary["scored"]),
                "already_cached": len(summary["already_cached"]),
            },
            indent=2,
        )
    )
    if summary["failed"]:
        failed = summary["failed"]
        raise RuntimeError(
            f"{len(failed)} video(s) could not be scored (first: "
            f"{next(iter(failed))}: {next(iter(failed.values()))}); all are listed "
            f"under 'failed' above and in {summary['cache']}/failures.json"
        )
    return 0
