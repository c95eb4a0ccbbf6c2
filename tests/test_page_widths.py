"""Notebooks 02-06 as a reader opens them: no table wider than the page's column (chromium).

Each notebook runs with small limits but its default datasets and sources (the columns of a
table come from those, not from the number of videos: ``test_notebooks.SMALL``), is rendered to
HTML as ``make figures`` renders it, and is opened in headless chromium (Debian's, driven by
Playwright, as in ``tests/test_browser.py``) at a 1280-px-wide window; every ``<table>`` must
fit the column it sits in. A screenshot of each page is kept under ``tests/artifacts/`` to look
at. The run is the one ``tests/test_notebooks.py`` checks (:func:`test_notebooks.rendered`: one
run per notebook and test session), and this test goes to the same worker (its xdist group).
One chromium per worker (:func:`chromium`, session-scoped: each stem's test runs in its notebook's
group, between other files' tests, where a module-scoped browser would start again for each
stem) opens every page, each in a context of its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_checks import TABLES_JS, launch, open_page, screenshot
from test_notebooks import rendered

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "tests" / "artifacts"

#: The notebooks whose pages are measured here.
STEMS = ["02_dependencies", "03_main_results", "04_ablations", "05_analysis", "06_localization"]


@pytest.fixture(scope="session")
def chromium():
    """Headless chromium (Playwright), one for this worker's page-width tests, started when
    the first of them asks and closed at the end of the session."""
    from playwright import sync_api

    with sync_api.sync_playwright() as pw:
        browser = launch(pw)
        try:
            yield browser
        finally:
            browser.close()


def measure_tables(html: Path, shot: Path, browser) -> list[dict]:
    """Every table of ``html`` as chromium lays it out; a full-page screenshot is saved."""
    with open_page(html, browser) as page:
        tables = page.eval_on_selector_all("table", TABLES_JS)
        screenshot(page, shot)
    return tables


@pytest.mark.parametrize("stem", STEMS)  # tests/conftest.py: xdist_group
def test_no_table_is_wider_than_the_page_column(stem, tmp_path_factory, chromium):
    folder = rendered(stem, tmp_path_factory)
    tables = measure_tables(folder / f"{stem}.html", ARTIFACTS / f"page_{stem}.png", chromium)
    assert tables, f"{stem}: no table on the page"
    assert all(t["column"] > 600 for t in tables), tables  # measured in the page's column
    wide = [t for t in tables if t["width"] > t["column"] + 1]
    assert not wide, f"{stem}: tables wider than the column: {wide}"
