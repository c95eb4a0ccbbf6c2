"""The rendered views in a real browser: Playwright driving Debian's chromium.

* The explorer: starts JupyterLab on 127.0.0.1 (a random free port, a token, no browser of its
  own) in a temporary root holding a copy of ``notebooks/explore.ipynb``; opens it with
  Playwright (``executable_path`` = the system chromium, no browser download), runs all cells
  from the Lab's Run menu, waits for the widget, checks that every control has a tooltip (no
  ``null``), that the controls line up, that each disabled one says why, and that each enabled
  one changes the plot or the R@1 line. Screenshots: ``tests/artifacts/explorer.png`` (as it
  opens) and ``explorer_changed.png`` (after every control was changed).
* ``make lab`` as a user runs it (``tests/explorer_driver.py``): the URL it prints opens the
  explorer; a slider change replaces the belief image and the settings title; saving the
  notebook leaves ``git status --porcelain`` unchanged (the session lands in the ignored
  ``lab/``). Screenshot: ``tests/artifacts/explorer_make_lab.png``.
* A ``follow`` report of a replayed dataset video (``-25-1nbOki0``, simulated on demand): the
  source in the title and a simulated banner, the ground-truth table with per-step hit/miss, the
  belief views. Screenshot: ``tests/artifacts/follow_report.png``.
* Notebook 08 executed (papermill) and converted to HTML (nbconvert): its belief figure is an
  image, not the text ``<Figure size ...>``. Screenshot: ``tests/artifacts/08_qualitative.png``.
* The shared pages of notebooks 01, 07 and 08 (``scripts/run_notebooks.sh`` on small
  parameters; the runs that ``tests/test_notebooks.py`` checks, one per test session): no table
  wider than the page's column and no code or text line cut off (:mod:`browser_checks`).
  Screenshots: ``tests/artifacts/page_<stem>.png``.

Needs the ``playwright`` Python package and ``apt-get install -y chromium`` (both installed by
``make setup``); fails, naming the install command, when either is missing. Marked ``slow`` and
``browser`` (``make test-fast`` leaves it out).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from browser_checks import launch, open_page, screenshot, wide_code, wide_tables
from test_notebooks import check_shareable, rendered

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "tests" / "artifacts"
#: Seconds to wait for the server, the kernel's first run (imports, numba) and each change.
SERVER_TIMEOUT, RUN_TIMEOUT, CHANGE_TIMEOUT = 90, 240, 90


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, token: str, method: str = "GET") -> int:
    req = urllib.request.Request(url, method=method, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=5) as resp:
        return resp.status


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab server on 127.0.0.1 whose root holds a copy of explore.ipynb."""
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(ROOT / "notebooks" / "explore.ipynb", root / "explore.ipynb")
    settings = tmp_path / "settings"
    news = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    token, port = secrets.token_hex(16), _free_port()
    env = dict(os.environ)
    share = Path(sys.prefix) / "share" / "jupyter"  # the venv's kernelspec and labextensions
    env["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(share), env.get("JUPYTER_PATH")]))
    for name, sub in (
        ("JUPYTER_CONFIG_DIR", "config"),
        ("JUPYTER_DATA_DIR", "data"),
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("IPYTHONDIR", "ipython"),
    ):
        env[name] = str(tmp_path / sub)
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.open_browser=False",
        f"--LabApp.user_settings_dir={settings}",
        f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--ServerApp.allow_root=True")  # CI runs as root
    log = open(tmp_path / "jupyterlab.log", "wb")  # closed in the finally clause
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_TIMEOUT
        while True:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited ({proc.returncode}):\n" + _tail(tmp_path))
            try:
                if _get(f"{base}/api/status", token) == 200:
                    break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not start in {SERVER_TIMEOUT} s:\n" + _tail(tmp_path))
            time.sleep(0.5)
        yield base, token, tmp_path
    finally:
        try:
            _get(f"{base}/api/shutdown", token, method="POST")  # also stops the kernels
            proc.wait(timeout=30)
        except (urllib.error.URLError, OSError, subprocess.TimeoutExpired):
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()


def _tail(tmp_path: Path) -> str:
    path = tmp_path / "jupyterlab.log"
    return path.read_text(errors="replace")[-4000:] if path.exists() else ""


def _accept_dialogs(page, until: str, timeout: float) -> None:
    """Wait for the selector ``until``, accepting any Lab dialog (e.g. "Select Kernel")."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if page.locator(until).count():
            return
        accept = page.locator(".jp-Dialog .jp-Dialog-button.jp-mod-accept")
        if accept.count():
            accept.first.click()
        time.sleep(0.5)
    raise TimeoutError(f"{until!r} did not appear in {timeout} s")


def _browser(pw):
    from playwright import sync_api  # noqa: F401 - the import error names the package

    return launch(pw)


def _open_explorer(page, base: str, token: str, tmp_path: Path) -> None:
    """Open explore.ipynb in the Lab, run all cells, wait for the plot and the R@1 line."""
    from playwright import sync_api

    page.goto(f"{base}/lab/tree/explore.ipynb?token={token}")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=SERVER_TIMEOUT * 1000)
    _accept_dialogs(page, until="#jp-main-statusbar >> text=Idle", timeout=SERVER_TIMEOUT)
    # Run > Run All Cells (the Lab command runmenu:run-all).
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator("li.lm-Menu-item[data-command='runmenu:run-all']").click()
    try:
        _accept_dialogs(page, until="img.baglm-plot", timeout=RUN_TIMEOUT)
        page.wait_for_function(
            "() => { const r = document.querySelector('.baglm-recall');"
            " const i = document.querySelector('img.baglm-plot');"
            " return r && r.innerText.includes('R@1') && i && i.src; }",
            timeout=RUN_TIMEOUT * 1000,
        )
    except (sync_api.TimeoutError, TimeoutError):
        page.screenshot(path=str(ARTIFACTS / "explorer.png"))
        outputs = page.locator(".jp-OutputArea").all_inner_texts()
        pytest.fail(f"the explorer did not render; outputs: {outputs}\n" + _tail(tmp_path))


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
        handle = box.locator(".noUi-handle")
        handle.focus()
        key, times = ("ArrowRight", 1) if name in ("segment", "stay") else ("ArrowLeft", 10)
        for _ in range(times):
            handle.press(key)


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


def test_explorer_in_jupyterlab(lab):
    from playwright import sync_api

    base, token, tmp_path = lab
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as pw:
        browser = _browser(pw)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1300})
            _open_explorer(page, base, token, tmp_path)
            explorer = page.locator(".baglm-explorer")
            explorer.scroll_into_view_if_needed()
            explorer.screenshot(path=str(ARTIFACTS / "explorer.png"))  # as it opens
            tips = _check_tooltips_and_alignment(page)
            # D = simulated-llm:llama (soft): binarising is offered, its threshold once ticked
            assert not tips["binarise"].startswith("Disabled:")
            assert tips["threshold"].startswith("Disabled:") and "tick" in tips["threshold"]
            assert not page.locator(".baglm-binarise input[type=checkbox]").is_disabled()
            menu = page.locator(".baglm-control.baglm-deps select")
            assert menu.evaluate("s => s.options[s.selectedIndex].text").startswith(
                "simulated-llm:llama"
            )
            changed = []
            for name in CONTROLS:
                tip = page.locator(f".baglm-control.baglm-{name} .baglm-label").get_attribute(
                    "title"
                )
                if tip.startswith("Disabled:"):
                    continue
                before = _state(page)
                _change(page, name)
                page.wait_for_function(
                    "([r, s]) => document.querySelector('.baglm-recall').innerText !== r"
                    " || document.querySelector('img.baglm-plot').src !== s",
                    arg=list(before),
                    timeout=CHANGE_TIMEOUT * 1000,
                )
                time.sleep(1.0)  # let queued recomputes (key presses) settle
                assert _state(page) != before, name
                changed.append(name)
            assert set(changed) >= {
                "video",
                "find",
                "deps",
                "transition",
                "prior",
                "stepping",
                "view",
                "binarise",
                "signal",
                "segment",
                "dataset",
            }
            explorer.scroll_into_view_if_needed()
            explorer.screenshot(path=str(ARTIFACTS / "explorer_changed.png"))  # after them all
        finally:
            browser.close()
    assert (ARTIFACTS / "explorer.png").stat().st_size > 0


def test_follow_report_in_chromium(tmp_path):
    """The report of one HT-Step video: source, ground truth, per-step hit/miss, views."""
    from playwright import sync_api

    report = tmp_path / "report.html"
    cmd = [
        sys.executable,
        "-m",
        "baglm_nb",
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
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as pw:
        browser = _browser(pw)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
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
            browser.close()


def test_notebook_08_html_shows_its_figure(tmp_path):
    """Notebook 08 executed and converted to HTML carries its belief figure as an image."""
    import papermill
    from playwright import sync_api

    executed = tmp_path / "08_qualitative.ipynb"
    papermill.execute_notebook(
        str(ROOT / "notebooks" / "08_qualitative.ipynb"),
        str(executed),
        parameters={"videos": {"htstep": ["-25-1nbOki0"]}},
        cwd=str(tmp_path),
        kernel_name="python3",
        progress_bar=False,
    )
    cmd = [sys.executable, "-m", "nbconvert", "--to", "html", str(executed)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    page_path = executed.with_suffix(".html")
    text = page_path.read_text()
    assert "&lt;Figure size" not in text and "<Figure size" not in text
    assert (tmp_path / "qualitative_htstep_-25-1nbOki0.png").stat().st_size > 10_000
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as pw:
        browser = _browser(pw)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(page_path.resolve().as_uri())
            widths = page.eval_on_selector_all("img", "els => els.map(e => e.naturalWidth)")
            assert len(widths) == 1 and widths[0] >= 1000  # the belief figure, as PNG
            page.screenshot(path=str(ARTIFACTS / "08_qualitative.png"), full_page=True)
        finally:
            browser.close()


@pytest.mark.parametrize("stem", ["01_score_segments", "07_timing", "08_qualitative"])
def test_shared_pages_fit_the_column(stem, tmp_path_factory):
    """The page ``make figures`` shares: every table and code line fits a 1280-px window (the
    run that ``tests/test_notebooks.py`` checks, on its small parameters: ``rendered``)."""
    folder = rendered(stem, tmp_path_factory)
    check_shareable(folder, stem)
    with open_page(folder / f"{stem}.html") as page:
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


def test_make_lab_opens_the_explorer_updates_in_place_and_leaves_git_clean(tmp_path):
    """``make lab`` as a user runs it (its own ``lab/`` folder): the URL it prints opens the
    explorer; running it, moving the signal slider (the belief image is replaced, the settings
    title follows, the legend band stays) and saving the notebook (Ctrl+S, as autosave would)
    leave ``git status --porcelain`` as it was (clean on a clean checkout) and
    notebooks/explore.ipynb byte for byte unchanged; the session lands in lab/explore.ipynb.
    Screenshot: ``tests/artifacts/explorer_make_lab.png``."""
    from explorer_driver import make_lab, open_explorer, press_slider, timed_change
    from playwright import sync_api

    tracked = (ROOT / "notebooks" / "explore.ipynb").read_bytes()
    before = _git_status()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with make_lab(tmp_path) as (url, _log), sync_api.sync_playwright() as pw:
        assert "/lab/tree/explore.ipynb?token=" in url
        browser = _browser(pw)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1300})
            open_explorer(page, url)
            title = page.locator(".baglm-title").inner_text()
            legend = page.locator("img.baglm-plot-legend").get_attribute("src")
            assert "signal" in title and "simulated" in title
            ms = timed_change(page, press_slider("signal", "ArrowRight"), CHANGE_TIMEOUT)
            assert ms > 0
            page.wait_for_function(
                "t => document.querySelector('.baglm-title').innerText !== t",
                arg=title,
                timeout=CHANGE_TIMEOUT * 1000,
            )
            assert page.locator("img.baglm-plot-legend").get_attribute("src")
            assert legend  # the legend band was drawn (and may or may not have changed)
            page.locator(".baglm-explorer").screenshot(
                path=str(ARTIFACTS / "explorer_make_lab.png")
            )
            page.locator(".jp-NotebookPanel").first.click()
            page.keyboard.press("Control+s")
            page.wait_for_function("() => !document.querySelector('.jp-mod-dirty')", timeout=30_000)
        finally:
            browser.close()
    saved = json.loads((ROOT / "lab" / "explore.ipynb").read_text())
    assert any(c.get("outputs") for c in saved["cells"])  # the session was saved, in lab/
    assert (ROOT / "notebooks" / "explore.ipynb").read_bytes() == tracked
    assert _git_status() == before
