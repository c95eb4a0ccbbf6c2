"""Options shared by the verbs that run the filter, and their resolution through ``sources``."""

from __future__ import annotations

import argparse
from typing import Any


def add_observation_arguments(p: argparse.ArgumentParser) -> None:
    """The options shared by verbs that run the filter: sources, variants and ``--limit``."""
    from baglm_nb.core.sources import SIMULATED_LLM

    p.add_argument("--scores", required=True, help="score cache folder, or 'simulated'")
    p.add_argument("--deps", default=SIMULATED_LLM,
                   help=f"dependency source: '{SIMULATED_LLM}' (default: a simulated LLM's "
                   "matrices), 'simulated-llm:gpt', 'oracle', 'none', 'imported' or a "
                   "dependency cache folder")  # fmt: skip
    p.add_argument("--transition", default="both",
                   choices=["static", "readiness", "validity", "both"])  # fmt: skip
    p.add_argument("--prior", default="uniform", choices=["uniform", "propagated"])
    p.add_argument("--stepping", default="second", choices=["second", "segment"])
    p.add_argument("--progress", default="scores", choices=["scores", "oracle"])
    p.add_argument("--limit", type=int, default=None,
                   help="use the first N videos (annotation-file order)")  # fmt: skip
    p.add_argument("--allow-length-mismatch", action="store_true",
                   help="warn, instead of refusing, when a cached video's length differs from "
                   "its annotation by more than one segment")  # fmt: skip


def filter_options(args: argparse.Namespace) -> dict[str, str]:
    """The filter variant chosen with :func:`add_observation_arguments`, as keyword arguments."""
    return {k: getattr(args, k) for k in ("transition", "prior", "stepping", "progress")}


def observations_from_args(args: argparse.Namespace):
    """``--dataset``, ``--scores`` and ``--limit`` as observations (through ``sources``)."""
    from baglm_nb.core import sources

    try:
        return sources.observations(
            args.dataset, args.scores, limit=args.limit,
            length_mismatch="warn" if getattr(args, "allow_length_mismatch", False) else "error",
        )  # fmt: skip
    except (ValueError, FileNotFoundError) as exc:
        raise SystemExit(f"error: {exc}") from None


def deps_from_args(args: argparse.Namespace) -> Any:
    """``--deps`` resolved for ``--dataset`` (:func:`baglm_nb.core.sources.dependencies`)."""
    from baglm_nb.core import sources

    try:
        return sources.dependencies(args.deps, args.dataset)
    except (ValueError, FileNotFoundError) as exc:
        raise SystemExit(f"error: {exc}") from None
