"""``python -m baglm_nb stats``: dataset statistics as JSON, or the dataset names."""

from __future__ import annotations

import argparse
import json


def register(verbs) -> None:
    """Add the ``stats`` verb."""
    from baglm_nb.inputs.datasets import DATASETS

    p = verbs.add_parser("stats", help="dataset statistics as JSON (--names: the dataset names)")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--dataset", choices=sorted(DATASETS))
    which.add_argument(
        "--names",
        action="store_true",
        help="print the names of DATASETS on one line, space-separated (the Makefile's list)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the ``stats`` verb."""
    from baglm_nb.inputs.datasets import DATASETS, dataset_stats

    if args.names:
        print(" ".join(DATASETS))
        return 0
    print(json.dumps(dataset_stats(args.dataset), indent=2))
    return 0
