"""``python -m baglm_nb localize``: step localization (LoG blobs) and its metrics.

HT-Step (and any dataset whose annotation carries step ids): article-grounding mAP at tIoU
0.3-0.7 for the off-the-shelf LMM (raw scores) and BaGLM (beliefs), beside the paper's
Tab. htstep_localization / off_the_shelf_vs_baglm_localization. Ego4D Goal-Step: windowed R@1 at
IoU > 0.3 / 0.5 beside the point-wise R@1 (no paper values). Observations and dependency sources
are read exactly as ``evaluate`` reads them.
"""

from __future__ import annotations

import argparse


def _localize(args: argparse.Namespace) -> int:
    from baglm_nb.analyses.localization import (
        DEFAULT_OVERLAP,
        DEFAULT_THRESHOLD,
        localization_table,
        localize,
        windowed_recall_table,
    )
    from baglm_nb.analyses.tables import title_for, to_markdown, write_table
    from baglm_nb.apps.cli.options import (
        check_range,
        deps_from_args,
        filter_options,
        observations_from_args,
        print_json,
        run_parameters,
    )
    from baglm_nb.core.pipeline import run_baglm
    from baglm_nb.inputs.datasets import dataset_spec
    from baglm_nb.inputs.variants import with_stay

    check_range("--threshold", args.threshold, 0, 1)
    check_range("--overlap", args.overlap, 0, 1)
    check_range("--top-n", args.top_n, 1)
    obs = observations_from_args(args)
    overlap = None if args.overlap is not None and args.overlap >= 1 else args.overlap
    detect = {
        "threshold": DEFAULT_THRESHOLD if args.threshold is None else args.threshold,
        "refine": not args.no_refine,
        "top_n": args.top_n,
        "overlap": DEFAULT_OVERLAP if args.overlap is None else overlap,
    }
    deps = deps_from_args(args)
    beliefs = run_baglm(obs, deps, **filter_options(args))
    if dataset_spec(args.dataset).localization == "windowed_recall":
        table = windowed_recall_table(obs, deps, beliefs=beliefs, unit=args.unit, **detect)
        what = "Ego4D Goal-Step windowed R@1 (IoU > threshold, NLQ)"
        title = title_for(with_stay(what, args.stay), obs.label)
    else:
        table = localization_table(
            obs, deps, beliefs=beliefs, match_labels=args.match_labels, **detect
        )
        what = "article-grounding mAP (%) at tIoU"
        if args.match_labels:
            what += ", step labels matched (stricter than the paper)"
        title = title_for(with_stay(f"{args.dataset} {what}", args.stay), obs.label)
    print(to_markdown(table, title))
    if args.out:
        write_table(table, args.out, title=title, params=run_parameters(args))
        print(f"written: {args.out}.csv, {args.out}.md")
    if args.predictions:
        frames = []
        for method, source in (("off_the_shelf", obs.vsg), ("baglm", beliefs)):
            preds = localize({u: source[u] for u in beliefs}, obs.dataset, **detect)
            preds.insert(0, "method", method)
            frames.append(preds)
        import pandas as pd

        pd.concat(frames).to_csv(args.predictions, index=False)
        print(f"segments written: {args.predictions}")
    if args.json:
        print_json(table.summary(title, run_parameters(args)))
    return 0


def register(verbs) -> None:
    """Add the ``localize`` verb."""
    from baglm_nb.apps.cli.options import add_observation_arguments
    from baglm_nb.inputs.datasets import DATASETS

    p = verbs.add_parser(
        "localize",
        help="step localization: LoG segments, HT-Step mAP or Ego4D windowed R@1",
        description=__doc__,
    )
    p.add_argument("--dataset", required=True, choices=sorted(DATASETS))
    add_observation_arguments(p)
    p.add_argument(
        "--threshold", type=float, default=None, help="LoG response threshold (default 0.05)"
    )
    p.add_argument(
        "--overlap",
        type=float,
        default=None,
        help="suppress blobs with more than this fraction inside a stronger one "
        "(default 0.5; 1 keeps every local maximum)",
    )
    p.add_argument("--top-n", type=int, default=None, help="keep the n best segments per step")
    p.add_argument("--no-refine", action="store_true", help="grid scales, no sub-scale fit")
    p.add_argument(
        "--match-labels",
        action="store_true",
        help="mAP: only match ground truth of the same step (stricter)",
    )
    p.add_argument(
        "--unit",
        default="query",
        choices=["query", "pair"],
        help="Ego4D R@1 unit: annotated segment (NLQ) or (video, step)",
    )
    p.add_argument("--out", default=None, help="write the table to OUT.csv and OUT.md")
    p.add_argument("--predictions", default=None, help="write every detected segment to a CSV")
    p.add_argument(
        "--json",
        action="store_true",
        help="also print the table as JSON (one line, the last: title, sources, rows under "
        "'values', parameters), as OUT.summary.json holds it",
    )
    p.set_defaults(func=_localize)
