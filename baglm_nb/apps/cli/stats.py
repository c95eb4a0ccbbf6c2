"""``python -m baglm_nb stats``: dataset statistics as JSON."""

from __future__ import annotations

import argparse
import json


def register(verbs) -> None:
    """Add the ``stats`` verb."""
    from baglm_nb.inputs.datasets import DATASETS

    p = verbs.add_parser("stats", help="dataset statistics as JSON")
    p.add_argument("--dataset", required=True, choices=sorted(DATASETS))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the ``stats`` verb."""
    from baglm_nb.inputs.datasets import dataset_stats

    print(json.dumps(dataset_stats(args.dataset), indent=2))
    return 0
