"""The explorer in a real browser: JupyterLab + Playwright driving Debian's chromium.

Starts JupyterLab on 127.0.0.1 (a random free port, a token, no browser of its own) in a
temporary root holding a copy of ``notebooks/explore.ipynb``; opens it with Playwright
(``executable_path`` = the system chromium, no browser download), runs all cells from the Lab's
Run menu, waits for the widget, moves the observation-quality slider with the keyboard, and
checks that the plot image and the R@1 text change. The screenshot is saved as
``tests/artifacts/explorer.png``.

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

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "tests" / "artifacts"
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


def test_explorer_in_jupyterlab(lab):
    from playwright import sync_api

    if not Path(CHROMIUM).exists():
        pytest.fail(f"no chromium at {CHROMIUM}: apt-get install -y chromium (or make setup)")
    base, token, tmp_path = lab
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1200})
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
            recall = page.locator(".baglm-recall")
            plot = page.locator("img.baglm-plot")
            before_text = recall.inner_text()
            before_src = plot.get_attribute("src")
            before_png = plot.screenshot()
            readout = page.locator(".baglm-signal .widget-readout")
            before_value = readout.inner_text()

            handle = page.locator(".baglm-signal .noUi-handle")
            handle.scroll_into_view_if_needed()
            handle.focus()
            for _ in range(20):  # 20 x 0.05: the signal falls from 1.25 to 0.25
                handle.press("ArrowLeft")
            page.wait_for_function(
                "(old) => document.querySelector('.baglm-recall').innerText !== old",
                arg=before_text,
                timeout=CHANGE_TIMEOUT * 1000,
            )
            page.wait_for_function(
                "(old) => document.querySelector('img.baglm-plot').src !== old",
                arg=before_src,
                timeout=CHANGE_TIMEOUT * 1000,
            )
            time.sleep(1.0)  # let the queued recomputes of the key presses settle
            page.locator(".baglm-explorer").scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "explorer.png"))
            after_text = recall.inner_text()
            assert readout.inner_text() != before_value
            assert float(readout.inner_text()) < float(before_value)
            assert after_text != before_text and "R@1" in after_text
            assert plot.get_attribute("src") != before_src
            assert plot.screenshot() != before_png
        finally:
            browser.close()
    assert (ARTIFACTS / "explorer.png").stat().st_size > 0
