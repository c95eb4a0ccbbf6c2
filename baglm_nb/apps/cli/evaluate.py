"""``python -m baglm_nb evaluate``: BaGLM and the off-the-shelf baseline beside the paper."""

from __future__ import annotations

import argparse
import json

from baglm_nb.apps.cli.options import (
    add_observation_arguments,
    deps_from_args,
    filter_options,
    observations_from_args,
)


def register(verbs) -> None:
    """Add the ``evaluate`` verb."""
    from baglm_nb.inputs.datasets import DATASETS

    p = verbs.add_parser("evaluate", help="BaGLM and the off-the-shelf baseline on a dataset")
    p.add_argument("--dataset", required=True, choices=sorted(DATASETS))
    add_observation_arguments(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="also print the result as JSON, with the number of (video, step) pairs whose best "
        "row differs between float64 and float32-published",
    )
    p.set_defaults(func=run)


def format_table(
    result: dict, transition: str, prior: str, stepping: str, deps: str | None = None
) -> str:
    """A small text table: BaGLM and the off-the-shelf baseline beside the paper's values.

    ``deps`` (the dependency source's label) is printed under the table.
    """
    from baglm_nb.analyses.paper import paper_value
    from baglm_nb.analyses.tables import title_for

    ds = result["dataset"]
    metric = "Avg. R@1" if ds == "crosstask" else "R@1"
    rows = [
        ("method", "workbench", "paper"),
        (f"BaGLM ({transition}, prior={prior}, stepping={stepping})",
         f"{result['baglm']:.1f}", f"{paper_value('baglm', ds):.1f}"),
        ("off-the-shelf LMM", f"{result['off_the_shelf']:.1f}",
         f"{paper_value('off_the_shelf', ds):.1f}"),
    ]  # fmt: skip
    width = max(len(r[0]) for r in rows)
    lines = [title_for(f"{ds} {metric} (%)", result["source"])]
    lines += [f"{a:<{width}}  {b:>9}  {c:>5}" for a, b, c in rows]
    annotated = result.get("annotated", result["videos"])
    if result["videos"] < annotated:
        lines.append(f"videos evaluated: {result['videos']} of {annotated} annotated videos "
                     "(the others have no scores in the cache)")  # fmt: skip
    else:
        lines.append(f"videos evaluated: {result['videos']}")
    if deps is not None:
        lines.append(f"D (BaGLM's dependency matrices): {deps}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Run the ``evaluate`` verb."""
    from baglm_nb.core.pipeline import compare, precision_agreement

    obs = observations_from_args(args)
    deps = deps_from_args(args)
    result = compare(obs, deps, **filter_options(args))
    result["D"] = deps.label
    result["annotated"] = _annotated(args)
    print(format_table(result, args.transition, args.prior, args.stepping, deps.label))
    if args.json:
        result["precision_agreement"] = precision_agreement(obs, deps, **filter_options(args))
        print(json.dumps(result))
    return 0


def _annotated(args: argparse.Namespace) -> int:
    """The annotated videos ``--dataset`` and ``--limit`` ask for (scored or not)."""
    from baglm_nb.inputs.datasets import load_dataset

    total = len(load_dataset(args.dataset))
    return min(total, args.limit) if args.limit else total
