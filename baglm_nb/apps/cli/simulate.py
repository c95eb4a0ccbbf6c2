"""``python -m baglm_nb simulate`` / ``calibrate`` / ``sim-check``: the simulated CPU default.

``simulate --dataset htstep coin --manifest data/cache/prepared.json`` writes each dataset's
simulated score cache and a manifest ``{"scores": {dataset: cache folder}}``, the parameter file
that ``make figures`` passes to the notebooks (``papermill -f``).

``calibrate`` fits each dataset's simulated signal strength to the paper's off-the-shelf R@1 and
prints the stored defaults beside it (:data:`~baglm_nb.core.simulate.CALIBRATED_SIGNAL`);
``calibrate --deps llama gpt`` fits the simulated LLM's presets to the paper's
dependency-violation table (:data:`~baglm_nb.core.simulate_deps.PRESETS`). ``sim-check`` prints
the out-of-sample check: BaGLM's gains and the transition pattern beside the paper's
(:mod:`baglm_nb.analyses.simulation_check`).
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
    p.add_argument(
        "--manifest", default=None, help="also write {'scores': {dataset: absolute folder}} here"
    )
    p.set_defaults(func=run_simulate)

    p = verbs.add_parser(
        "calibrate", help="calibrate the simulation (signal per dataset, D presets)"
    )
    p.add_argument("--dataset", nargs="+", default=list(DATASETS), choices=sorted(DATASETS))
    p.add_argument(
        "--target",
        type=float,
        default=None,
        help="R@1 to reach (default: the paper's off-the-shelf value of each dataset)",
    )
    p.add_argument("--tol", type=float, default=0.05, help="tolerance in R@1 points")
    p.add_argument(
        "--deps",
        nargs="+",
        default=None,
        metavar="PRESET",
        help="fit these simulated-LLM presets (llama, gpt) to the paper's "
        "dependency-violation table instead",
    )
    p.set_defaults(func=run_calibrate)

    p = verbs.add_parser("sim-check", help="the simulation's BaGLM gains beside the paper's")
    p.add_argument("--dataset", nargs="+", default=list(DATASETS), choices=sorted(DATASETS))
    p.add_argument("--deps", default=None, help="deps setting (default: simulated-llm:llama)")
    p.add_argument("--limit", type=int, default=None, help="the first N videos of each dataset")
    p.set_defaults(func=run_check)


def run_simulate(args: argparse.Namespace) -> int:
    """Run the ``simulate`` verb."""
    from pathlib import Path

    from baglm_nb.apps.cli.options import check_range
    from baglm_nb.core.simulate import write_simulated_cache
    from baglm_nb.stores.atomic import atomic_write_json

    check_range("--limit", args.limit, 1)
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
    from baglm_nb.apps.cli.options import check_range
    from baglm_nb.core.simulate_deps import PRESETS

    check_range("--tol", args.tol, 0, 100, low_open=True)
    check_range("--target", args.target, 0, 100, low_open=True)
    unknown = [name for name in args.deps or () if name not in PRESETS]
    if unknown:
        raise ValueError(f"--deps: unknown preset(s) {unknown}; presets: {sorted(PRESETS)}")
    if args.deps:
        return _calibrate_deps(args.deps)
    from baglm_nb.core.simulate import calibrate, default_params, offline_recall
    from baglm_nb.inputs.datasets import dataset_spec

    for name in dict.fromkeys(args.dataset):
        result = calibrate(name, target=args.target, tol=args.tol)
        print(result.report())
        stored = dataset_spec(name).calibrated_signal
        if stored is not None:
            value = offline_recall(name, default_params(name))
            print(
                f"  stored default for {name}: signal = {stored:.4f}, off-the-shelf R@1 "
                f"{value:.2f}% (target {result.target:.2f}%, {value - result.target:+.2f})"
            )
    return 0


def _calibrate_deps(names: list[str]) -> int:
    """Fit simulated-LLM presets and print their values and curves beside the stored ones."""
    from baglm_nb.analyses.violations import fit_preset
    from baglm_nb.core.simulate_deps import PRESETS
    from baglm_nb.inputs.paper import PAPER_VIOLATIONS

    for name in dict.fromkeys(names):
        fit = fit_preset(name)
        values = ", ".join(f"{v:g}" for v in fit.preset.values)
        stored = ", ".join(f"{v:g}" for v in PRESETS[name].values)
        print(
            f"[simulated] preset {name} ({fit.preset.llm}): weight, bias, noise, spread = "
            f"{values} (loss {fit.loss:.2f}, {fit.evaluations} evaluations; stored: {stored})"
        )
        for col in ("violated_pct", "tasks_violated_pct"):
            ours = " ".join(f"{v:5.1f}" for v in fit.curves[col])
            paper = " ".join(f"{v:5.1f}" for v in PAPER_VIOLATIONS[col][fit.preset.llm])
            print(f"  {col:<18} simulated {ours}\n  {'':<18} paper     {paper}")
    return 0


def run_check(args: argparse.Namespace) -> int:
    """Run the ``sim-check`` verb: print the two check tables as Markdown."""
    from baglm_nb.analyses.simulation_check import simulation_check
    from baglm_nb.analyses.tables import title_for, to_markdown
    from baglm_nb.apps.cli.options import check_range
    from baglm_nb.core import sources

    check_range("--limit", args.limit, 1)
    deps = args.deps or sources.SIMULATED_LLM
    gains, pattern = simulation_check(args.dataset, deps=deps, limit=args.limit)
    print(to_markdown(gains, title_for("BaGLM's gain beside the paper's", "simulated")))
    if len(pattern):
        print(
            to_markdown(pattern, title_for("Transition ablation: order and pattern", "simulated"))
        )
    return 0
