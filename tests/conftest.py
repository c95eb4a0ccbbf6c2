"""Shared pytest fixtures, and the rule that a test never skips.

``make setup`` installs everything the suite needs (ffmpeg, chromium, the server and ray
extras), so a test that cannot run because something is missing **fails**, with the reason it
gives (the install command) and a pointer to ``make setup``. To run a subset, deselect by marker
instead (``make test-fast``: ``-m "not slow and not browser and not server and not ray"``);
deselected tests are not skipped.
"""

from __future__ import annotations

import os

import pytest
import torch

SETUP_HINT = "`make setup` installs everything the test suite needs"

# Figures are drawn headless in every test (baglm_nb sets no backend at import); the notebooks'
# runner sets its own (scripts/run_notebooks.sh).
os.environ.setdefault("MPLBACKEND", "Agg")

if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    # Parallel workers (make test): one compute thread each, and in the processes they start,
    # so that the workers do not fight over the cores.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def one_torch_thread():
    """Small tensors and tiny models run faster on one thread, above all on a busy machine."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _skip_reason(longrepr) -> str:
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Turn a skip into a failure that says what is missing and how to install it."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = (
            f"not skipped, failed: {_skip_reason(report.longrepr)} ({SETUP_HINT}; "
            "to leave such tests out, deselect them with -m, e.g. `make test-fast`)"
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """A module that skips itself at import (``importorskip``) fails the same way."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped:
        report.outcome = "failed"
        report.longrepr = f"not skipped, failed: {_skip_reason(report.longrepr)} ({SETUP_HINT})"
