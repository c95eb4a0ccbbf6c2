"""An executed notebook made ready to share: no saved widgets, no local paths, one offline page.

``scripts/run_notebooks.sh`` (``make figures``) runs this after papermill on each executed
notebook, in papermill's process (:mod:`baglm_nb.apps.notebook_run`); the ``render`` verb
(:mod:`baglm_nb.apps.cli.render`) does the same for notebooks given by name:
``python -m baglm_nb render figures/<stem>/<stem>.ipynb``.

- :func:`strip_widgets` removes what a finished run leaves of ipywidgets: the outputs that
  display a widget (the progress bars of ``tqdm.auto``: a frozen bar in the notebook, a
  ``0%`` text in the HTML) and the saved widget state in the notebook's metadata.
- :func:`relative_paths` rewrites the machine's paths in what the page shows: the repository's
  folder becomes paths relative to it (``data/cache/...``), the Python installation's
  ``site-packages`` folder ``site-packages/``; the parameters cell that papermill injects is
  rewritten one parameter per line (:func:`format_parameters`), each value pretty-printed.
- :func:`to_html` exports the notebook with nbconvert's ``lab`` template, every image embedded
  (outputs as ``data:`` URIs, and Markdown images too), without the ``In``/``Out`` prompts'
  ``Out[n]:`` and without the scripts the template loads from the network (require.js,
  MathJax, mermaid: the pages show images, tables and text, so they need none of them; a
  Markdown formula stays as its TeX source). The page loads nothing from the network.
  The templates' compiled code is kept between processes (:func:`template_cache`): each
  notebook of ``make figures`` is rendered by a process of its own, which would otherwise
  compile nbconvert's templates again.
- :func:`render` does all of this for a notebook file, in place, and writes ``<stem>.html``
  beside it.
- :func:`skip_iri_grammar`: a process that only reads, runs and exports notebooks (the
  runner's papermill and ``render``) imports jsonschema (through nbformat) without the grammar
  that ``rfc3987_syntax`` compiles at import for jsonschema's ``iri`` format (seconds of CPU
  each time, jsonschema issue 1392); a notebook's schema uses no such format.

Exports :data:`WIDGET_VIEW`, :data:`INJECTED`, :func:`strip_widgets`, :func:`relative_paths`,
:func:`format_parameters`, :func:`to_html`, :func:`template_cache`, :func:`render` and
:func:`skip_iri_grammar`.
"""

from __future__ import annotations

import ast
import json
import os
import pprint
import re
import site
import sys
from pathlib import Path

__all__ = [
    "INJECTED",
    "WIDGET_VIEW",
    "format_parameters",
    "relative_paths",
    "render",
    "skip_iri_grammar",
    "strip_widgets",
    "template_cache",
    "to_html",
]

#: The MIME type of an output that displays an ipywidget.
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

#: The tag papermill gives the parameters cell it injects.
INJECTED = "injected-parameters"

#: The repository's folder (the one that holds ``baglm_nb/``).
ROOT = Path(__file__).resolve().parents[2]

#: The template: nbconvert's ``lab`` page without the scripts it would load from the network.
OFFLINE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""


def skip_iri_grammar() -> None:
    """Keep jsonschema, when this process first imports it, from loading ``rfc3987_syntax``.

    That package compiles an IRI grammar (lark, Earley) at import, for jsonschema's ``iri`` and
    ``iri-reference`` formats, which no notebook schema uses; jsonschema then leaves those two
    formats unchecked, as it does when the package is not installed. A process that has
    imported jsonschema already, or ``rfc3987_syntax`` itself, is left as it is.
    """
    if "jsonschema" not in sys.modules:
        sys.modules.setdefault("rfc3987_syntax", None)  # None: "import rfc3987_syntax" fails


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


def _prefixes(root: Path) -> list[tuple[str, str]]:
    """``(absolute prefix, replacement)`` pairs, the longest first (symlinks resolved too)."""
    pairs: dict[str, str] = {}
    for folder in [*site.getsitepackages(), site.getusersitepackages()]:
        for path in {folder, os.path.realpath(folder)}:
            pairs[path.rstrip("/") + "/"] = "site-packages/"
    for path in {str(root), os.path.realpath(root)}:
        pairs[path.rstrip("/") + "/"] = ""
        pairs[path.rstrip("/")] = "."
    return sorted(pairs.items(), key=lambda kv: -len(kv[0]))


def _relative(text: str, prefixes: list[tuple[str, str]]) -> str:
    """``text`` with each prefix replaced where a path starts with it (not ``/a/bc`` for
    ``/a/b``)."""
    for prefix, replacement in prefixes:
        end = "" if prefix.endswith("/") else r"(?![\w.-])"
        pattern = r"(?<![\w.-])" + re.escape(prefix) + end
        text = re.sub(pattern, lambda _m, new=replacement: new, text)
    return text


def format_parameters(source: str, width: int = 88) -> str:
    """Papermill's injected parameters cell, one ``name = value`` per line, values wrapped.

    A value that is a Python literal is pretty-printed (:func:`pprint.pformat`, ``width``
    characters); any other line is kept as it is.
    """
    lines = ["# Parameters (injected by papermill; paths relative to the repository)"]
    for line in source.splitlines():
        name, sep, value = line.partition(" = ")
        if not sep or not name.isidentifier():
            if line.strip() and line.strip() != "# Parameters":
                lines.append(line)
            continue
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            lines.append(line)
            continue
        lines.append(f"{name} = " + _literal(parsed, width - len(name) - 3))
    return "\n".join(lines)


def _literal(value, width: int) -> str:
    """``value`` as Python source: one line when it fits, else a dict one item per line."""
    one = repr(value)
    if len(one) <= width or not isinstance(value, dict) or not value:
        return pprint.pformat(value, width=max(20, width), sort_dicts=False)
    items = [
        f"    {k!r}: " + _literal(v, width - 6 - len(repr(k))).replace("\n", "\n    ") + ","
        for k, v in value.items()
    ]
    return "{\n" + "\n".join(items) + "\n}"


def _text_fields(output) -> list[tuple[dict, str]]:
    fields = [(output, "text")] if "text" in output else []
    data = output.get("data", {})
    fields += [(data, mime) for mime in data if mime.startswith("text/")]
    return fields


def relative_paths(nb, root: str | os.PathLike = ROOT) -> int:
    """Rewrite absolute paths in ``nb``'s injected parameters and text outputs, in place.

    Paths inside ``root`` become relative to it, paths inside ``site-packages`` start with
    ``site-packages/``; the injected parameters cell is reformatted (:func:`format_parameters`).
    Papermill's record of the run (``metadata.papermill``) is rewritten the same way, the
    input and output notebooks outside ``root`` named by their file names.
    Returns the number of fields changed.
    """
    prefixes = _prefixes(Path(root))
    changed = 0
    papermill = nb.get("metadata", {}).get("papermill")
    if papermill:  # its record of the run: the notebooks' paths, the parameters
        record = json.loads(_relative(json.dumps(papermill), prefixes))
        for key in ("input_path", "output_path"):
            if isinstance(record.get(key), str) and os.path.isabs(record[key]):
                record[key] = os.path.basename(record[key])
        nb["metadata"]["papermill"] = record
    for cell in nb.get("cells", []):
        if INJECTED in cell.get("metadata", {}).get("tags", []):
            cell["source"] = format_parameters(_relative(cell["source"], prefixes))
            changed += 1
        for output in cell.get("outputs", []):
            for holder, key in _text_fields(output):
                value = holder[key]
                text = "".join(value) if isinstance(value, list) else value
                new = _relative(text, prefixes)
                if new != text:
                    holder[key] = new
                    changed += 1
    return changed


def template_cache(directory: str | os.PathLike | None = None):
    """Jinja's bytecode cache for :func:`to_html`'s templates, kept between processes.

    What an entry was computed for: its template's source (Jinja keys an entry by the
    template's name and refuses it when the source's checksum changed), nbconvert's and
    Jinja's versions (in the file names: another nbconvert or Jinja never reads them) and
    Python's minor version (Jinja's magic header). Entries are written whole (a temporary file
    renamed). ``directory``: by default Jinja's own, a folder of this user's in the system's
    temporary folder, made private (mode 0700) and refused if it is not; a ``directory`` given
    is made if missing and refused unless it is this user's and private too. Only a speed-up:
    ``None`` (templates compiled as before) when no such folder can be had, and an entry that
    cannot be written is not kept.
    """
    import jinja2
    import nbconvert
    from jinja2 import FileSystemBytecodeCache

    class _Kept(FileSystemBytecodeCache):
        def dump_bytecode(self, bucket) -> None:
            try:
                super().dump_bytecode(bucket)
            except OSError:  # a full or read-only disk: the page is made all the same
                pass

    versions = f"nbconvert-{nbconvert.__version__}-jinja2-{jinja2.__version__}"
    pattern = f"__baglm_nb_{versions}_%s.cache"
    try:
        if directory is not None:
            Path(directory).mkdir(mode=0o700, parents=True, exist_ok=True)
            st = os.stat(directory)
            if st.st_uid != os.getuid() or st.st_mode & 0o077:
                return None  # someone else's, or open to others: its entries are not trusted
        return _Kept(None if directory is None else os.fspath(directory), pattern)
    except (OSError, RuntimeError):  # no private folder of this user's to be had
        return None


def to_html(nb, folder: str | os.PathLike = ".") -> str:
    """``nb`` as one offline HTML page (nbconvert's ``lab`` page, see the module docstring).

    Images that Markdown cells link to are read relative to ``folder`` (the notebook's).
    """
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        embed_images=True,
        exclude_output_prompt=True,
        extra_loaders=[DictLoader({"offline.html.j2": OFFLINE_TEMPLATE})],
        template_file="offline.html.j2",
    )
    exporter.environment.bytecode_cache = template_cache()  # read when a template loads
    resources = {"metadata": {"path": str(folder)}}
    body, _ = exporter.from_notebook_node(nb, resources=resources)
    return body


def render(path: str | os.PathLike) -> Path:
    """Make the notebook at ``path`` shareable (rewritten in place) and write its HTML.

    Strips its widgets (:func:`strip_widgets`) and its local paths (:func:`relative_paths`).
    Returns the path of the HTML file, ``path`` with the suffix ``.html``. A file that is not a
    notebook raises ``ValueError`` naming it.
    """
    path = Path(path)
    data = path.read_bytes()  # a missing file is refused before nbformat (seconds) loads
    import nbformat

    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    except (ValueError, nbformat.ValidationError) as exc:
        raise ValueError(f"{path}: not a readable notebook: {exc}") from exc
    strip_widgets(nb)
    relative_paths(nb)
    nbformat.write(nb, path)
    out = path.with_suffix(".html")
    out.write_text(to_html(nb, path.parent), encoding="utf-8")
    return out
