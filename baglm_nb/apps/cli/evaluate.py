"""``python -m baglm_nb evaluate``: BaGLM and the off-the-shelf baseline beside the paper."""

from __future__ import annotations

import argparse

from baglm_nb.apps.cli.options import (
    add_observation_arguments,
    check_range,
    deps_from_args,
    filter_options,
    observations_from_args,
    print_json,
    smoothing_lag,
)

#: The smoothing lag's flag: its unit (seconds) in its name (``follow``'s is in segments).
LAG_FLAG = "--smoothing-lag-s"


def register(verbs) -> None:
    """Add the ``evaluate`` verb."""
    from baglm_nb.inputs.datasets import DATASETS

    p = verbs.add_parser("evaluate", help="BaGLM and the off-the-shelf baseline on a dataset")
    p.add_argument("--dataset", required=True, choices=sorted(DATASETS))
    add_observation_arguments(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="also print the result as JSON (one line, the last), with the number of "
        "(video, step) pairs whose best row differs between the two --precision choices "
        "(null with --stay), the online metrics, and each metric's spec (label, unit, "
        "aggregation, higher_is_better)",
    )
    p.add_argument(
        LAG_FLAG,
        dest="smoothing_lag_s",
        metavar="L|inf",
        help="fixed-lag smoothing, L in seconds: each second's belief from the observations "
        "up to L seconds later (0: the filter, the default; inf: the offline smoother); "
        "float64 only",
    )
    # the earlier spelling, whose unit the name did not say: still read, not shown
    p.add_argument("--smoothing-lag", dest="smoothing_lag_s", help=argparse.SUPPRESS)
    p.add_argument(
        "--threshold",
        type=float,
        default=0.5,
        help="announcement confidence of the online metrics (follow's --threshold; its default "
        "differs: baglm_nb.inputs.follow_defaults)",
    )
    p.add_argument(
        "--patience", type=int, default=2, help="announcement patience in segments (as follow's)"
    )
    p.set_defaults(func=run)


def format_table(
    result: dict,
    transition: str,
    prior: str,
    stepping: str,
    deps: str | None = None,
    stay: float = 0.0,
) -> str:
    """A small text table: BaGLM and the off-the-shelf baseline beside the paper's values.

    ``deps`` (the dependency source's label) is printed under the table; a non-zero ``stay``
    is named in the title and in BaGLM's row.
    """
    from baglm_nb.analyses.tables import title_for
    from baglm_nb.inputs.datasets import dataset_spec
    from baglm_nb.inputs.paper import paper_value
    from baglm_nb.inputs.variants import with_stay

    ds = result["dataset"]
    metric = dataset_spec(ds).recall.label
    rows = [
        ("method", "workbench", "paper"),
        (
            f"BaGLM ({transition}, prior={prior}, stepping={stepping}"
            + (f", stay={stay:g})" if stay else ")"),
            f"{result['baglm']:.1f}",
            f"{paper_value('baglm', ds):.1f}",
        ),
        (
            "off-the-shelf LMM",
            f"{result['off_the_shelf']:.1f}",
            f"{paper_value('off_the_shelf', ds):.1f}",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    lines = [title_for(with_stay(f"{ds} {metric} (%)", stay), result["source"])]
    lines += [f"{a:<{width}}  {b:>9}  {c:>5}" for a, b, c in rows]
    annotated = result.get("annotated", result["videos"])
    if result["videos"] < annotated:
        lines.append(
            f"videos evaluated: {result['videos']} of {annotated} annotated videos "
            "(the others have no scores in the cache)"
        )
    else:
        lines.append(f"videos evaluated: {result['videos']}")
    if deps is not None:
        lines.append(f"D (BaGLM's dependency matrices): {deps}")
    return "\n".join(lines)


def format_online(online: dict) -> str:
    """The online metrics of BaGLM and the off-the-shelf model as a small text table, one row
    per metric of ``online`` with its spec's header (label and unit) and direction."""
    from baglm_nb.inputs.metric_specs import metric_spec

    lag = online["smoothing_lag_s"]
    rows = [(metric_spec(k), online["baglm"][k], online["off_the_shelf"][k])
            for k in online["baglm"]]  # fmt: skip
    width = max([len("metric"), *(len(s.header) for s, _, _ in rows)])
    better = {True: "higher", False: "lower", None: ""}
    lines = [f"online quality (announcements: threshold {online['threshold']:g}, patience "
             f"{online['patience']} segments; BaGLM smoothing lag "
             f"{'inf' if lag is None else f'{lag} s'}):",
             f"{'metric':<{width}}  {'BaGLM':>8}  {'off-the-shelf':>13}  better"]  # fmt: skip
    for spec, a, b in rows:
        row = f"{spec.header:<{width}}  {a:>8.3f}  {b:>13.3f}  {better[spec.higher_is_better]}"
        lines.append(row.rstrip())
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Run the ``evaluate`` verb."""
    lag = smoothing_lag(args.smoothing_lag_s, LAG_FLAG, allow_inf=True)
    check_range("--patience", args.patience, 1)
    check_range("--threshold", args.threshold, 0, 1)
    from baglm_nb.core.filtering import PUBLISHED_PRECISION  # the flags first: nothing loaded yet
    from baglm_nb.core.pipeline import compare, precision_agreement

    obs = observations_from_args(args)
    if lag != 0 and obs.precision == PUBLISHED_PRECISION:
        raise ValueError(
            f"{LAG_FLAG} {args.smoothing_lag_s}: smoothing runs in float64 only; "
            f"these observations run in {PUBLISHED_PRECISION} (add --precision "
            "float64)"
        )
    d = obs.segment_duration
    if lag and args.stepping == "segment" and lag % d:
        raise ValueError(
            f"{LAG_FLAG} {args.smoothing_lag_s}: with --stepping segment the lag "
            f"must be a multiple of the segment duration ({d} s)"
        )
    deps = deps_from_args(args)
    online = {"threshold": args.threshold, "patience": args.patience}
    result = compare(obs, deps, online=online, smoothing_lag_s=lag, **filter_options(args))
    result["D"] = deps.label
    result["annotated"] = _annotated(args)
    result["stay"] = args.stay
    print(format_table(result, args.transition, args.prior, args.stepping, deps.label, args.stay))
    print(format_online(result["online"]))
    if args.json:  # the published float32 precision runs no stay: nothing to compare then
        agreement = None if args.stay else precision_agreement(obs, deps, **filter_options(args))
        result["precision_agreement"] = agreement
        print_json(result)
    return 0


def _annotated(args: argparse.Namespace) -> int:
    """The annotated videos ``--dataset`` and ``--limit`` ask for (scored or not)."""
    from baglm_nb.inputs.datasets import load_dataset

    total = len(load_dataset(args.dataset))
    return min(total, args.limit) if args.limit else total
