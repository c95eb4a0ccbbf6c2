"""Options shared by the verbs that run the filter, and their resolution through ``sources``;
the stdout guard of the verbs that print a JSON summary while Ray runs."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any


def add_observation_arguments(p: argparse.ArgumentParser) -> None:
    """The options shared by verbs that run the filter: sources, variants and ``--limit``."""
    p.add_argument("--scores", required=True, help="score cache folder, or 'simulated'")
    p.add_argument("--deps", default="oracle",
                   help="dependency cache folder, 'oracle', 'none' or 'imported'")  # fmt: skip
    p.add_argument("--transition", default="both",
                   choices=["static", "readiness", "validity", "both"])  # fmt: skip
    p.add_argument("--prior", default="uniform", choices=["uniform", "propagated"])
    p.add_argument("--stepping", default="second", choices=["second", "segment"])
    p.add_argument("--progress", default="scores", choices=["scores", "oracle"])
    p.add_argument("--limit", type=int, default=None,
                   help="use the first N videos (annotation-file order)")  # fmt: skip


def filter_options(args: argparse.Namespace) -> dict[str, str]:
    """The filter variant chosen with :func:`add_observation_arguments`, as keyword arguments."""
    return {k: getattr(args, k) for k in ("transition", "prior", "stepping", "progress")}


def observations_from_args(args: argparse.Namespace):
    """``--dataset``, ``--scores`` and ``--limit`` as observations (through ``sources``)."""
    from baglm_nb.core import sources

    try:
        return sources.observations(args.dataset, args.scores, limit=args.limit)
    except (ValueError, FileNotFoundError) as exc:
        raise SystemExit(f"error: {exc}") from None


def deps_from_args(args: argparse.Namespace) -> Any:
    """``--deps`` resolved for ``--dataset`` (:func:`baglm_nb.core.sources.dependencies`)."""
    from baglm_nb.core import sources

    try:
        return sources.dependencies(args.deps, args.dataset)
    except (ValueError, FileNotFoundError) as exc:
        raise SystemExit(f"error: {exc}") from None


@contextlib.contextmanager
def stdout_to_stderr(active: bool = True) -> Iterator[None]:
    """Send everything written to stdout (Python's and the file descriptor's) to stderr.

    Verbs that print a JSON summary on stdout run Ray inside this, so that the lines Ray and its
    workers print (forwarded to the driver's stdout) never mix into the summary.
    """
    if not active:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 1)
        os.close(saved)
