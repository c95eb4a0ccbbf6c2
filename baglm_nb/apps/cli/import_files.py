"""``python -m baglm_nb import``: the authors' precomputed ``.pt`` files into the caches.

Each warning and each refused file is one line on stderr as it happens; the summary (files
imported, warnings by kind, refused files) follows on stdout. The exit status is 1 when a file
was refused (its video is not imported), 2 on an error that stops the import (traceback only
with ``--debug``) or when no file matched an annotated video (the unmatched files are named:
an empty folder, another dataset's files), else 0.
"""

from __future__ import annotations

import argparse
import json
import sys
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
    p.add_argument("--json", action="store_true", help="also print the summary as JSON")
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
    from baglm_nb.stores.importer import import_reference_results

    try:
        summary = import_reference_results(
            args.src, args.dataset, args.model, root=args.cache_root, llm=args.llm,
            segment_duration=args.segment_duration, show_progress=not args.no_progress,
        )  # fmt: skip
    except (ValueError, OSError) as exc:
        if args.debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not summary["videos_imported"] and not summary["files_refused"]:
        return _nothing_matched(args, summary)
    print("\n".join(summary_lines(summary)))
    if args.json:
        print(json.dumps(summary, indent=2))
    return 1 if summary["files_refused"] else 0


def _nothing_matched(args: argparse.Namespace, summary: dict[str, Any]) -> int:
    """No file named an annotated video: bad input (exit 2), naming the unmatched files."""
    files = summary["unmatched"]
    shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
    what = f"{len(files)} unmatched .pt file(s): {shown}" if files else "no .pt files"
    print(f"error: {args.src}: no file matched a {args.dataset} video (expected vsg/, prog/ and "
          f"prereq/ files named by video uid and group); {what}", file=sys.stderr)  # fmt: skip
    return 2
