"""Every notebook runs headlessly with papermill on small parameters and writes its files."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import re
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from baglm_nb.apps.render import WIDGET_VIEW, format_parameters, relative_paths, strip_widgets
from baglm_nb.apps.render import render as render_notebook
from baglm_nb.inputs.datasets import DATASETS

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))

#: Small parameters per notebook, and the files each must write into its working folder.
#: Notebooks 02-06 keep their default datasets and sources (small limits only; 05's checks, a
#: row per dataset, on three), so that their tables have the columns of the full run:
#: ``tests/test_page_widths.py`` measures these pages.
#: Two videos per dataset (``limit``) is the least that still has a spread across videos: each
#: table and figure goes through the code a full run does, only over fewer videos.
SMALL = {
    "00_dataset_statistics": (
        {"datasets": ["coin"]},
        ["dataset_statistics.csv", "dataset_statistics.summary.json"],
    ),
    "01_score_segments": (  # the default: the sample clips (tests/data), random-init
        {"limit": 1, "cache_root": "cache"},
        ["score_summary.json", "timings_per_video.csv"],
    ),
    "02_dependencies": (
        {"group_limit": 5},
        [
            "dependency_violations.csv",
            "dependency_violations.md",
            "dependency_violations_long.csv",
            "dependency_violations.png",
            "dependency_answers.csv",
        ],
    ),
    "03_main_results": (
        {"limit": 2},
        [
            "main_results.csv",
            "main_results.md",
            "main_results.png",
            "transition_ablation.csv",
            "oracles.csv",
            "oracles.png",
            "main_results.items.parquet",
            "main_results.summary.json",
            "transition_ablation.items.parquet",
            "oracles.items.parquet",
        ],
    ),
    "04_ablations": (
        {"limit": 2, "duration_limit": 2, "durations": [1, 2]},
        [
            "prior_ablation.csv",
            "prior_ablation.md",
            "prior_ablation.png",
            "llm_ablation.csv",
            "prompt_ablation.csv",
            "stepping_ablation.csv",
            "stepping_ablation.png",
            "segment_duration.csv",
            "segment_duration.png",
            "prior_ablation.items.parquet",
            "prior_ablation.summary.json",
            "segment_duration.items.parquet",
        ],
    ),
    "05_analysis": (  # the checks: a row per dataset, COIN's like HT-Step's (one of each
        # recall and localization protocol: R@1 and article mAP, Avg. R@1, windowed recall)
        {
            "limit": 2,
            "check_datasets": ["htstep", "crosstask", "ego4d_goalstep"],
            "signals": [1.0],
            "noise_levels": [0.0, 1.0],
            "sensitivity_limit": 2,
        },
        [
            "sensitivity.csv",
            "sensitivity.md",
            "sensitivity.png",
            "position.csv",
            "position.md",
            "position_htstep.png",
            "candidate_steps.csv",
            "candidate_steps_htstep.png",
            "sensitivity.items.parquet",
            "position.items.parquet",
            "candidate_steps.items.parquet",
            "simulation_check_gains.md",
            "simulation_check_gains.png",
            "simulation_check_transitions.md",
            "simulation_check_twins.md",
            "simulation_check_twin_errors.md",
            "simulation_check_twin_errors.png",
            "dependency_quality.md",
            "dependency_quality.png",
            "dependency_quality.items.parquet",
        ],
    ),
    "06_localization": (
        {"limit": 2},
        [
            "localization.csv",
            "localization.md",
            "localization.png",
            "ego4d_windowed_recall.csv",
            "ego4d_windowed_recall.md",
        ],
    ),
    "07_timing": (  # the default: a run on the sample clips, random-init
        {"cache_root": "cache"},
        ["timing.csv", "timing.md", "timing_by_steps.md", "timing.png"],
    ),
    "08_qualitative": (
        {"videos": {"coin": ["xZecGPPhbHE"]}},
        [
            "qualitative.csv",
            "qualitative.md",
            "qualitative_coin_xZecGPPhbHE.png",
            "qualitative.items.parquet",
            "qualitative.summary.json",
        ],
    ),
    "09_assistance": (
        {
            "datasets": ["htstep", "coin"],
            "limit": 2,
            "lags": [0, 2, None],
            "timeline_lag": 2,
            "alert_limit": 2,
            "stays": [0.0, 0.9],
            "announce_thresholds": [0.5, 0.7],
            "announce_patiences": [1, 2],
            "announce_lags": [0, 1],
            "max_delay_s": 1000.0,
        },
        [
            "assistance_stay.csv",
            "assistance_stay.md",
            "assistance_stay.png",
            "assistance_stay.items.parquet",
            "assistance_announcement.csv",
            "assistance_announcement.md",
            "assistance_lags.csv",
            "assistance_lags.md",
            "assistance_lags.png",
            "assistance_lags.items.parquet",
            "assistance_lags.summary.json",
            "assistance_timeline.png",
            "assistance_lags_correlated.csv",
            "assistance_lags_correlated.png",
            "assistance_alerts.csv",
            "assistance_alerts.md",
        ],
    ),
}


#: Markdown tables that must say they come from simulated observations (the CPU default).
SIMULATED_TITLES = {
    "04_ablations": [
        "prior_ablation.md",
        "llm_ablation.md",
        "prompt_ablation.md",
        "stepping_ablation.md",
        "segment_duration.md",
    ],
    "05_analysis": [
        "sensitivity.md",
        "position.md",
        "candidate_steps.md",
        "simulation_check_gains.md",
        "simulation_check_transitions.md",
        "simulation_check_twins.md",
        "simulation_check_twin_errors.md",
        "dependency_quality.md",
    ],
    "06_localization": ["localization.md", "ego4d_windowed_recall.md"],
    "08_qualitative": ["qualitative.md"],
    "09_assistance": [
        "assistance_lags.md",
        "assistance_lags_correlated.md",
        "assistance_alerts.md",
        "assistance_stay.md",
        "assistance_announcement.md",
    ],
}


def test_every_notebook_has_small_parameters():
    assert NOTEBOOKS, "no notebooks found"
    missing = [nb.stem for nb in NOTEBOOKS if nb.stem not in SMALL]
    assert not missing, f"add small test parameters for {missing}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_committed_clean_with_parameters_cell(notebook):
    nb = json.loads(notebook.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert not any(c.get("outputs") or c.get("execution_count") for c in code)
    assert sum("parameters" in c.get("metadata", {}).get("tags", []) for c in code) == 1


def render(notebook: Path, figures: Path, params: dict) -> Path:
    """Run ``scripts/run_notebooks.sh`` (as ``make figures`` does) on one notebook.

    The notebook runs with ``params`` into ``figures/<stem>/`` (executed copy, HTML, files);
    returns that folder.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("PARAMS_FILE", "MPLBACKEND")}
    env.update(FIGURES_DIR=str(figures), PAPERMILL_ARGS="-y " + shlex.quote(json.dumps(params)))
    script = ROOT / "scripts" / "run_notebooks.sh"
    done = subprocess.run(
        ["bash", str(script), str(notebook)], env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # run alone, the runner numbers its one notebook [1/1], at its start and its end
    assert done.stdout.count(f"[1/1] {notebook.name} ") == 2, done.stdout
    return figures / notebook.stem


def notebook_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This test session's folder of notebook runs, one for all pytest-xdist workers."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the session's folder, above each worker's popen-gwN
    return base / "notebook-runs"


def rendered(stem: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Notebook ``stem`` rendered on its :data:`SMALL` parameters, once per test session.

    The first test that asks runs :func:`render`; the others (this file's checks, the page
    widths and the browser's view of the same page, on either worker) get the same folder.
    A worker that asks while the other is running it waits for it (a lock per notebook). A
    failed run fails every test that asks, with the runner's output, without running again.
    """
    folder = notebook_runs(tmp_path_factory)
    folder.mkdir(parents=True, exist_ok=True)
    done, failed = folder / f"{stem}.done", folder / f"{stem}.failed"
    with open(folder / f"{stem}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if failed.exists():
            pytest.fail(f"notebook {stem} failed in an earlier test:\n{failed.read_text()}")
        if not done.exists():
            try:
                render(ROOT / "notebooks" / f"{stem}.ipynb", folder, SMALL[stem][0])
            except AssertionError as exc:
                failed.write_text(str(exc))
                raise
            done.touch()
    return folder / stem


def html_images(html: str) -> list[str]:
    """The ``src`` of every ``<img>`` of an HTML page, plus one entry per inline ``<svg>``."""
    srcs = re.findall(r"<img\b[^>]*?\bsrc=[\"']([^\"']*)[\"']", html)
    return srcs + ["<svg>"] * len(re.findall(r"<svg\b", html))


#: Notebooks whose figures are displayed by their own code rather than as the saved files.
DISPLAYED_OWN_WAY = {"08_qualitative"}

#: An absolute path of a Unix machine's usual top folders, as a page could show it.
ABSOLUTE_PATH = re.compile(r"(?<![\w.:/-])/(?:work|tmp|home|root|usr|opt|var|mnt|srv|private)/\w")


def local_paths(text: str, *folders: Path) -> list[str]:
    """The absolute paths of this machine in ``text``: ``folders`` (also resolved), this
    Python's prefix, and anything under the usual top folders (:data:`ABSOLUTE_PATH`)."""
    names = {str(f) for f in folders} | {os.path.realpath(f) for f in folders}
    names |= {sys.prefix, os.path.realpath(sys.prefix)}
    found = [name for name in names if name in text]
    return found + [m.group(0) for m in ABSOLUTE_PATH.finditer(text)]


def check_offline(html: str) -> None:
    """The page loads no script, style or font from the network, and no script file at all."""
    assert not re.findall(r"""\bsrc=["']?(?:https?:)?//""", html)
    assert not re.findall(r"""<link\b[^>]*href=["']?(?:https?:)?//""", html)
    assert not re.findall(r"""@import\s+(?:url\()?["']?(?:https?:)?//""", html)
    assert not re.findall(r"<script\b[^>]*\bsrc=", html)
    assert 'src="http' not in html


def check_shareable(folder: Path, stem: str) -> None:
    """The executed notebook and its HTML show every saved figure and carry no widget, no
    local path, nothing loaded from the network, no ``Out[n]:`` prompt and no bare repr."""
    html = (folder / f"{stem}.html").read_text()
    nb = json.loads((folder / f"{stem}.ipynb").read_text())
    outputs = [o for c in nb["cells"] for o in c.get("outputs", [])]
    assert not local_paths(html, ROOT, folder), local_paths(html, ROOT, folder)
    assert not local_paths(json.dumps(nb), ROOT, folder)
    check_offline(html)
    assert "Out[" not in re.sub(r"/\*.*?\*/", "", html, flags=re.S)  # CSS comments aside
    bare = [
        o
        for o in outputs
        if o["output_type"] == "execute_result" and not set(o["data"]) - {"text/plain"}
    ]
    assert not bare, [o["data"]["text/plain"] for o in bare]
    injected = [c for c in nb["cells"] if "injected-parameters" in c["metadata"].get("tags", [])]
    assert all("paths relative to the repository" in "".join(c["source"]) for c in injected)
    assert not [o for o in outputs if WIDGET_VIEW in o.get("data", {})]
    assert "widgets" not in nb["metadata"]
    assert "widget-state+json" not in html and "widget-view+json" not in html
    figures = sorted(folder.glob("*.png"))
    images = html_images(html)
    assert all(src.startswith("data:image/") for src in images if src != "<svg>"), images
    assert len(images) == len(figures), ([p.name for p in figures], len(images))
    assert "Figure size" not in html  # a figure printed as text instead of drawn
    if stem not in DISPLAYED_OWN_WAY:  # the image shown is the file saved
        shown = {base64.b64decode(src.split(",", 1)[1]) for src in images if src != "<svg>"}
        assert [p.name for p in figures if p.read_bytes() in shown] == [p.name for p in figures]


def test_render_reuses_compiled_templates_and_recompiles_a_changed_one(tmp_path, monkeypatch):
    """:func:`baglm_nb.apps.render.to_html` keeps its templates' compiled code between runs
    (each notebook of ``make figures`` renders in a process of its own): a second export
    compiles no template and writes the same page; a changed template, or another Jinja, is
    compiled again; a folder others may write to is refused."""
    import jinja2
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    from baglm_nb.apps import render

    cache = render.template_cache  # the product's, on a folder of this test's own
    monkeypatch.setattr(render, "template_cache", lambda: cache(tmp_path / "templates"))
    compiled = []
    compile_template = jinja2.Environment.compile

    def counting(self, source, name=None, filename=None, *args, **kwargs):
        compiled.append(name)
        return compile_template(self, source, name, filename, *args, **kwargs)

    monkeypatch.setattr(jinja2.Environment, "compile", counting)
    out = new_output("stream", name="stdout", text="3\n")
    cells = [new_markdown_cell("# A *title*"), new_code_cell("1 + 2", outputs=[out])]
    nb = nbformat.from_dict(new_notebook(cells=cells))
    first = render.to_html(nb)
    assert "offline.html.j2" in compiled and "index.html.j2" in compiled
    assert len(list((tmp_path / "templates").iterdir())) >= 2
    compiled.clear()
    assert render.to_html(nb) == first and compiled == []  # every template from the cache
    monkeypatch.setattr(render, "OFFLINE_TEMPLATE", render.OFFLINE_TEMPLATE + "{# changed #}\n")
    assert render.to_html(nb) == first and compiled == ["offline.html.j2"]  # only the changed
    compiled.clear()
    monkeypatch.setattr(jinja2, "__version__", f"{jinja2.__version__}.other")
    assert render.to_html(nb) == first and "index.html.j2" in compiled  # another Jinja's: anew
    (tmp_path / "open").mkdir()
    (tmp_path / "open").chmod(0o777)
    assert cache(tmp_path / "open") is None  # a folder others may write to is not trusted
    (tmp_path / "file").touch()  # no folder to be had: no cache, the same page
    assert cache(tmp_path / "file" / "templates") is None
    monkeypatch.setattr(render, "template_cache", lambda: cache(tmp_path / "file" / "templates"))
    assert render.to_html(nb) == first


def test_render_strips_widgets_and_embeds_every_image(tmp_path):
    import matplotlib.pyplot as plt
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    fig, ax = plt.subplots(figsize=(2, 1))
    ax.plot([0, 1])
    fig.savefig(tmp_path / "fig.png")
    plt.close(fig)
    png = (tmp_path / "fig.png").read_bytes()
    bar = {
        WIDGET_VIEW: {"model_id": "tqdm-model-7f3a", "version_major": 2},
        "text/plain": "bar:  0%| 0/6",
    }
    shown = {"image/png": base64.b64encode(png).decode()}
    cell = new_code_cell(
        "run()",
        outputs=[new_output("display_data", data=bar), new_output("display_data", data=shown)],
    )
    state = {"application/vnd.jupyter.widget-state+json": {"state": {"tqdm-model-7f3a": {}}}}
    nb = new_notebook(
        cells=[new_markdown_cell("![a figure](fig.png)"), cell], metadata={"widgets": state}
    )
    nbformat.write(nb, tmp_path / "nb.ipynb")
    out = render_notebook(tmp_path / "nb.ipynb")
    assert out == tmp_path / "nb.html"
    page = out.read_text()
    assert "bar:  0%" not in page and "widget-state" not in page and "tqdm-model-7f3a" not in page
    srcs = html_images(page)
    assert len(srcs) == 2 and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert [base64.b64decode(s.split(",", 1)[1]) for s in srcs] == [png, png]
    again = nbformat.read(tmp_path / "nb.ipynb", as_version=4)  # rewritten without widgets
    assert "widgets" not in again.metadata and len(again.cells[1].outputs) == 1
    assert strip_widgets(again) == 0


def test_render_makes_paths_relative_and_the_page_offline(tmp_path):
    """Papermill's injected cell and the outputs lose this machine's paths; the page loads
    nothing from the network and shows no Out[n] prompt."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    cache = ROOT / "data" / "cache" / "scores" / "htstep" / "simulated" / ("x" * 90)
    site = Path(sysconfig.get_paths()["purelib"]) / "transformers" / "a.py"
    params = f"# Parameters\nscores = {{'htstep': '{cache}', 'coin': '{cache}'}}\nlimit = 5\n"
    injected = new_code_cell(params, metadata={"tags": ["injected-parameters"]})
    warning = new_output("stream", name="stderr", text=f"{site}:3: FutureWarning: x\n")
    shown = new_output("execute_result", data={"text/plain": f"'{ROOT}/figures/a.png'"})
    nb = new_notebook(
        cells=[
            new_markdown_cell("# $x^2$ title"),
            injected,
            new_code_cell("f()", outputs=[warning, shown]),
        ]
    )
    assert relative_paths(nb) == 3
    source = nb.cells[1].source
    assert source.splitlines()[:3] == [
        "# Parameters (injected by papermill; paths relative to the repository)",
        "scores = {",
        f"    'htstep': '{cache.relative_to(ROOT)}',",
    ]
    assert "limit = 5" in source and max(map(len, source.splitlines())) < 150
    assert nb.cells[2].outputs[0].text.startswith("site-packages/transformers/a.py:3:")
    assert nb.cells[2].outputs[1].data["text/plain"] == "'figures/a.png'"
    nbformat.write(nb, tmp_path / "nb.ipynb")
    page = render_notebook(tmp_path / "nb.ipynb").read_text()
    check_offline(page)
    assert not local_paths(page, ROOT, tmp_path) and "Out[2]" not in page
    assert format_parameters("# Parameters\nx = f(1)\n").endswith("\nx = f(1)")
    sibling = new_notebook(
        cells=[
            new_code_cell(
                "g()", outputs=[new_output("stream", name="stdout", text=f"{ROOT}x/a {ROOT}\n")]
            )
        ]
    )
    relative_paths(sibling)  # a folder beside the repository is not inside it
    assert sibling.cells[0].outputs[0].text == f"{ROOT}x/a .\n"


def test_runner_gives_the_parameter_file_only_to_notebooks_that_take_scores(tmp_path):
    """``PARAMS_FILE`` (papermill ``-f``) goes to the notebooks whose parameters cell names
    ``scores``; ``PAPERMILL_ARGS`` is split like a shell would, after the runner's options."""
    from baglm_nb.apps.notebook_run import papermill_args, takes_scores

    taking = {nb.stem for nb in NOTEBOOKS if takes_scores(nb)}
    assert {"03_main_results", "08_qualitative"} <= taking
    assert not {"00_dataset_statistics", "01_score_segments", "07_timing"} & taking
    main, stats = (str(ROOT / "notebooks" / f"{s}.ipynb") for s in ("03_main_results", "00_x"))
    extra = """-p limit 5 -y '{"datasets": ["coin"]}'"""
    assert papermill_args(main, "o.ipynb", ["-k", "python3"], "p.json", extra) == [
        main, "o.ipynb", "-k", "python3", "-f", "p.json",
        "-p", "limit", "5", "-y", '{"datasets": ["coin"]}',
    ]  # fmt: skip
    assert papermill_args(main, "o.ipynb", [], "", "") == [main, "o.ipynb"]
    assert papermill_args(stats, "o.ipynb", [], "p.json") == [stats, "o.ipynb"]  # no such file
    with pytest.raises(ValueError, match="bad papermill arguments"):
        papermill_args(main, "o.ipynb", [], "", "-p x 'unclosed")
    (tmp_path / "bad.ipynb").write_text("not a notebook")
    assert not takes_scores(tmp_path / "bad.ipynb")


def test_runner_exit_status_says_which_step_failed(tmp_path, monkeypatch, capsys):
    """``baglm_nb.apps.notebook_run`` in this process on a notebook papermill only prepares (no
    kernel): rendered (0), the HTML export failing (``RENDER_FAILED``), bad options (2)."""
    import nbformat

    from baglm_nb.apps import notebook_run

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    nb.cells[0].metadata["tags"] = ["parameters"]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nb.metadata["language_info"] = {"name": "python"}
    nbformat.write(nb, tmp_path / "t.ipynb")
    out = tmp_path / "out" / "t.ipynb"
    out.parent.mkdir()
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # papermill's CLI would set it
    argv = [str(tmp_path / "t.ipynb"), str(out), "--extra=-p x 2", "--", "--prepare-only"]
    assert notebook_run.main(argv) == 0, capsys.readouterr()
    assert "x = 2" in out.read_text() and out.with_suffix(".html").is_file()

    def broken(path):
        raise RuntimeError(f"cannot export {path}")

    monkeypatch.setattr("baglm_nb.apps.render.render", broken)
    assert notebook_run.main(argv) == notebook_run.RENDER_FAILED
    assert "RuntimeError: cannot export" in capsys.readouterr().err
    assert notebook_run.main([*argv, "--no-such-option"]) == 2
    assert "No such option" in capsys.readouterr().err
    assert notebook_run.main([*argv[:2], "--extra=-p x 'unclosed"]) == 2
    assert "bad papermill arguments" in capsys.readouterr().err


def test_runner_names_the_failing_notebook_and_says_why(tmp_path):
    """``scripts/run_notebooks.sh`` on a run that fails before any cell (papermill refuses an
    option): the [1/1] line says FAILED, papermill's error and the notebook are named, exit 1."""
    env = {k: v for k, v in os.environ.items() if k != "PARAMS_FILE"}
    env.update(FIGURES_DIR=str(tmp_path), PAPERMILL_ARGS="--no-such-option")
    nb = ROOT / "notebooks" / "00_dataset_statistics.ipynb"
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "run_notebooks.sh"), str(nb)],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(r"^\[1/1\] 00_dataset_statistics\.ipynb FAILED after \d+ s", done.stdout, re.M)
    assert "No such option" in done.stderr and "--no-such-option" in done.stderr
    assert f"error: notebook {nb} failed" in done.stderr


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)  # conftest: xdist_group
def test_notebook_runs_on_small_parameters(notebook, tmp_path_factory):
    """Each notebook as ``make figures`` runs it (:func:`rendered`), on small parameters."""
    outputs = SMALL[notebook.stem][1]
    folder = rendered(notebook.stem, tmp_path_factory)
    for name in outputs:
        assert (folder / name).stat().st_size > 0, name
    if notebook.stem == "03_main_results":
        text = (folder / "main_results.md").read_text()
        assert "simulated observations, not a real model" in text
        # like with like: every BaGLM row names its D, the simulated LLaMA by default
        assert "D: simulated-llm:llama" in text and "| simulated-llm:llama |" in text
        oracles = (folder / "oracles.md").read_text()
        assert "| LLM D, oracle progress |" in oracles and "| oracle | oracle |" in oracles
        # the paper's form: its other methods (paper only), check-mark columns on the page
        assert "| HT-Step | VINA | offline |  | 39.1 | 0 | paper |" in text
        page = (folder / "03_main_results.html").read_text()
        assert "Readiness" in page and "Dep. matrix oracle" in page and "\u2713" in page
        assert "calibrated to the paper" in page
        # the summary records the code's commit and the parameters that produced the table
        summary = json.loads((folder / "main_results.summary.json").read_text())
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        assert summary["commit"] == head
        assert summary["parameters"]["limit"] == SMALL[notebook.stem][0]["limit"]
        assert summary["parameters"]["datasets"] == list(DATASETS)
        assert summary["parameters"]["deps"] == "simulated-llm:llama"
        assert summary["dependency_sources"] == ["simulated-llm:llama"]
    for name in SIMULATED_TITLES.get(notebook.stem, []):
        assert "simulated observations, not a real model" in (folder / name).read_text(), name
    if notebook.stem == "04_ablations":
        text = (folder / "prior_ablation.md").read_text()
        assert "slot:" in text and "next-step" in text  # simulated: no next-step scores
    if notebook.stem == "02_dependencies":
        text = (folder / "dependency_violations.md").read_text()
        assert "| simulated-llm:llama |" in text and "| paper: LLaMA-3.3-70B |" in text
        assert "The oracle D violates" in (folder / "02_dependencies.html").read_text()
    if notebook.stem == "05_analysis":
        text = (folder / "simulation_check_gains.md").read_text()
        assert "| HT-Step | simulated-llm:llama |" in text and "held-out" in text
        page = (folder / "05_analysis.html").read_text()
        assert "gain_difference" not in page.split("<table", 1)[1]  # headers in words
        assert page.count("<h2") >= 5  # five sections
    if notebook.stem == "06_localization":
        text = (folder / "localization.md").read_text()
        assert "| simulated (compared with internvl2.5-8b) |" in text and "| internvl3-8b |" in text
        assert "| internvl2.5-8b |" not in text  # simulated is not InternVL2.5-8B's output
    if notebook.stem == "07_timing":  # a real run on the sample clips, labelled, as a figure
        text = (folder / "timing_by_steps.md").read_text()
        assert "lmm:random-init/" in text and "| 3 | 2 |" in text  # K = 3, both clips
        assert "no timings available" not in (folder / "timing.md").read_text()
        html = (folder / "07_timing.html").read_text()
        assert len(html_images(html)) == 1 and "timings given: timing random-init" in html
    if notebook.stem == "01_score_segments":
        summary = json.loads((folder / "score_summary.json").read_text())
        assert summary["label"] == "random-init" and summary["scored"] == ["cup"]
        html = (folder / "01_score_segments.html").read_text()
        assert "random-init: a tiny random model" in html
    if notebook.stem == "08_qualitative":  # D named in the table, its title and the figure's
        text = (folder / "qualitative.md").read_text()
        assert "D: simulated-llm:llama" in text and "| simulated-llm:llama |" in text
        html = (folder / "08_qualitative.html").read_text()
        assert "<caption>Qualitative videos: per-video R@1 (%); D: simulated-llm:llama" in html
    check_shareable(folder, notebook.stem)
