"""``python -m baglm_nb import``: the authors' precomputed ``.pt`` files into the caches."""

from __future__ import annotations

import argparse
import json


def register(verbs) -> None:
    """Add the ``import`` verb."""
    from baglm_nb.inputs.datasets import DATASETS
    from baglm_nb.stores.keys import PUBLISHED_LLM, PUBLISHED_LMM

    p = verbs.add_parser("import", help="import the authors' precomputed .pt files")
    p.add_argument("src", help="folder with vsg/, prog/ and prereq/")
    p.add_argument("--dataset", required=True, choices=sorted(DATASETS))
    p.add_argument("--model", default=PUBLISHED_LMM)
    p.add_argument("--llm", default=PUBLISHED_LLM)
    p.add_argument("--segment-duration", type=int, default=2)
    p.add_argument("--cache-root", default="data/cache")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the ``import`` verb."""
    from baglm_nb.stores.importer import import_reference_results

    summary = import_reference_results(
        args.src, args.dataset, args.model, root=args.cache_root, llm=args.llm,
        segment_duration=args.segment_duration,
    )  # fmt: skip
    print(json.dumps({k: str(v) for k, v in summary.items()}, indent=2))
    return 0
