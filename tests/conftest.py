"""Shared pytest fixtures, and the rule that a test never skips.

``make setup`` installs everything the suite needs (ffmpeg, chromium, the server and ray
extras), so a test that cannot run because something is missing **fails**, with the reason it
gives (the install command) and a pointer to ``make setup``. To run a subset, deselect by marker
instead (``make test-fast``: ``-m "not slow and not browser and not server and not ray"``);
deselected tests are not skipped.
"""

from __future__ import annotations

import atexit
import gc
import os

if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    # Parallel workers (make test), more workers than cores; set before numpy or anything else
    # loads OpenBLAS or OpenMP (each reads its variable once, when it loads), and inherited by
    # the processes the workers start (results are unchanged).
    # - One BLAS thread each (OMP_NUM_THREADS below comes too late for this process): two
    #   OpenBLAS threads per worker spend CPU waiting on each other on 2 cores.
    # - A thread that waits for work sleeps instead of spinning: numba's parallel kernels (the
    #   frame resize of every scoring run) use the OpenMP layer, whose idle threads otherwise
    #   spin after each call and take the core from the other workers.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest  # noqa: E402

from baglm_nb.apps.render import skip_iri_grammar  # noqa: E402

SETUP_HINT = "`make setup` installs everything the test suite needs"

# Figures are drawn headless in every test (baglm_nb sets no backend at import); the notebooks'
# runner sets its own (scripts/run_notebooks.sh).
os.environ.setdefault("MPLBACKEND", "Agg")

#: The environment the session started with (what the fork servers import in, whichever test
#: first asks for one).
SESSION_ENV = dict(os.environ)

# Test modules import papermill and nbformat: like the notebooks' runner, without the IRI grammar
# that jsonschema would compile at import (no notebook schema uses it).
skip_iri_grammar()

if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    # Parallel workers (make test): one compute thread each, and in the processes they start,
    # so that the workers do not fight over the cores. (torch only here: a pytest run in one
    # process, e.g. the quick start's `make test` on one file, does not import it up front.)
    import torch

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def cli_forks():
    """Fork servers of ``python -m baglm_nb`` processes (:class:`cli_forks.ForkServers`), one
    per set of imports and worker, started when a test first asks, ended with the session."""
    from cli_forks import ForkServers

    servers = ForkServers(SESSION_ENV)
    yield servers
    servers.close()


# --------------------------------------------------------------------------------------------
# The heap that lives the whole session, kept out of the garbage collector's passes


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Everything imported and built by the time the tests are collected (torch, pandas, the
    test modules, the collected items) lives until the process ends, yet each full garbage
    collection walks all of it again: those during the tests, pytest's own at the end (it
    collects to report unraisable exceptions) and the interpreter's at exit. Frozen, these
    objects are left out of those passes; what the tests create is collected as before."""
    gc.freeze()


def _freeze_at_exit() -> None:
    """At exit, after pytest has reported and sent every result: the interpreter's own
    collections leave the heap alone. The exit handlers (atexit, weakref finalizers) still
    run, as do the __del__ of objects freed by reference count; objects in reference cycles
    are left to the operating system (as ``baglm_nb.apps.notebook_run`` does). Objects made
    after a freeze are collected as usual, so the order of exit handlers does not matter."""
    gc.freeze()


atexit.register(_freeze_at_exit)


@pytest.fixture(scope="module")
def one_torch_thread():
    """Small tensors and tiny models run faster on one thread, above all on a busy machine."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


# --------------------------------------------------------------------------------------------
# make test: which worker runs what, and in which order (pytest-xdist, --dist loadfile)

#: The tests that look at one notebook's run, each parametrized by the notebook's stem: they go
#: to that notebook's group rather than their file's, so that one worker runs the notebook once
#: for all of them (``test_notebooks.rendered``), while the other worker runs other notebooks.
NOTEBOOK_RUN_TESTS = (
    "tests/test_notebooks.py::test_notebook_runs_on_small_parameters",
    "tests/test_page_widths.py::test_no_table_is_wider_than_the_page_column",
    "tests/test_browser.py::test_shared_pages_fit_the_column",
    "tests/test_browser.py::test_notebook_08_html_shows_its_figure",
)

#: The groups that take longest, started first so that the workers end together; the
#: other groups follow, those with more tests first. Order only: no test depends on it, and a
#: group missing here only starts later. From ``--durations`` (the notebooks: per group, one
#: process, load average 15) and the longest tests named in the suite's timing issue.
LONGEST_FIRST: tuple[str, ...] = (
    "tests/test_ray.py",
    "tests/test_browser.py",
    "tests/test_quickstart.py",
    "tests/test_live.py",
    "notebook 05_analysis",
    "tests/test_served_protocol.py",
    "tests/test_served.py",
    "tests/test_dependencies.py",
    "tests/test_deps_server.py",
    "tests/test_scoring.py",
    "notebook 04_ablations",
    "notebook 07_timing",
    "tests/test_twin_fit.py",
    "notebook 01_score_segments",
    "notebook 09_assistance",
    "notebook 08_qualitative",
    "tests/test_follow.py",
    "tests/test_cli_untried.py",
    "notebook 03_main_results",
    "notebook 06_localization",
    "notebook 02_dependencies",
    "notebook 00_dataset_statistics",
)


def xdist_group(nodeid: str) -> str:
    """The group of a test (``make test``: its tests run on one worker, one after the other):
    ``notebook <stem>`` for the tests of :data:`NOTEBOOK_RUN_TESTS`, else the test's file, so
    that a file's module fixtures (models, servers, clusters) are built once."""
    test, _, parameter = nodeid.partition("[")
    if test in NOTEBOOK_RUN_TESTS:
        return f"notebook {parameter.removesuffix(']')}"
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # a hook of pytest-xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``--dist loadfile`` (``make test``) by :func:`xdist_group` rather than by file alone.

    (pytest-xdist's own ``--dist loadgroup`` marks a group in the test's id, which the pytest
    of this project no longer lets a plugin change.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_group(nodeid)

    return GroupScheduling(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests in their groups' order: :data:`LONGEST_FIRST`, then by number of tests (each
    group's tests in their own order). ``make test`` keeps it (``--no-loadscope-reorder``)."""
    groups: dict[str, list[pytest.Item]] = {}
    for item in items:
        groups.setdefault(xdist_group(item.nodeid), []).append(item)
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    order = sorted(groups, key=lambda g: (rank.get(g, len(rank)), -len(groups[g])))
    items[:] = [item for name in order for item in groups[name]]


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
