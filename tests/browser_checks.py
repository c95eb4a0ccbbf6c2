"""Checks of rendered HTML pages in headless chromium (Playwright), shared by the browser tests.

* :func:`wide_tables`: the tables of a page wider than the column they sit in (a notebook
  page's output area at a 1280-px-wide window: what a reader sees without scrolling sideways);
* :func:`wide_code`: code or text blocks whose lines run past their box (cut off, or a
  scroll bar);
* :func:`screenshot`: the whole page as a PNG, to look at.

Each takes an open Playwright ``page`` (see :func:`open_page`), so one browser serves several
checks. Chromium is Debian's (``/usr/bin/chromium`` or ``$BAGLM_CHROMIUM``), never downloaded.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("BAGLM_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: The window a reader opens a page in (a laptop screen): the column is what fits in it.
VIEWPORT = {"width": 1280, "height": 900}

#: Each table's caption, width and the width of the column it sits in (pixels).
TABLES_JS = """els => els.map(t => {
  const column = t.closest('.jp-OutputArea-output, .jp-RenderedHTMLCommon, main, body');
  const caption = t.querySelector('caption');
  return {caption: caption ? caption.innerText.slice(0, 80) : t.innerText.slice(0, 60),
          width: Math.round(t.getBoundingClientRect().width),
          column: Math.round(column.clientWidth)};
})"""

_CODE = """els => els.map(e => ({text: e.innerText.slice(0, 60),
  width: e.scrollWidth, box: e.clientWidth}))"""


def launch(pw):
    """Headless chromium (Debian's); fails, naming the install command, when it is missing."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"no chromium at {CHROMIUM}: apt-get install -y chromium (or make setup)")
    return pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)


@contextmanager
def open_page(path: Path, browser):
    """A Playwright page showing the local HTML file ``path`` at :data:`VIEWPORT`, in a context
    of its own of ``browser`` (an open Playwright browser, e.g. one per test module)."""
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        page.goto(Path(path).resolve().as_uri())
        page.wait_for_load_state("load")
        yield page
    finally:
        context.close()


def wide_tables(page, slack: int = 1) -> list[dict]:
    """The tables wider than their column: ``{caption, width, column}`` each (pixels)."""
    tables = page.eval_on_selector_all("table", TABLES_JS)
    return [t for t in tables if t["width"] > t["column"] + slack]


def wide_code(page, slack: int = 1) -> list[dict]:
    """Code cells and text outputs whose content is wider than their box: cut off or scrolled."""
    blocks = page.eval_on_selector_all(".jp-InputArea-editor, .jp-OutputArea-output pre", _CODE)
    return [b for b in blocks if b["width"] > b["box"] + slack]


def screenshot(page, path: Path) -> Path:
    """A full-page PNG of ``page`` at ``path`` (its folder created)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True)
    return Path(path)
