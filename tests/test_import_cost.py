"""What a command-line run imports: the verbs that need no model, plot or notebook load none of
the libraries that take seconds to import (torch, transformers, torchcodec, scipy.signal,
scipy.stats, matplotlib, nbformat, ray), and neither do the bad-input paths of the verbs that do
need one, which refuse the input before anything heavy loads. Each case is a process of its
own that runs the verb and reports ``sys.modules``: a child forked from one fresh Python per
module (:func:`probe`), so that each case pays for its verb and not for starting Python and its
common libraries again. The checks are by module name, never by seconds
(``benchmarks/cli_start.py`` times the verbs). The ``baglm-nb`` console script ends like
``python -m baglm_nb``, without the interpreter's teardown.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import tomllib

import pytest
from cli_runs import ROOT, one_error_line, run_cli

#: Libraries that take seconds to import and that a verb needing no model, plot or notebook
#: does not use (a name covers its submodules).
HEAVY = (
    "torch",
    "transformers",
    "torchcodec",
    "scipy.signal",
    "scipy.stats",
    "matplotlib",
    "nbformat",
    "ray",
)

#: Libraries that every verb here loads, none of them heavy (the fork server imports them, and
#: sets up numba's compiler as a process's first kernel does, once: see :data:`FORK_SERVER`).
COMMON = ("numpy", "pandas", "pyarrow.parquet", "numba")

#: The verb the fork server runs once before forking (the filter on one simulated video: the
#: work every cheap verb below shares), so that each child loads only what its own verb adds.
WARM_UP = ["evaluate", "--dataset", "coin", "--scores", "simulated", "--limit", "1"]

#: A fresh Python that imports the command line's module (as every run does) and
#: :data:`COMMON` (its arguments), runs :data:`WARM_UP` once (the modules and numba kernels that
#: the cheap verbs share, loaded once rather than in every child; its output dropped), prints
#: its own modules as JSON, then for each line of JSON
#: on stdin (``{"argv": [...], "cwd": "..."}``) forks a child that runs ``main(argv)`` in
#: ``cwd`` and prints the child's status, output's tail and loaded modules as one line of JSON
#: (``crash``: the traceback of an error ``main`` let through). A child starts from the
#: server's modules, so a heavy library among a child's modules was imported by its verb: as
#: in a fresh process, as long as the server holds nothing heavy (:func:`probe` checks, after
#: the warm-up).
FORK_SERVER = """
import contextlib, io, json, os, sys, traceback
from baglm_nb.apps.cli.main import main
WARM_UP = json.loads(sys.argv[1])
for name in sys.argv[2:]:  # COMMON
    __import__(name)
import numba
numba.njit("float64(float64)")(lambda x: x)  # numba's compiler, which any first kernel sets up
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    assert main(WARM_UP) == 0  # the filter's modules and cached kernels, loaded once for all
print(json.dumps(sorted(sys.modules)), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        report = {}
        try:
            os.close(read)
            null = os.open(os.devnull, os.O_RDWR)  # the server's stdin and stdout stay its own
            os.dup2(null, 0)
            os.dup2(null, 1)
            os.chdir(request["cwd"])
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    status = main(request["argv"])
                except SystemExit as exc:
                    status = exc.code
            report = {"status": status, "stdout": out.getvalue()[-3000:],
                       "stderr": err.getvalue()[-3000:], "modules": sorted(sys.modules)}
        except BaseException:
            report = {"crash": traceback.format_exc()}
        finally:
            with os.fdopen(write, "w") as pipe:
                pipe.write(json.dumps(report))
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    os.waitpid(pid, 0)
    print(text or json.dumps({"crash": "the child ended without a report"}), flush=True)
"""


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    """``probe(*argv)``: ``main(argv)`` run in a child of :data:`FORK_SERVER` (one server per
    module), from the repository root; its status, output and modules."""
    log = tmp_path_factory.mktemp("fork-server") / "stderr.txt"
    with log.open("w") as stderr:
        server = subprocess.Popen(
            [sys.executable, "-c", FORK_SERVER, json.dumps(WARM_UP), *COMMON],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )

    def read_line() -> str:
        line = server.stdout.readline()
        assert line, f"the fork server ended: {log.read_text()[-3000:]}"
        return line

    own = json.loads(read_line())
    # what a child holds beyond this, its verb loaded: none of it may be heavy here
    assert _heavy(own) == [], f"the fork server itself imported {_heavy(own)}"

    def run(*argv: str) -> dict:
        server.stdin.write(json.dumps({"argv": list(argv), "cwd": str(ROOT)}) + "\n")
        server.stdin.flush()
        report = json.loads(read_line())
        assert "crash" not in report, report["crash"]
        return report

    yield run
    server.stdin.close()
    server.wait(timeout=60)


def _heavy(modules: list[str]) -> list[str]:
    """The modules of :data:`HEAVY` among ``modules`` (a package or any of its submodules)."""
    return sorted({h for h in HEAVY for m in modules if m == h or m.startswith(h + ".")})


UID = "-25-1nbOki0"  # an HT-Step video (the README's follow example)

#: Runs that do their whole job: (argv, with ``{tmp}`` for a scratch folder).
CHEAP_RUNS = {
    "follow --replay": ["follow", "--replay", "simulated", "--dataset", "htstep", "--", UID],
    "evaluate": ["evaluate", "--dataset", "coin", "--scores", "simulated", "--limit", "3"],
    "simulate": ["simulate", "--dataset", "coin", "--limit", "2", "--cache-root", "{tmp}"],
    "alerts": ["alerts", "--dataset", "coin", "--limit", "2"],
    "sim-check": ["sim-check", "--dataset", "coin", "--limit", "2"],
    "calibrate --stored": ["calibrate", "--stored", "--dataset", "ego4d_goalstep", "--twin", "iid"],
    "deps --backend oracle": [
        "deps", "--dataset", "coin", "--backend", "oracle", "--no-progress",
        "--cache-root", "{tmp}",
    ],
}  # fmt: skip

#: Bad input of verbs that load a model or a notebook library once the input is good:
#: (argv, a part of the one error line).
BAD_INPUT = {
    "score: no video folder": (
        ["score", "--dataset", "coin", "--video-dir", "{tmp}/missing", "--model",
         "random-init:internvl"],
        "not a folder",
    ),
    "deps --backend openai without --model": (
        ["deps", "--dataset", "coin", "--backend", "openai"],
        "--backend openai needs --model",
    ),
    "follow --model without --task": (
        ["follow", "{tmp}/clip.mp4", "--model", "random-init:internvl"],
        "--task is required with --model",
    ),
    "render: no notebook": (["render", "{tmp}/missing.ipynb"], "missing.ipynb"),
    "alerts: bad threshold": (["alerts", "--alert-threshold", "2"], "--alert-threshold"),
    "evaluate: bad threshold": (
        ["evaluate", "--dataset", "coin", "--scores", "simulated", "--threshold", "2"],
        "--threshold",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CHEAP_RUNS))
def test_a_verb_that_needs_no_model_or_plot_imports_no_heavy_library(case, tmp_path, probe):
    run = probe(*(a.replace("{tmp}", str(tmp_path)) for a in CHEAP_RUNS[case]))
    assert run["status"] == 0, run["stderr"]
    assert run["stdout"].strip(), "the run printed nothing"
    assert _heavy(run["modules"]) == [], f"{case} imported {_heavy(run['modules'])}"


@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_input_is_refused_before_a_heavy_library_loads(case, tmp_path, probe):
    argv, says = BAD_INPUT[case]
    run = probe(*(a.replace("{tmp}", str(tmp_path)) for a in argv))
    assert run["status"] == 2, run["stderr"]
    assert says in one_error_line(run["stderr"])
    assert _heavy(run["modules"]) == [], f"{case} imported {_heavy(run['modules'])}"


def test_the_report_loads_matplotlib_and_still_no_torch(tmp_path, probe):
    """The probe sees what a verb imports: ``--html`` draws (matplotlib), nothing else heavy."""
    html = tmp_path / "report.html"
    run = probe(*CHEAP_RUNS["follow --replay"][:-2], "--html", str(html), "--", UID)
    assert run["status"] == 0, run["stderr"]
    assert html.stat().st_size > 0
    assert _heavy(run["modules"]) == ["matplotlib"]


def test_the_console_script_ends_like_python_m_without_the_teardown(tmp_path):
    """``pyproject.toml``'s ``baglm-nb`` entry point, called as the installed script calls it
    (``sys.exit(entry())``), gives ``python -m baglm_nb``'s status and error line, and the
    process ends without the interpreter's teardown (an object's ``__del__`` at module level
    never runs), as :func:`~baglm_nb.apps.cli.main.end_process` ends it."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, name = scripts["baglm-nb"].split(":")
    entry = getattr(importlib.import_module(module), name)
    argv = ["render", str(tmp_path / "missing.ipynb")]
    script = (
        "import sys\n"
        "class Teardown:\n"
        "    def __del__(self):\n"
        "        sys.stderr.write('teardown ran\\n')\n"
        "kept = Teardown()\n"
        f"from {module} import {name}\n"
        f"sys.argv = ['baglm-nb', *{argv!r}]\n"
        f"sys.exit({name}())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    reference = run_cli(*argv)
    assert entry.__module__ == "baglm_nb.apps.cli.main"
    assert done.returncode == reference.returncode == 2
    assert one_error_line(done.stderr) == one_error_line(reference.stderr)
    assert "teardown ran" not in done.stderr


def test_the_video_module_imports_torchcodec_only_to_open_a_file(monkeypatch):
    """:mod:`baglm_nb.inputs.video` loads without torchcodec (which pulls in torch._dynamo:
    seconds of CPU in every process and test worker that imports the module for a name), and
    opening a file imports it: checked in this process on a fresh copy of the module, with any
    import of torchcodec made to fail (``sys.modules`` and the package restored afterwards)."""
    from torchcodec.decoders import VideoDecoder

    import baglm_nb.inputs
    import baglm_nb.inputs.video as loaded

    cup = ROOT / "tests" / "data" / "videos" / "cup.mp4"
    monkeypatch.setattr(baglm_nb.inputs, "video", loaded)  # the import below rebinds it
    monkeypatch.delitem(sys.modules, "baglm_nb.inputs.video")
    with monkeypatch.context() as blocked:
        for name in [m for m in sys.modules if m.split(".")[0] == "torchcodec"]:
            blocked.setitem(sys.modules, name, None)  # an import of it raises ImportError
        fresh = importlib.import_module("baglm_nb.inputs.video")
        assert fresh is not loaded and "VideoDecoder" not in vars(fresh)
        with pytest.raises(ImportError):
            fresh.probe(cup)
    assert fresh.VideoDecoder is VideoDecoder
    assert fresh.probe(cup) == loaded.probe(cup)
