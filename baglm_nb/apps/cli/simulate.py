"""``python -m baglm_nb simulate`` / ``calibrate`` / ``sim-check``: the simulated CPU default.

``simulate --dataset htstep coin --manifest data/cache/prepared.json`` writes each dataset's
simulated score cache (the default twin; ``--twin iid|pinned`` names one) and a manifest
``{"scores": {dataset: cache folder}}``, the parameter file that ``make figures`` passes to the
notebooks (``papermill -f``).

``calibrate`` fits each dataset's simulated signal strength to the paper's off-the-shelf R@1 and
prints the stored defaults beside it (:data:`~baglm_nb.core.simulate.CALIBRATED_SIGNAL`); for
the pinned twin it first fits the persistence (``noise_corr``) to the paper's off-the-shelf
HT-Step mAP (:mod:`baglm_nb.analyses.twin_fit`); it ends with each twin's stored fit against the
paper and the tolerances (``calibrate --stored``: that alone);
``calibrate --deps llama gpt`` fits the simulated LLM's presets to the paper's
dependency-violation table (:data:`~baglm_nb.core.simulate_deps.PRESETS`). ``sim-check`` prints
the out-of-sample check: BaGLM's gains and the transition pattern beside the paper's on the
default twin, then both twins side by side on every BaGLM number neither was fitted on, with
each twin's mean absolute error (:mod:`baglm_nb.analyses.simulation_check`).
"""

from __future__ import annotations

import argparse


def register(verbs) -> None:
    """Add the ``simulate``, ``calibrate`` and ``sim-check`` verbs."""
    from baglm_nb.inputs.datasets import DATASETS

    names = list(DATASETS)  # their order is the default's; the choices are sorted
    _add_simulate(verbs, names)
    _add_calibrate(verbs, names)
    _add_sim_check(verbs, names)


def _add_simulate(verbs, names: list[str]) -> None:
    """The ``simulate`` verb: write simulated score caches (and a manifest)."""
    p = verbs.add_parser("simulate", help="write simulated score caches (CPU default)")
    p.add_argument("--dataset", required=True, nargs="+", choices=sorted(names))
    p.add_argument("--cache-root", default="data/cache")
    p.add_argument("--limit", type=int, default=None, help="the first N videos of each dataset")
    p.add_argument(
        "--manifest", default=None, help="also write {'scores': {dataset: absolute folder}} here"
    )
    p.add_argument(
        "--twin",
        default=None,
        choices=["iid", "pinned"],
        help="which simulated twin (default: the default twin, what 'simulated' gives)",
    )
    p.set_defaults(func=run_simulate)


def _add_calibrate(verbs, names: list[str]) -> None:
    """The ``calibrate`` verb: the twins' signals, their persistence, the D presets."""
    p = verbs.add_parser(
        "calibrate", help="calibrate the simulation (signal per dataset, D presets)"
    )
    p.add_argument("--dataset", nargs="+", default=list(names), choices=sorted(names))
    p.add_argument(
        "--target",
        type=float,
        default=None,
        help="R@1 to reach (default: the paper's off-the-shelf value of each dataset)",
    )
    p.add_argument("--tol", type=float, default=0.05, help="tolerance in R@1 points")
    p.add_argument(
        "--twin",
        nargs="+",
        default=None,
        choices=["iid", "pinned"],
        help="the twins to fit (default: both): iid (independent noise) or pinned (noise_corr "
        "fitted to the paper's off-the-shelf HT-Step mAP, then each dataset's signal)",
    )
    p.add_argument(
        "--corr",
        nargs="+",
        type=float,
        default=None,
        metavar="R",
        help="pinned: the noise_corr values to try (default: 0, 0.1, ..., 0.9, then a finer "
        "grid around the best)",
    )
    p.add_argument(
        "--stored",
        action="store_true",
        help="only print each twin's stored fit against the paper and the tolerances",
    )
    p.add_argument(
        "--deps",
        nargs="+",
        default=None,
        metavar="PRESET",
        help="fit these simulated-LLM presets (llama, gpt) to the paper's "
        "dependency-violation table instead",
    )
    p.set_defaults(func=run_calibrate)


def _add_sim_check(verbs, names: list[str]) -> None:
    """The ``sim-check`` verb: the out-of-sample check of the simulation."""
    p = verbs.add_parser("sim-check", help="the simulation's BaGLM gains beside the paper's")
    p.add_argument("--dataset", nargs="+", default=list(names), choices=sorted(names))
    p.add_argument("--deps", default=None, help="deps setting (default: simulated-llm:llama)")
    p.add_argument("--limit", type=int, default=None, help="the first N videos of each dataset")
    p.add_argument(
        "--twin",
        default=None,
        choices=["iid", "pinned"],
        help="the twin of the gain and pattern tables (default: the default twin); the "
        "side-by-side check always has both",
    )
    p.set_defaults(func=run_check)


def run_simulate(args: argparse.Namespace) -> int:
    """Run the ``simulate`` verb."""
    from pathlib import Path

    from baglm_nb.apps.cli.options import check_range
    from baglm_nb.core.simulate import DEFAULT_TWIN, twin_params, write_simulated_cache
    from baglm_nb.stores.atomic import atomic_write_json

    check_range("--limit", args.limit, 1)
    folders = {}
    for name in dict.fromkeys(args.dataset):
        params = twin_params(name, args.twin or DEFAULT_TWIN)
        folder = write_simulated_cache(name, args.cache_root, params, limit=args.limit)
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
    for value in args.corr or ():
        check_range("--corr", value, 0, 0.99)
    unknown = [name for name in args.deps or () if name not in PRESETS]
    if unknown:
        raise ValueError(f"--deps: unknown preset(s) {unknown}; presets: {sorted(PRESETS)}")
    if args.deps:
        return _calibrate_deps(args.deps)
    from baglm_nb.core.simulate import TWINS

    twins = list(dict.fromkeys(args.twin or TWINS))
    datasets = list(dict.fromkeys(args.dataset))
    if not args.stored:
        for twin in twins:
            _calibrate_twin(twin, datasets, args)
    _print_stored_fit(twins, datasets)
    return 0


def _calibrate_twin(twin: str, datasets: list[str], args: argparse.Namespace) -> None:
    """Fit one twin (its persistence first for ``pinned``) and print it beside the stored one."""
    from baglm_nb.analyses.tables import to_markdown
    from baglm_nb.analyses.twin_fit import fit_persistence
    from baglm_nb.core.simulate import PINNED, PINNED_NOISE_CORR, calibrate, twin_params
    from baglm_nb.inputs.datasets import dataset_spec

    corr = 0.0
    if twin == PINNED:
        fit = fit_persistence(args.corr, fine_step=None if args.corr else 0.02)
        best = fit.best
        corr = best.noise_corr
        title = (
            "[simulated] pinned twin: noise_corr fitted on HT-Step (signal bisected to the "
            "paper's off-the-shelf R@1 at each point; miss = largest |mAP - paper| / tolerance)"
        )
        print(to_markdown(fit.frame(), title))
        print(
            f"  fitted noise_corr = {corr:g} (miss {best.miss:.2f}; stored: {PINNED_NOISE_CORR:g})"
        )
    for name in datasets:
        base = twin_params(name, twin, signal=1.0, noise_corr=corr)
        result = calibrate(name, target=args.target, params=base, tol=args.tol)
        print(f"[{twin} twin] " + result.report())
        spec = dataset_spec(name)
        stored = spec.calibrated_signal if twin != PINNED else spec.pinned_signal
        if stored is not None:
            print(f"  stored {twin} signal for {name}: {stored:.4f}")


def _print_stored_fit(twins: list[str], datasets: list[str]) -> None:
    """Each twin's stored values against the paper's off-the-shelf numbers and tolerances."""
    from baglm_nb.analyses.tables import to_markdown
    from baglm_nb.analyses.twin_fit import fit_table
    from baglm_nb.core.simulate import DEFAULT_TWIN, PINNED_NOISE_CORR

    for twin in twins:
        table = fit_table(twin, datasets)
        corr = PINNED_NOISE_CORR if twin == "pinned" else 0.0
        default = " (the default: 'simulated')" if twin == DEFAULT_TWIN else ""
        title = (
            f"[simulated] stored {twin} twin{default}, noise_corr {corr:g}: off-the-shelf "
            "numbers against the paper (InternVL2.5-8B) and the tolerances"
        )
        print(to_markdown(table, title))
        verdict = "all within" if table["within"].all() else "NOT all within"
        print(f"  {twin}: {verdict} the tolerances ({int(table['within'].sum())}/{len(table)})")


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
    """Run the ``sim-check`` verb: print the check tables as Markdown."""
    from baglm_nb.analyses.simulation_check import (
        RULE_GROUP,
        default_twin_of,
        simulation_check,
        twin_check,
        twin_errors,
    )
    from baglm_nb.analyses.tables import title_for, to_markdown
    from baglm_nb.apps.cli.options import check_range
    from baglm_nb.core import sources
    from baglm_nb.core.simulate import DEFAULT_TWIN

    check_range("--limit", args.limit, 1)
    deps = args.deps or sources.SIMULATED_LLM
    chosen = args.twin or DEFAULT_TWIN
    scores = f"{sources.SIMULATED}:{chosen}"
    gains, pattern = simulation_check(args.dataset, scores=scores, deps=deps, limit=args.limit)
    twin = f"twin: {chosen}" + (", the default" if chosen == DEFAULT_TWIN else "")
    print(to_markdown(gains, title_for(f"BaGLM's gain beside the paper's ({twin})", "simulated")))
    if len(pattern):
        what = f"Transition ablation: order and pattern ({twin})"
        print(to_markdown(pattern, title_for(what, "simulated")))
    check = twin_check(args.dataset, deps=deps, limit=args.limit)
    what = "Both twins against BaGLM's rows (gains in points over each off-the-shelf row)"
    print(to_markdown(check, title_for(what, "simulated")))
    errors = twin_errors(check.frame)
    what = "Each twin's mean absolute error (points) on the numbers it was not fitted on"
    print(to_markdown(errors, title_for(what, "simulated")))
    print(
        f"[simulated] smaller out-of-sample error ({RULE_GROUP} MAE): "
        f"{default_twin_of(errors)}; the default twin ('simulated') is {DEFAULT_TWIN}"
    )
    return 0
