"""Command line: ``python -m baglm_nb <verb>``; one module per verb, each a thin call."""

from __future__ import annotations

import argparse
import importlib
import sys

#: The verb modules of this package, each with ``register(verbs)``.
VERBS = ("stats", "evaluate", "import_files", "simulate", "score", "deps", "localize", "follow")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m baglm_nb``."""
    parser = argparse.ArgumentParser(prog="python -m baglm_nb", description=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True)
    for name in VERBS:
        importlib.import_module(f"baglm_nb.apps.cli.{name}").register(verbs)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
