"""``python -m baglm_nb alerts``: the alert table on injected mistakes (simulated observations).

``alerts --dataset htstep --limit 50`` prints :func:`baglm_nb.analyses.alerts.alert_table` as
Markdown (detection of injected Skips and Swaps, false alerts per unedited video, delay) for
each D of ``--deps``; ``--out STEM`` also writes it with
:func:`~baglm_nb.analyses.tables.write_table`. The definitions are in ``docs/alerts.md``.
"""

from __future__ import annotations

import argparse


def register(verbs) -> None:
    """Add the ``alerts`` verb."""
    from baglm_nb.analyses.mistakes import MISTAKE_SEED
    from baglm_nb.apps.cli.options import add_alert_threshold
    from baglm_nb.inputs.datasets import DATASETS

    p = verbs.add_parser(
        "alerts",
        help="detection of injected Skips and Swaps by the alerts (simulated observations)",
    )
    p.add_argument("--dataset", nargs="+", default=list(DATASETS), choices=sorted(DATASETS))
    p.add_argument(
        "--deps",
        nargs="+",
        default=None,
        help="deps settings to compare (default: the alert table's own, "
        "baglm_nb.analyses.alerts.ALERT_DEPS)",
    )
    p.add_argument("--limit", type=int, default=None, help="the first N videos of each dataset")
    add_alert_threshold(p)
    p.add_argument(
        "--noise-corr",
        type=float,
        default=None,
        help="the simulation's noise correlation across segments, in (-1, 1) (default: the "
        "default twin's, baglm_nb.core.simulate.DEFAULT_TWIN)",
    )
    p.add_argument("--seed", type=int, default=MISTAKE_SEED, help="seed of the injected mistakes")
    p.add_argument(
        "--out",
        default=None,
        metavar="STEM",
        help="also write STEM.csv, .md, .summary.json and .items.parquet",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the ``alerts`` verb (errors: :func:`baglm_nb.apps.cli.main.main`'s rule)."""
    from baglm_nb.core.alerts import check_level

    check_level("--alert-threshold", args.alert_threshold)  # the flags first: nothing loaded yet
    if args.noise_corr is not None and not -1.0 < args.noise_corr < 1.0:
        raise ValueError(f"--noise-corr must be in (-1, 1), got {args.noise_corr:g}")
    if args.limit is not None and args.limit < 1:
        raise ValueError(f"--limit must be a positive number of videos, got {args.limit}")
    from baglm_nb.analyses.alerts import ALERT_DEPS, alert_table
    from baglm_nb.analyses.tables import title_for, to_markdown, write_table
    from baglm_nb.apps.cli.options import run_parameters
    from baglm_nb.core.simulate import LABEL, default_params

    args.deps = list(ALERT_DEPS) if args.deps is None else args.deps
    if args.noise_corr is None:
        args.noise_corr = default_params(args.dataset[0]).noise_corr
    table = alert_table(
        args.dataset,
        args.deps,
        limit=args.limit,
        threshold=args.alert_threshold,
        noise_corr=args.noise_corr,
        seed=args.seed,
    )
    what = (
        f"Alerts on injected mistakes (--alert-threshold {args.alert_threshold:g}, "
        f"noise_corr {args.noise_corr:g}, seed {args.seed})"
    )
    title = title_for(what, LABEL, table)
    print(to_markdown(table, title), end="")
    if args.out:
        write_table(table, args.out, title, params=run_parameters(args))
        print(f"written: {args.out}.csv (and .md, .summary.json, .items.parquet)")
    return 0
