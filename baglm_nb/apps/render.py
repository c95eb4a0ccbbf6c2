"""An executed notebook made ready to share: no saved widgets, and a self-contained HTML copy.

``scripts/run_notebooks.sh`` (``make figures``) runs this after papermill on each executed
notebook: ``python -m baglm_nb.apps.render figures/<stem>/<stem>.ipynb``.

- :func:`strip_widgets` removes what a finished run leaves of ipywidgets: the outputs that
  display a widget (the progress bars of ``tqdm.auto``: a frozen bar in the notebook, a
  ``0%`` text in the HTML) and the saved widget state in the notebook's metadata.
- :func:`to_html` exports the notebook with nbconvert's HTML exporter, every image embedded
  (outputs as ``data:`` URIs, and Markdown images too).
- :func:`render` does both for a notebook file, in place, and writes ``<stem>.html`` beside it.

Exports :data:`WIDGET_VIEW`, :func:`strip_widgets`, :func:`to_html`, :func:`render` and
:func:`main`.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["WIDGET_VIEW", "main", "render", "strip_widgets", "to_html"]

#: The MIME type of an output that displays an ipywidget.
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def strip_widgets(nb) -> int:
    """Remove widget outputs and the saved widget state from ``nb`` (a NotebookNode), in place.

    Returns the number of outputs removed.
    """
    removed = 0
    for cell in nb.get("cells", []):
        outputs = cell.get("outputs")
        if not outputs:
            continue
        kept = [o for o in outputs if WIDGET_VIEW not in o.get("data", {})]
        removed += len(outputs) - len(kept)
        cell["outputs"] = kept
    nb.get("metadata", {}).pop("widgets", None)
    return removed


def to_html(nb, folder: str | os.PathLike = ".") -> str:
    """``nb`` as one HTML page (nbconvert's ``lab`` template), every image embedded.

    Images that Markdown cells link to are read relative to ``folder`` (the notebook's).
    """
    from nbconvert import HTMLExporter

    resources = {"metadata": {"path": str(folder)}}
    body, _ = HTMLExporter(embed_images=True).from_notebook_node(nb, resources=resources)
    return body


def render(path: str | os.PathLike) -> Path:
    """Strip the widgets of the notebook at ``path`` (rewritten in place) and write its HTML.

    Returns the path of the HTML file, ``path`` with the suffix ``.html``.
    """
    import nbformat

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    strip_widgets(nb)
    nbformat.write(nb, path)
    out = path.with_suffix(".html")
    out.write_text(to_html(nb, path.parent), encoding="utf-8")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: render each notebook given (see :func:`render`); prints the HTML paths."""
    parser = argparse.ArgumentParser(
        prog="python -m baglm_nb.apps.render",
        description="Strip saved widgets from executed notebooks and write self-contained HTML.",
    )
    parser.add_argument("notebooks", nargs="+", help="executed .ipynb files (rewritten in place)")
    args = parser.parse_args(argv)
    for name in args.notebooks:
        print(render(name))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
