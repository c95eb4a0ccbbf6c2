"""The explorer as a user gets it: ``make lab`` started, its URL opened in headless chromium.

Shared by the browser tests and ``benchmarks/explorer_latency.py``:

* :func:`make_lab`: runs ``make lab`` (the repository's own target) on a free 127.0.0.1 port with
  a known token, in its own process group, Jupyter's config, data and runtime folders in a
  temporary folder (no user settings, no news pop-up, no language-server scan; ``make lab``
  itself fetches no news and queries no PyPI: :mod:`baglm_nb.apps.lab`); yields the URL
  ``make lab`` printed for the explorer and the log; stops the server (and its kernels) on exit.
* :func:`open_explorer`: opens that URL (:func:`open_notebook`), clears the outputs and runs
  all cells from the Lab's menus (:func:`run_explorer`, :func:`run_all`, accepting any kernel
  dialog), and waits for the belief views and the R@1 line.
* :func:`timed_change`: the milliseconds from a user's input (key, click or menu choice) to the
  updated belief image painted: the ``img.baglm-plot`` element gets a new ``src``, the image is
  decoded, and two animation frames pass (the second runs after the frame that shows it).

The waits poll inside the page (``wait_for_function`` at :data:`POLL_MS`), not from Python: a
poll from Python is a round trip through Playwright's driver each time, and the belief image's
``src`` is a data URI of hundreds of kilobytes.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Seconds to wait for the server, and for the kernel's first run (imports, numba, figures).
SERVER_TIMEOUT_S, RUN_TIMEOUT_S = 120, 300
#: Milliseconds between two checks of a wait, in the page.
POLL_MS = 100
#: The button that accepts a Lab dialog (e.g. "Select Kernel").
ACCEPT = ".jp-Dialog .jp-Dialog-button.jp-mod-accept"
#: JavaScript conditions waited for: the kernel idle (the status bar), the explorer drawn.
IDLE_JS = "(document.querySelector('#jp-main-statusbar')?.textContent || '').includes('Idle')"
#: True once the views (R@1 line, belief image) and the kernel's state were the same for ``n``
#: checks in a row (the state kept in ``window.__settle``, which :func:`settled` resets).
SETTLED_JS = (
    "n => { const s = window.__settle, r = document.querySelector('.baglm-recall');"
    " const i = document.querySelector('img.baglm-plot');"
    " const now = [r ? r.innerText : null, i ? i.getAttribute('src') : null, " + IDLE_JS + "];"
    " const same = s.last !== null && now[2] && now.every((x, k) => x === s.last[k]);"
    " s.same = same ? s.same + 1 : 0; s.last = now; return s.same >= n; }"
)
DRAWN_JS = (
    "(() => { const r = document.querySelector('.baglm-recall');"
    " const i = document.querySelector('img.baglm-plot');"
    " return !!(r && r.innerText.includes('R@1') && i && i.src && i.complete); })()"
)

#: Installed once per page: the time of the first input event after :data:`ARM_JS`.
LISTEN_JS = """() => {
  if (window.__listening) return;
  window.__listening = true;
  const start = () => {
    if (window.__armed && window.__t0 === null) window.__t0 = performance.now();
  };
  for (const type of ['keydown', 'mousedown', 'change', 'input']) {
    document.addEventListener(type, start, true);
  }
}"""
#: Before each change: a promise of the time the next new belief image is on screen.
ARM_JS = """() => {
  const img = document.querySelector('img.baglm-plot');
  window.__t0 = null;
  window.__armed = true;
  window.__shown = new Promise(resolve => {
    const seen = new MutationObserver(() => {
      seen.disconnect();
      const painted = () => requestAnimationFrame(() => requestAnimationFrame(
        () => resolve(performance.now())));
      img.decode().then(painted, painted);
    });
    seen.observe(img, {attributes: true, attributeFilter: ['src']});
  });
}"""
WAIT_JS = """async (timeout) => {
  const late = new Promise(resolve => setTimeout(() => resolve(null), timeout));
  const shown = await Promise.race([window.__shown, late]);
  window.__armed = false;
  return shown === null || window.__t0 === null ? null : shown - window.__t0;
}"""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(base: str, token: str) -> bool:
    request = urllib.request.Request(f"{base}/api", headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return "version" in json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError):
        return False


@contextmanager
def make_lab(tmp: Path, *, lab_dir: str | None = None, repo: Path = ROOT):
    """``make lab`` in ``repo`` on a free port; yields ``(explorer URL with token, log path)``.

    ``lab_dir`` is passed as ``LAB_DIR`` (default: the Makefile's, ``lab/``).
    """
    port, token = free_port(), os.urandom(16).hex()
    env = dict(os.environ)
    for name, sub in (
        ("JUPYTER_CONFIG_DIR", "config"),
        ("JUPYTER_DATA_DIR", "data"),
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("IPYTHONDIR", "ipython"),
    ):
        env[name] = str(tmp / sub)
    settings = tmp / "settings"
    news = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True, exist_ok=True)
    news.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    # no scan for language servers: not the explorer; a read-only extension manager is also
    # make lab's default, given again here as a user may (the user's option replaces it:
    # JupyterLab refuses a setting given twice)
    args = (
        f"--IdentityProvider.token={token} --LabApp.user_settings_dir={settings} "
        f"--LabApp.workspaces_dir={tmp / 'workspaces'} --LanguageServerManager.autodetect=False "
        "--LabApp.extension_manager=readonly"
    )
    command = ["make", "--no-print-directory", "-C", str(repo), "lab", f"LAB_PORT={port}"]
    command.append(f"LAB_ARGS={args}")
    if lab_dir is not None:
        command.append(f"LAB_DIR={lab_dir}")
    log_path = tmp / "make_lab.log"
    log = open(log_path, "wb")  # closed in the finally clause
    proc = subprocess.Popen(
        command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_TIMEOUT_S
        while not _answers(base, token):
            if proc.poll() is not None or time.monotonic() > deadline:
                text = log_path.read_text(errors="replace")[-4000:]
                raise RuntimeError(f"make lab did not answer on {base}:\n{text}")
            time.sleep(0.2)
        text = log_path.read_text(errors="replace")
        printed = re.search(
            r"the explorer is (http://127\.0\.0\.1:\d+/lab/tree/explore\.ipynb)", text
        )
        if printed is None or printed.group(1) != f"{base}/lab/tree/explore.ipynb":
            raise RuntimeError(f"make lab printed no explorer URL for {base}:\n{text[-4000:]}")
        yield f"{printed.group(1)}?token={token}", log_path
    finally:
        if proc.poll() is None:
            request = urllib.request.Request(
                f"{base}/api/shutdown", method="POST", headers={"Authorization": f"token {token}"}
            )
            try:
                urllib.request.urlopen(request, timeout=10).close()  # also stops the kernels
                proc.wait(timeout=30)
            except (urllib.error.URLError, OSError, subprocess.TimeoutExpired):
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        log.close()


def accept_dialogs(page, until_js: str, timeout_s: float) -> None:
    """Wait until the JavaScript condition ``until_js`` holds, accepting any Lab dialog on the
    way (e.g. "Select Kernel"), clicked as a user would."""
    deadline = time.monotonic() + timeout_s
    check = f"() => ({until_js}) ? 'done' : (document.querySelector('{ACCEPT}') ? 'dialog' : '')"
    while True:
        left_ms = (deadline - time.monotonic()) * 1000
        if left_ms <= 0:
            raise TimeoutError(f"{until_js!r} did not hold in {timeout_s} s")
        found = page.wait_for_function(check, polling=POLL_MS, timeout=left_ms).json_value()
        if found == "done":
            return
        page.locator(ACCEPT).first.click()


def settled(page, timeout_s: float, polls: int = 3) -> None:
    """Wait until the kernel is idle and the explorer's views (R@1 line, belief image) stay as
    they are for ``polls`` checks in a row: the recomputes that queued inputs started are done,
    so the next change starts afresh."""
    page.evaluate("() => { window.__settle = {last: null, same: 0}; }")
    page.wait_for_function(
        SETTLED_JS,
        arg=polls,
        polling=POLL_MS,
        timeout=timeout_s * 1000,
    )


def _menu(page, menu: str, command: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=menu).first.click()
    page.locator(f"li.lm-Menu-item[data-command='{command}']").click()


def run_all(page) -> None:
    """Edit > Clear Outputs of All Cells, then Run > Run All Cells: the views waited for are
    the new run's, never those of a saved session whose kernel still runs (``make lab`` keeps
    one kernel per notebook)."""
    _menu(page, "Edit", "editmenu:clear-all")
    page.wait_for_function("() => !document.querySelector('.baglm-explorer')", polling=POLL_MS)
    _menu(page, "Run", "runmenu:run-all")


def open_notebook(page, url: str) -> None:
    """Open the explorer's URL: the Lab shows the notebook and its kernel is idle."""
    page.goto(url)
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=SERVER_TIMEOUT_S * 1000)
    accept_dialogs(page, IDLE_JS, SERVER_TIMEOUT_S)


def open_explorer(page, url: str) -> None:
    """Open the explorer's URL, run all cells, wait for the views and the R@1 line."""
    open_notebook(page, url)
    run_explorer(page)


def run_explorer(page) -> None:
    """In the open notebook: run all cells (a new explorer), wait for the views and R@1."""
    run_all(page)
    accept_dialogs(page, DRAWN_JS, RUN_TIMEOUT_S)
    page.evaluate(LISTEN_JS)


def timed_change(page, act, timeout_s: float = 60.0) -> float:
    """Milliseconds from the input ``act(page)`` makes to the new belief image painted."""
    page.evaluate(ARM_JS)
    act(page)
    ms = page.evaluate(WAIT_JS, timeout_s * 1000)
    if ms is None:
        raise TimeoutError(f"the belief image did not change within {timeout_s} s")
    return float(ms)


def press_slider(name: str, key: str):
    """An ``act`` for :func:`timed_change`: one arrow key on the slider of control ``name``."""

    def act(page) -> None:
        page.locator(f".baglm-control.baglm-{name} .noUi-handle").press(key)

    return act


def choose(name: str, label: str):
    """An ``act``: pick the entry ``label`` in the menu of control ``name``."""

    def act(page) -> None:
        page.locator(f".baglm-control.baglm-{name} select").select_option(label=label)

    return act
