"""``python -m baglm_nb simulate`` / ``calibrate``: the simulated CPU default."""

from __future__ import annotations

import argparse


def register(verbs) -> None:
    """Add the ``simulate`` and ``calibrate`` verbs."""
    from baglm_nb.inputs.datasets import DATASETS

    p = verbs.add_parser("simulate", help="write a simulated score cache (CPU default)")
    p.add_argument("--dataset", required=True, choices=sorted(DATASETS))
    p.add_argument("--cache-root", default="data/cache")
    p.add_argument("--limit", type=int, default=None)
    p.set_defaults(func=run_simulate)

    p = verbs.add_parser("calibrate", help="calibrate the simulated signal strength")
    p.add_argument("--dataset", default="htstep", choices=sorted(DATASETS))
    p.add_argument("--target", type=float, default=52.0)
    p.set_defaults(func=run_calibrate)


def run_simulate(args: argparse.Namespace) -> int:
    """Run the ``simulate`` verb."""
    from baglm_nb.core.simulate import write_simulated_cache

    path = write_simulated_cache(args.dataset, args.cache_root, limit=args.limit)
    print(f"simulated scores written to {path}")
    return 0


def run_calibrate(args: argparse.Namespace) -> int:
    """Run the ``calibrate`` verb."""
    from baglm_nb.core.simulate import calibrate

    print(calibrate(args.dataset, target=args.target).report())
    return 0
