"""``python -m baglm_nb import``: the authors' precomputed ``.pt`` files into the caches.

Each warning and each refused file is one line on stderr as it happens; the summary (files
imported, warnings by kind, refused files) follows on stdout. A refused file (its video is not
imported) raises ``RuntimeError`` (exit 1) after the summary; an error that stops the import, or
no file that matched an annotated video (the unmatched files are named: an empty folder, another
dataset's files), is bad input (exit 2; :mod:`baglm_nb.apps.cli.main`'s rule), and leaves no
cache folder behind. ``.pt`` files that name no video or group are named in one warning line,
or refused with ``--strict`` (exit 2, nothing written).
"""

from __future__ import annotations

import argparse
import warnings
from typing import Any


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
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--json", action="store_true", help="also print the summary as JSON (one line, the last)"
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="refuse the import (nothing written) when a .pt file names no video or group of "
        "the dataset; by default such files are named in a warning",
    )
    p.set_defaults(func=run)


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """The import summary as text: what was imported, warnings by kind, refused files."""
    from baglm_nb.stores.published_files import WARNING_KINDS

    lines = [
        f"imported: {summary['files_imported']} files ({summary['videos_imported']} videos: "
        f"VSG + progress; {summary['groups_imported']} prerequisite matrices) into "
        f"{summary['scores_path']} and {summary['dependencies_path']}",
        f"skipped: {summary['videos_skipped']} annotated videos without a VSG file",
    ]
    warnings = summary["warnings"]
    lines.append(f"warnings: {sum(warnings.values())}")
    for kind, n in warnings.items():
        if n:
            extra = f"; largest deviation {summary['max_clipped']:.3g}" if kind == "clipped" else ""
            lines.append(f"  {kind}: {n} ({WARNING_KINDS[kind]}{extra})")
    lines.append(
        f"refused: {summary['files_refused']} files ({summary['videos_refused']} videos not "
        "imported)"
    )
    return lines


def run(args: argparse.Namespace) -> int:
    """Run the ``import`` verb."""
    from baglm_nb.apps.cli.options import print_json
    from baglm_nb.stores.importer import import_reference_results, unknown_files_line

    summary = import_reference_results(
        args.src,
        args.dataset,
        args.model,
        root=args.cache_root,
        llm=args.llm,
        segment_duration=args.segment_duration,
        show_progress=not args.no_progress,
        strict=args.strict,
    )
    if not summary["videos_imported"] and not summary["files_refused"]:
        raise ValueError(_nothing_matched(args, summary))
    print("\n".join(summary_lines(summary)))
    if summary["unmatched"]:
        line = unknown_files_line(summary["unmatched"], args.dataset)
        warnings.warn(f"{args.src}: {line} (--strict refuses them)", stacklevel=1)
    if args.json:
        print_json(summary)
    if summary["files_refused"]:
        raise RuntimeError(
            f"{summary['files_refused']} files refused (each named above); their "
            f"{summary['videos_refused']} videos are not imported"
        )
    return 0


def _nothing_matched(args: argparse.Namespace, summary: dict[str, Any]) -> str:
    """Why no file named an annotated video (bad input), naming the unmatched files."""
    files = summary["unmatched"]
    shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
    what = f"{len(files)} unmatched .pt file(s): {shown}" if files else "no .pt files"
    return (
        f"{args.src}: no file matched a {args.dataset} video (expected vsg/, prog/ and "
        f"prereq/ files named by video uid and group); {what}"
    )
