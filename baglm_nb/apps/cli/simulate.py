"""``python -m baglm_nb simulate`` / ``calibrate``: the simulated CPU default.

``simulate --dataset htstep coin --manifest data/cache/prepared.json`` writes each dataset's
simulated score cache and a manifest ``{"scores": {dataset: cache folder}}``, the parameter file
that ``make figures`` passes to the notebooks (``papermill -f``).
"""

from __future__ import annotations

import argparse


def register(verbs) -> None:
    """Add the ``simulate`` and ``calibrate`` verbs."""
    from baglm_nb.inputs.datasets import DATASETS

    p = verbs.add_parser("simulate", help="write simulated score caches (CPU default)")
    p.add_argument("--dataset", required=True, nargs="+", choices=sorted(DATASETS))
    p.add_argument("--cache-root", default="data/cache")
    p.add_argument("--limit", type=int, default=None, help="the first N videos of each dataset")
    p.add_argument("--manifest", default=None,
                   help="also write {'scores': {dataset: absolute folder}} here")  # fmt: skip
    p.set_defaults(func=run_simulate)

    p = verbs.add_parser("calibrate", help="calibrate the simulated signal strength")
    p.add_argument("--dataset", default="htstep", choices=sorted(DATASETS))
    p.add_argument("--target", type=float, default=None,
                   help="R@1 to reach (default: the paper's off-the-shelf value)")  # fmt: skip
    p.set_defaults(func=run_calibrate)


def run_simulate(args: argparse.Namespace) -> int:
    """Run the ``simulate`` verb."""
    from pathlib import Path

    from baglm_nb.core.simulate import write_simulated_cache
    from baglm_nb.stores.atomic import atomic_write_json

    folders = {}
    for name in dict.fromkeys(args.dataset):
        folder = write_simulated_cache(name, args.cache_root, limit=args.limit)
        folders[name] = str(Path(folder).resolve())
        print(f"simulated scores written to {folders[name]}")
    if args.manifest:
        atomic_write_json(args.manifest, {"scores": folders})
        print(f"manifest: {args.manifest}")
    return 0


def run_calibrate(args: argparse.Namespace) -> int:
    """Run the ``calibrate`` verb."""
    from baglm_nb.analyses.paper import paper_value
    from baglm_nb.core.simulate import calibrate

    target = paper_value("off_the_shelf", args.dataset) if args.target is None else args.target
    print(calibrate(args.dataset, target=target).report())
    return 0
