"""``python -m baglm_nb render NOTEBOOK...``: make executed notebooks ready to share.

Each notebook is rewritten in place (no saved widgets, repository-relative paths, one parameter
per line) and gets a self-contained offline HTML page beside it
(:func:`baglm_nb.apps.render.render`); the HTML paths are printed, one per line.
``scripts/run_notebooks.sh`` (``make figures``) does the same after papermill, in papermill's
process (:mod:`baglm_nb.apps.notebook_run`). A missing or invalid
notebook raises (one ``error:`` line naming it, exit 2: :mod:`baglm_nb.apps.cli.main`).
"""

from __future__ import annotations

import argparse


def register(verbs) -> None:
    """Add the ``render`` verb."""
    p = verbs.add_parser(
        "render",
        help="make executed notebooks shareable and write their offline HTML",
        description="Make executed notebooks shareable and write self-contained offline HTML.",
    )
    p.add_argument("notebooks", nargs="+", help="executed .ipynb files (rewritten in place)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the ``render`` verb: render each notebook given, printing its HTML path."""
    from baglm_nb.apps.render import render, skip_iri_grammar

    skip_iri_grammar()  # this process only reads and exports notebooks
    for name in args.notebooks:
        print(render(name))
    return 0
