"""Command line: ``python -m baglm_nb <verb>``; thin calls into the package."""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
from pathlib import Path

from baglm_nb import commands
from baglm_nb.datasets import DATASETS

PAPER_BAGLM = {"htstep": 57.4, "crosstask": 59.8, "ego4d_goalstep": 43.3, "coin": 51.0}
PAPER_OFF_THE_SHELF = {"htstep": 52.0, "crosstask": 54.3, "ego4d_goalstep": 45.2, "coin": 47.9}


def _stats(args: argparse.Namespace) -> int:
    from baglm_nb.datasets import dataset_stats

    print(json.dumps(dataset_stats(args.dataset), indent=2))
    return 0


def _load_observations(args: argparse.Namespace):
    from baglm_nb import observations

    if args.scores == "simulated":
        return observations.from_simulation(args.dataset, limit=args.limit)
    obs = observations.from_cache(args.scores)
    if obs.dataset != args.dataset:
        raise SystemExit(f"error: {args.scores} holds {obs.dataset!r} scores, not {args.dataset!r}")
    if args.limit:
        obs = obs.subset(obs.uids()[: args.limit])
    return obs


def _load_deps(spec: str):
    if spec in ("oracle", "none"):
        return spec
    from baglm_nb.cache import DependencyCache

    return DependencyCache.open(Path(spec))


def filter_options(args: argparse.Namespace) -> dict[str, str]:
    """The filter variant chosen with :func:`add_observation_arguments`, as keyword arguments."""
    return {k: getattr(args, k) for k in ("transition", "prior", "stepping", "progress")}


def format_table(result: dict, transition: str, prior: str, stepping: str) -> str:
    """A small text table: BaGLM and the off-the-shelf baseline beside the paper's values."""
    ds = result["dataset"]
    metric = "Avg. R@1" if ds == "crosstask" else "R@1"
    title = f"{ds} {metric} (%), observations: {result['source']}"
    if result["source"] == "simulated":
        title += " (simulated observations, not a real model)"
    rows = [
        ("method", "workbench", "paper"),
        (f"BaGLM ({transition}, prior={prior}, stepping={stepping})",
         f"{result['baglm']:.1f}", f"{PAPER_BAGLM[ds]:.1f}"),
        ("off-the-shelf LMM", f"{result['off_the_shelf']:.1f}", f"{PAPER_OFF_THE_SHELF[ds]:.1f}"),
    ]  # fmt: skip
    width = max(len(r[0]) for r in rows)
    lines = [title] + [f"{a:<{width}}  {b:>9}  {c:>5}" for a, b, c in rows]
    lines.append(f"videos evaluated: {result['videos']}")
    return "\n".join(lines)


def _evaluate(args: argparse.Namespace) -> int:
    from baglm_nb.pipeline import compare

    obs = _load_observations(args)
    result = compare(obs, _load_deps(args.deps), **filter_options(args))
    print(format_table(result, args.transition, args.prior, args.stepping))
    if args.json:
        print(json.dumps(result))
    return 0


def _import(args: argparse.Namespace) -> int:
    from baglm_nb.cache import import_reference_results

    summary = import_reference_results(
        args.src, args.dataset, args.model, root=args.cache_root, llm=args.llm,
        segment_duration=args.segment_duration,
    )  # fmt: skip
    print(json.dumps({k: str(v) for k, v in summary.items()}, indent=2))
    return 0


def _simulate(args: argparse.Namespace) -> int:
    from baglm_nb.simulate import write_simulated_cache

    path = write_simulated_cache(args.dataset, args.cache_root, limit=args.limit)
    print(f"simulated scores written to {path}")
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    from baglm_nb.simulate import calibrate

    print(calibrate(args.dataset, target=args.target).report())
    return 0


def add_observation_arguments(p: argparse.ArgumentParser) -> None:
    """The options shared by verbs that run the filter: sources, variants and ``--limit``."""
    p.add_argument("--scores", required=True, help="score cache folder, or 'simulated'")
    p.add_argument("--deps", default="oracle", help="dependency cache folder, 'oracle' or 'none'")
    p.add_argument("--transition", default="both",
                   choices=["static", "readiness", "validity", "both"])  # fmt: skip
    p.add_argument("--prior", default="uniform", choices=["uniform", "propagated"])
    p.add_argument("--stepping", default="second", choices=["second", "segment"])
    p.add_argument("--progress", default="scores", choices=["scores", "oracle"])
    p.add_argument("--limit", type=int, default=None, help="use the first N videos only")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m baglm_nb``."""
    parser = argparse.ArgumentParser(prog="python -m baglm_nb", description=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True)
    datasets = sorted(DATASETS)

    p = verbs.add_parser("stats", help="dataset statistics as JSON")
    p.add_argument("--dataset", required=True, choices=datasets)
    p.set_defaults(func=_stats)

    p = verbs.add_parser("evaluate", help="BaGLM and the off-the-shelf baseline on a dataset")
    p.add_argument("--dataset", required=True, choices=datasets)
    add_observation_arguments(p)
    p.add_argument("--json", action="store_true", help="also print the result as JSON")
    p.set_defaults(func=_evaluate)

    p = verbs.add_parser("import", help="import the authors' precomputed .pt files")
    p.add_argument("src", help="folder with vsg/, prog/ and prereq/")
    p.add_argument("--dataset", required=True, choices=datasets)
    p.add_argument("--model", default="internvl2.5-8b")
    p.add_argument("--llm", default="llama-3.3-70b-instruct")
    p.add_argument("--segment-duration", type=int, default=2)
    p.add_argument("--cache-root", default="data/cache")
    p.set_defaults(func=_import)

    p = verbs.add_parser("simulate", help="write a simulated score cache (CPU default)")
    p.add_argument("--dataset", required=True, choices=datasets)
    p.add_argument("--cache-root", default="data/cache")
    p.add_argument("--limit", type=int, default=None)
    p.set_defaults(func=_simulate)

    p = verbs.add_parser("calibrate", help="calibrate the simulated signal strength")
    p.add_argument("--dataset", default="htstep", choices=datasets)
    p.add_argument("--target", type=float, default=52.0)
    p.set_defaults(func=_calibrate)

    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        importlib.import_module(f"{commands.__name__}.{info.name}").register(verbs)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
