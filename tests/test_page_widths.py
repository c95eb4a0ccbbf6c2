"""Notebooks 02-06 as a reader opens them: no table wider than the page's column (chromium).

Each notebook runs with small limits but its default datasets and sources (the columns of a
table come from those, not from the number of videos: ``test_notebooks.SMALL``), is rendered to
HTML as ``make figures`` renders it, and is opened in headless chromium (Debian's, driven by
Playwright, as in ``tests/test_browser.py``) at a 1280-px-wide window; every ``<table>`` must
fit the column it sits in. A screenshot of each page is kept under ``tests/artifacts/`` to look
at. The run is the one ``tests/test_notebooks.py`` checks (:func:`test_notebooks.rendered`: one
run per notebook and test session), and this test goes to the same worker (its xdist group).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_checks import TABLES_JS, VIEWPORT, launch
from test_notebooks import rendered

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "tests" / "artifacts"

#: The notebooks whose pages are measured here.
STEMS = ["02_dependencies", "03_main_results", "04_ablations", "05_analysis", "06_localization"]


def measure_tables(html: Path, screenshot: Path) -> list[dict]:
    """Every table of ``html`` as chromium lays it out; a full-page screenshot is saved."""
    from playwright import sync_api

    with sync_api.sync_playwright() as pw:
        browser = launch(pw)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(html.resolve().as_uri())
            page.wait_for_load_state("load")
            tables = page.eval_on_selector_all("table", TABLES_JS)
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    return tables


@pytest.mark.parametrize("stem", STEMS)  # tests/conftest.py: xdist_group
def test_no_table_is_wider_than_the_page_column(stem, tmp_path_factory):
    folder = rendered(stem, tmp_path_factory)
    tables = measure_tables(folder / f"{stem}.html", ARTIFACTS / f"page_{stem}.png")
    assert tables, f"{stem}: no table on the page"
    assert all(t["column"] > 600 for t in tables), tables  # measured in the page's column
    wide = [t for t in tables if t["width"] > t["column"] + 1]
    assert not wide, f"{stem}: tables wider than the column: {wide}"
