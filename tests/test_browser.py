"""The rendered views in a real browser: Playwright driving Debian's chromium.

* The explorer: JupyterLab as ``make lab`` starts it (``tests/explorer_driver.py``: on
  127.0.0.1, a free port, a token, no browser of its own; one server for the file's two
  explorer tests, ``made_lab``); the URL it prints opened with Playwright (``executable_path``
  = the system chromium, no browser download) in one page for both tests (``lab_page``: the
  Lab's front end, most of chromium's work, loads once), where the outputs are cleared and all
  cells run from the Lab's menus, once for both tests (``explorer``: a new explorer in the
  notebook's kernel, whose construction draws every dataset's figure); the test waits for the
  widget, checks that every control has a tooltip (no ``null``), that the controls line up,
  that each disabled one says why, and that each enabled one changes the plot or the R@1 line.
  Each test holds in whatever state the other left the explorer.
  Screenshots: ``tests/artifacts/explorer.png`` (as it opens) and ``explorer_changed.png``
  (after every control was changed).
* ``make lab`` as a user runs it: the URL it prints opens the explorer, which runs; a slider change
  replaces the belief image and the settings title; saving the notebook leaves
  ``git status --porcelain`` unchanged (the session lands in the ignored ``lab/``).
  Screenshot: ``tests/artifacts/explorer_make_lab.png``.
* A ``follow`` report of a replayed dataset video (``-25-1nbOki0``, simulated on demand): the
  source in the title and a simulated banner, the ground-truth table with per-step hit/miss, the
  belief views. Screenshot: ``tests/artifacts/follow_report.png``.
* Notebook 08 executed (papermill; the run that ``tests/test_notebooks.py`` checks) and
  converted to HTML (nbconvert): its belief figure is an image, not the text
  ``<Figure size ...>``. Screenshot: ``tests/artifacts/08_qualitative.png``.
* The shared pages of notebooks 01, 07 and 08 (``scripts/run_notebooks.sh`` on small
  parameters; the runs that ``tests/test_notebooks.py`` checks, one per test session): no table
  wider than the page's column and no code or text line cut off (:mod:`browser_checks`).
  Screenshots: ``tests/artifacts/page_<stem>.png``.

One chromium serves the whole file (``browser``, module-scoped); each test opens its own
context (its own page, cookies and cache), except the two explorer tests' shared Lab page.

Needs the ``playwright`` Python package and ``apt-get install -y chromium`` (both installed by
``make setup``); fails, naming the install command, when either is missing. Marked ``slow`` and
``browser`` (``make test-fast`` leaves it out).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from browser_checks import launch, open_page, screenshot, wide_code, wide_tables
from test_notebooks import SMALL, check_shareable, rendered

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "tests" / "artifacts"
#: Seconds to wait for each change (the server and the first run: explorer_driver's limits).
CHANGE_TIMEOUT = 90


@pytest.fixture(scope="module")
def made_lab(tmp_path_factory):
    """``make lab`` as a user runs it (its own ``lab/`` folder), one server for this file's
    explorer tests: ``(explorer URL with token, make's log, git status and the tracked
    notebook's bytes from before ``make lab`` started)``. Each test opens the URL in its own
    browser; the kernel is the notebook's session, shared (its imports done once)."""
    from explorer_driver import make_lab

    tracked = (ROOT / "notebooks" / "explore.ipynb").read_bytes()
    before = _git_status()
    with make_lab(tmp_path_factory.mktemp("make_lab")) as (url, log):
        yield url, log, before, tracked


@pytest.fixture(scope="module")
def browser():
    """One headless chromium for this file's tests (a launch costs more CPU than a page)."""
    from playwright import sync_api  # the import error names the package

    with sync_api.sync_playwright() as pw:
        chromium = launch(pw)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def lab_page(made_lab, browser):
    """The URL ``make lab`` printed, open in one page for this file's two explorer tests: the
    Lab shows explore.ipynb and its kernel is idle. Loading JupyterLab's front end is most of
    chromium's work, so it is done once."""
    from explorer_driver import open_notebook

    url, log, _, _ = made_lab
    context = browser.new_context(viewport={"width": 1400, "height": 1300})
    try:
        page = context.new_page()
        try:
            open_notebook(page, url)
        except Exception as exc:  # the server's log says why
            pytest.fail(f"make lab's URL did not open the notebook: {exc}\n" + _tail(log))
        yield page
    finally:
        context.close()


@pytest.fixture(scope="module")
def explorer(made_lab, lab_page):
    """The explorer run from the open Lab page, once for this file's two explorer tests (its
    construction draws every dataset's figure: most of the kernel's work): outputs cleared and
    all cells run from the Lab's menus, the belief views and the R@1 line drawn. Screenshot:
    ``explorer.png``, as it opens. Yields the page."""
    from explorer_driver import run_explorer
    from playwright import sync_api

    _url, log, _, _ = made_lab
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = lab_page
    try:
        run_explorer(page)  # Edit > Clear Outputs of All Cells, Run > Run All Cells
    except (sync_api.TimeoutError, TimeoutError):
        page.screenshot(path=str(ARTIFACTS / "explorer.png"))
        outputs = page.locator(".jp-OutputArea").all_inner_texts()
        pytest.fail(f"the explorer did not render; outputs: {outputs}\n" + _tail(log))
    shown = page.locator(".baglm-explorer")
    shown.scroll_into_view_if_needed()
    shown.screenshot(path=str(ARTIFACTS / "explorer.png"))  # as it opens
    return page


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-4000:] if log.exists() else ""


#: The explorer's controls in the order the test changes them (the dataset last: it resets).
CONTROLS = (
    "video",
    "find",
    "deps",
    "transition",
    "prior",
    "stepping",
    "view",
    "binarise",
    "threshold",
    "signal",
    "segment",
    "stay",
    "dataset",
)


def _change(page, name: str) -> None:
    """Change one control the way a user would (menu, button, tick box or keyboard)."""
    box = page.locator(f".baglm-control.baglm-{name}")
    box.scroll_into_view_if_needed()
    if name == "find":  # type another video's uid: the menu narrows to it
        menu = page.locator(".baglm-control.baglm-video select")
        uids = menu.evaluate("s => Array.from(s.options).map(o => o.text.split(' ')[0])")
        current = menu.evaluate("s => s.selectedIndex")
        box.locator("input").fill(uids[1 if current == 0 else 0])
        box.locator("input").press("Enter")
    elif box.locator("select").count():
        select = box.locator("select")
        current = select.evaluate("s => s.selectedIndex")
        select.select_option(index=1 if current == 0 else 0)
    elif box.locator("button").count():
        box.locator("button:not(.mod-active)").first.click()
    elif box.locator("input[type=checkbox]").count():
        box.locator("input[type=checkbox]").click()
    else:
        # one key press, one recompute in the kernel: a step up for the short sliders, Home
        # (the slider's minimum: the threshold 0.5 -> 0.05, the signal to 0) for the others,
        # a change as large as ten steps down without ten queued recomputes (each key press
        # is a change the kernel redraws)
        key = "ArrowRight" if name in ("segment", "stay") else "Home"
        box.locator(".noUi-handle").press(key)


def _state(page) -> tuple[str, str]:
    return (
        page.locator(".baglm-recall").inner_text(),
        page.locator("img.baglm-plot").get_attribute("src"),
    )


def _check_tooltips_and_alignment(page) -> dict[str, str]:
    """Every control's label has a tooltip (never "null"); labels and inputs line up."""
    tips = {}
    for name in CONTROLS:
        label = page.locator(f".baglm-control.baglm-{name} .baglm-label")
        tips[name] = label.get_attribute("title") or ""
        assert len(tips[name]) > 20 and "null" not in tips[name], (name, tips[name])
    titles = page.eval_on_selector_all(
        ".baglm-explorer [title]", "els => els.map(e => [e.className, e.title])"
    )
    assert titles and not [c for c, t in titles if t == "null"], titles
    lefts: dict[float, set[float]] = {}
    for name in CONTROLS:
        box = page.locator(f".baglm-control.baglm-{name}").bounding_box()
        label = page.locator(f".baglm-control.baglm-{name} .baglm-label").bounding_box()
        widget = page.locator(f".baglm-control.baglm-{name} > :nth-child(2)").bounding_box()
        assert abs(label["x"] - box["x"]) < 6  # each label starts its cell
        lefts.setdefault(round(box["x"]), set()).add((round(label["x"]), round(widget["x"])))
    assert len(lefts) == 2, lefts  # two columns
    for xs in lefts.values():  # per column, labels and inputs start at one x (widget margins)
        for side in zip(*xs, strict=True):
            assert max(side) - min(side) <= 3, lefts
    return tips


def test_explorer_in_jupyterlab(explorer):
    """The explorer, opened from the URL ``make lab`` printed and run (``explorer``):
    tooltips, alignment, every enabled control changes the plot or the R@1 line. Screenshots:
    ``explorer.png`` (as it opens) and ``explorer_changed.png`` (after every control was
    changed)."""
    from explorer_driver import POLL_MS, settled

    page = explorer
    tips = _check_tooltips_and_alignment(page)
    # D = simulated-llm:llama (soft): binarising is offered, its threshold once ticked
    assert not tips["binarise"].startswith("Disabled:")
    assert tips["threshold"].startswith("Disabled:") and "tick" in tips["threshold"]
    assert not page.locator(".baglm-binarise input[type=checkbox]").is_disabled()
    menu = page.locator(".baglm-control.baglm-deps select")
    assert menu.evaluate("s => s.options[s.selectedIndex].text").startswith("simulated-llm:llama")
    changed = []
    for name in CONTROLS:
        tip = page.locator(f".baglm-control.baglm-{name} .baglm-label").get_attribute("title")
        if tip.startswith("Disabled:"):
            continue
        before = _state(page)
        _change(page, name)
        page.wait_for_function(
            "([r, s]) => document.querySelector('.baglm-recall').innerText !== r"
            " || document.querySelector('img.baglm-plot').src !== s",
            arg=list(before),
            polling=POLL_MS,
            timeout=CHANGE_TIMEOUT * 1000,
        )
        settled(page, CHANGE_TIMEOUT)  # queued recomputes (key presses) done
        assert _state(page) != before, name
        changed.append(name)
    # every control changed the view, except the threshold and stay, which may be disabled
    # (skipped above)
    assert set(changed) >= set(CONTROLS) - {"threshold", "stay"}
    shown = page.locator(".baglm-explorer")
    shown.scroll_into_view_if_needed()
    shown.screenshot(path=str(ARTIFACTS / "explorer_changed.png"))  # after them all
    assert (ARTIFACTS / "explorer.png").stat().st_size > 0


def test_follow_report_in_chromium(tmp_path, capsys, monkeypatch, browser):
    """The report of one HT-Step video: source, ground truth, per-step hit/miss, views. The
    verb runs in this process (the report is what is checked, not the process boundary)."""
    from baglm_nb.apps.cli.main import main

    report = tmp_path / "report.html"
    argv = [
        "follow",
        "--replay",
        "simulated",
        "--dataset",
        "htstep",
        "--html",
        str(report),
        "--",
        "-25-1nbOki0",
    ]
    for name, value in (
        ("TRANSFORMERS_VERBOSITY", "error"),
        ("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1"),
    ):
        monkeypatch.setenv(name, value)  # what the verb sets, undone after the test
    assert main(argv) == 0, capsys.readouterr().err[-2000:]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(report.resolve().as_uri())
        assert "simulated observations, not a real model" in page.title()
        assert "simulated" in page.locator("h1").inner_text()
        banner = page.locator("#source.simulated")
        assert banner.is_visible() and "SIMULATED" in banner.inner_text()
        # what the run used, under the banner: the notebooks' D and the settings
        settings = page.locator("#settings").inner_text()
        for field in ("observations", "D", "threshold", "patience", "smoothing lag"):
            assert field in settings
        assert "simulated-llm:llama" in settings and "1 segment (2 s)" in settings  # lag
        quality = page.locator("#quality").inner_text()
        assert "nan" not in quality.lower().split()
        rows = page.locator("#truth tr")
        assert rows.count() == 11  # header + K = 10 steps
        annotated = page.locator("#truth tr", has_not_text="not annotated")
        assert annotated.count() - 1 == 6  # the six annotated steps
        outcomes = page.locator("#truth td.hit, #truth td.miss")
        assert outcomes.count() >= 12  # announced + R@1, each annotated step
        assert "Ground truth: 6 annotated steps" in page.locator("#summary").inner_text()
        width = page.eval_on_selector("#beliefs", "e => e.naturalWidth")
        assert width >= 1000
        page.screenshot(path=str(ARTIFACTS / "follow_report.png"), full_page=True)
    finally:
        context.close()


@pytest.mark.parametrize("stem", ["08_qualitative"])  # its run's group (conftest.py)
def test_notebook_08_html_shows_its_figure(stem, tmp_path, tmp_path_factory, browser):
    """Notebook 08 executed (papermill: the run that ``tests/test_notebooks.py`` checks, on its
    small parameters, ``rendered``) and converted to HTML by nbconvert (``--to html``'s
    exporter) carries its belief figure as an image, one per video."""
    from nbconvert import HTMLExporter

    folder = rendered(stem, tmp_path_factory)
    videos = [(d, uid) for d, uids in SMALL[stem][0]["videos"].items() for uid in uids]
    text, _ = HTMLExporter().from_filename(str(folder / f"{stem}.ipynb"))
    page_path = tmp_path / f"{stem}.html"
    page_path.write_text(text)
    assert "&lt;Figure size" not in text and "<Figure size" not in text
    for dataset, uid in videos:
        assert (folder / f"qualitative_{dataset}_{uid}.png").stat().st_size > 10_000
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(page_path.resolve().as_uri())
        widths = page.eval_on_selector_all("img", "els => els.map(e => e.naturalWidth)")
        assert len(widths) == len(videos) and min(widths) >= 1000  # belief figures, PNG
        page.screenshot(path=str(ARTIFACTS / "08_qualitative.png"), full_page=True)
    finally:
        context.close()


@pytest.mark.parametrize("stem", ["01_score_segments", "07_timing", "08_qualitative"])
def test_shared_pages_fit_the_column(stem, tmp_path_factory, browser):
    """The page ``make figures`` shares: every table and code line fits a 1280-px window (the
    run that ``tests/test_notebooks.py`` checks, on its small parameters: ``rendered``)."""
    folder = rendered(stem, tmp_path_factory)
    check_shareable(folder, stem)
    with open_page(folder / f"{stem}.html", browser) as page:
        shot = screenshot(page, ARTIFACTS / f"page_{stem}.png")
        tables = page.eval_on_selector_all("table", "els => els.length")
        assert tables >= 1, stem
        assert wide_tables(page) == []
        assert wide_code(page) == []
        if stem == "07_timing":  # the timing figure, drawn
            widths = page.eval_on_selector_all("img", "els => els.map(e => e.naturalWidth)")
            assert len(widths) == 1 and widths[0] >= 800
    assert shot.stat().st_size > 10_000


def _git_status() -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=all"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _saves_explore(response) -> bool:
    """The Lab's save of the session notebook: a PUT of ``explore.ipynb`` to the contents API."""
    return response.request.method == "PUT" and "/api/contents/explore.ipynb" in response.url


def test_make_lab_opens_the_explorer_updates_in_place_and_leaves_git_clean(made_lab, explorer):
    """``make lab`` as a user runs it (its own ``lab/`` folder): the URL it prints opens the
    explorer; running it (``explorer``), moving the signal slider (the belief image is
    replaced, the settings title follows, the legend band stays) and saving the notebook
    (Ctrl+S, as autosave would) leave ``git status --porcelain`` as it was (clean on a clean
    checkout) and notebooks/explore.ipynb byte for byte unchanged; the session lands in
    lab/explore.ipynb.
    Screenshot: ``tests/artifacts/explorer_make_lab.png``."""
    from explorer_driver import DRAWN_JS, POLL_MS, press_slider, timed_change

    url, _log, before, tracked = made_lab  # git status and the notebook before make lab ran
    assert "/lab/tree/explore.ipynb?token=" in url  # lab_page opened it: the notebook showed
    page = explorer  # all cells ran: an explorer, drawn, its R@1 line
    assert page.evaluate(f"() => {DRAWN_JS}")
    title = page.locator(".baglm-title").inner_text()
    legend = page.locator("img.baglm-plot-legend").get_attribute("src")
    assert "signal" in title and "simulated" in title
    ms = timed_change(page, press_slider("signal", "ArrowRight"), CHANGE_TIMEOUT)
    assert ms > 0
    page.wait_for_function(
        "t => document.querySelector('.baglm-title').innerText !== t",
        arg=title,
        polling=POLL_MS,
        timeout=CHANGE_TIMEOUT * 1000,
    )
    assert page.locator("img.baglm-plot-legend").get_attribute("src")
    assert legend  # the legend band was drawn (and may or may not have changed)
    page.locator(".baglm-explorer").screenshot(path=str(ARTIFACTS / "explorer_make_lab.png"))
    page.locator(".jp-NotebookPanel").first.click()
    saving = time.time()
    # the save's request answered (the notebook may show no unsaved change before Ctrl+S, so
    # "not dirty" alone can hold before the file is written: a loaded machine's race)
    with page.expect_response(_saves_explore, timeout=30_000):
        page.keyboard.press("Control+s")
    page.wait_for_function("() => !document.querySelector('.jp-mod-dirty')", timeout=30_000)
    session = ROOT / "lab" / "explore.ipynb"
    assert session.stat().st_mtime >= saving - 1  # this save wrote it (1 s: file times)
    saved = json.loads(session.read_text())
    assert any(c.get("outputs") for c in saved["cells"])  # the session was saved, in lab/
    assert (ROOT / "notebooks" / "explore.ipynb").read_bytes() == tracked
    assert _git_status() == before
