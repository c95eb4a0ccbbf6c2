"""Figures (analyses.plots): what they draw, checked against the tables they draw."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_hex

from baglm_nb.analyses import palette, plots
from baglm_nb.analyses.ablations import llm_table, segment_duration_table, sensitivity_table
from baglm_nb.analyses.breakdowns import breakdown_tables
from baglm_nb.analyses.result_table import ResultTable
from baglm_nb.analyses.tables import title_for
from baglm_nb.core.observations import Observations, from_simulation
from baglm_nb.inputs.datasets import load_dataset
from baglm_nb.inputs.video import find_video_file, frames_at

ROOT = Path(__file__).resolve().parent.parent
SIMULATED = "(simulated observations, not a real model)"


@pytest.fixture(autouse=True)
def _close_figures():
    """Each test's figures are closed after it (pyplot keeps them open otherwise)."""
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.fixture(scope="module")
def obs() -> Observations:
    return from_simulation("htstep", limit=8)


def _text(text: str) -> str:
    """A (wrapped) title on one line."""
    return " ".join(text.split())


def _line(ax, label: str):
    [line] = [ln for ln in ax.get_lines() if ln.get_label() == label]
    return line


def _levels(ax) -> list[float]:
    """The y of every horizontal line (axhline) of ``ax``."""
    ys = [np.asarray(ln.get_ydata(), dtype=float) for ln in ax.get_lines()]
    return sorted(float(y[0]) for y in ys if len(y) == 2 and y[0] == y[1])


def test_results_bars_draw_values_paper_ticks_and_slots():
    df = pd.DataFrame(
        {
            "dataset": ["HT-Step", "HT-Step", "COIN", "COIN"],
            "method": ["BaGLM", "LMM", "BaGLM", "LMM"],
            "workbench": [62.8, 52.0, np.nan, 40.0],
            "paper": [43.5, 37.9, 50.1, np.nan],
        }
    )
    title = title_for("Main results", "simulated")
    fig = plots.results_bars(df, title)
    ax = fig.axes[0]
    heights = sorted(round(p.get_height(), 1) for p in ax.patches)
    # 4 bars, the slot's of height 0: nothing at the paper's height 50.1
    assert heights == [0.0, 40.0, 52.0, 62.8]
    assert [t.get_text() for t in ax.texts] == [plots.SLOT_TEXT]
    bar_x = [p.get_x() + p.get_width() / 2 for p in ax.patches if p.get_height() == 0]
    assert ax.texts[0].get_position()[0] == pytest.approx(bar_x[0])  # at the slot's place
    ticks = np.concatenate([c.get_offsets()[:, 1] for c in ax.collections])
    np.testing.assert_allclose(np.sort(ticks[np.isfinite(ticks)]), [37.9, 43.5, 50.1])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["HT-Step", "COIN"]
    assert _text(ax.get_title()) == title
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["paper", "BaGLM", "LMM"]


def test_a_chart_of_slots_draws_no_bar_and_says_so_in_its_title():
    obs = [from_simulation(name, limit=3) for name in ("htstep", "crosstask")]
    table = llm_table(obs, {"LLaMA-3.3-70B": {}, "GPT-4.1-mini": {}}).frame  # all slots
    assert table["note"].str.startswith("slot:").all() and table["paper"].notna().all()
    title = title_for("LLM ablation (Tab. LLM), R@1", "simulated")
    ax = plots.results_bars(table, title).axes[0]
    assert [p.get_height() for p in ax.patches] == [0.0] * len(table)  # no bar, none at paper
    assert [t.get_text() for t in ax.texts] == [plots.SLOT_TEXT] * len(table)
    assert _text(ax.get_title()).startswith(plots.SLOTS_ONLY) and title in _text(ax.get_title())
    ticks = np.sort(np.concatenate([c.get_offsets()[:, 1] for c in ax.collections]))
    np.testing.assert_allclose(ticks, np.sort(table["paper"]))  # the paper's values: ticks only
    part = plots.results_bars(table.assign(workbench=[50.0, np.nan, 55.0, np.nan]), title)
    assert not _text(part.axes[0].get_title()).startswith(plots.SLOTS_ONLY)
    assert len(part.axes[0].texts) == 2
    legend = [t.get_text() for t in part.axes[0].get_legend().get_texts()]
    assert legend == ["paper", "LLaMA-3.3-70B", "GPT-4.1-mini"]
    unreported = plots.results_bars(table.assign(paper=np.nan, workbench=50.0), title)
    legend = [t.get_text() for t in unreported.axes[0].get_legend().get_texts()]
    assert legend == ["LLaMA-3.3-70B", "GPT-4.1-mini"]  # no "paper" without a paper value


def test_results_bars_of_a_binned_table(obs):
    position = breakdown_tables(obs, "oracle")[0].frame
    title = title_for("R@1 by temporal position", obs.label)
    ax = plots.results_bars(position, title, group="bin").axes[0]
    assert len(ax.patches) == len(position) == 10  # 5 bins x 2 methods, no slot
    for i, method in enumerate(["off-the-shelf LMM", "BaGLM"]):
        bars = ax.patches[5 * i : 5 * i + 5]
        expected = position[position["method"] == method]["workbench"].fillna(0)
        np.testing.assert_allclose([b.get_height() for b in bars], expected)
    assert [t.get_text() for t in ax.get_xticklabels()] == [f"bin {i}" for i in range(5)]
    assert SIMULATED in _text(ax.get_title())


def test_duration_lines_draw_the_table():
    table = segment_duration_table(["htstep"], (2, 1), limit=4).frame
    title = title_for("Segment duration x source", "simulated")
    fig = plots.duration_lines(table, title)
    [ax] = fig.axes
    assert ax.get_title() == "HT-Step" and SIMULATED in _text(fig.get_suptitle())
    assert len(ax.get_lines()) == 2
    for method in ("BaGLM", "off-the-shelf LMM"):
        line = _line(ax, f"{method} (simulated)")
        rows = table[table["method"] == method].sort_values("segment_duration")
        assert list(line.get_xdata()) == [1, 2] and line.get_linestyle() == "-"
        assert line.get_color() == palette.colour(method)  # the method's hue, as in 03
        np.testing.assert_array_equal(line.get_ydata(), rows["workbench"])
    baglm, off = ax.collections  # the paper's points: hollow, in the method's hue
    np.testing.assert_allclose(baglm.get_offsets(), [[2, 57.4]])
    np.testing.assert_allclose(off.get_offsets(), [[2, 52.0]])
    assert to_hex(baglm.get_edgecolor()[0]) == palette.colour("BaGLM")
    assert to_hex(off.get_edgecolor()[0]) == palette.colour("off-the-shelf LMM")
    assert list(ax.get_xticks()) == [1, 2]
    fig.canvas.draw()  # one narrow panel: the legend still fits in the figure
    [legend] = fig.legends
    box, page = legend.get_window_extent(), fig.bbox
    assert box.x0 >= page.x0 and box.x1 <= page.x1 and box.y0 >= page.y0
    assert [t.get_text() for t in legend.get_texts()] == [
        "BaGLM (simulated)",
        "off-the-shelf LMM (simulated)",
        "paper: BaGLM (InternVL2.5-8B, 2 s)",
        "paper: off-the-shelf LMM (InternVL2.5-8B, 2 s)",
    ]
    assert box.y1 < ax.get_window_extent().y0  # below the panel, not on it


def test_duration_lines_one_panel_per_dataset_and_one_line_per_source():
    rows = [
        (dataset, source, d, method, 10.0 * d + (method == "BaGLM"))
        for dataset, sources in (("HT-Step", ["simulated", "lmm:m"]), ("COIN", ["simulated"]))
        for source in sources
        for d in (1, 2, 3)
        for method in ("BaGLM", "off-the-shelf LMM")
    ]
    df = pd.DataFrame(
        rows, columns=["dataset", "source", "segment_duration", "method", "workbench"]
    )
    df["paper"] = np.nan
    fig = plots.duration_lines(df, "t")
    assert [ax.get_title() for ax in fig.axes] == ["HT-Step", "COIN"]
    assert [len(ax.get_lines()) for ax in fig.axes] == [4, 2]
    line = _line(fig.axes[0], "BaGLM (lmm:m)")
    np.testing.assert_array_equal(line.get_ydata(), [11.0, 21.0, 31.0])
    assert [len(c.get_offsets()) for ax in fig.axes for c in ax.collections] == [0] * 4
    other = _line(fig.axes[0], "BaGLM (lmm:m)")  # a second source: same hue, its own marker
    assert other.get_color() == _line(fig.axes[0], "BaGLM (simulated)").get_color()
    assert other.get_marker() != _line(fig.axes[0], "BaGLM (simulated)").get_marker()


def test_sensitivity_lines_draw_the_table():
    table = sensitivity_table("htstep", [4.0, 0.0], limit=6, with_calibrated=False).frame
    title = title_for("BaGLM's gain vs observation quality", "simulated")
    fig = plots.sensitivity_lines(table, title, calibrated=1.244)
    assert fig.axes[0].get_title() == "HT-Step" and _text(fig.get_suptitle()) == title
    fig.canvas.draw()  # one narrow column: the wrapped title fits in the figure
    box = fig._suptitle.get_window_extent()  # noqa: SLF001
    assert box.x0 >= fig.bbox.x0 and box.x1 <= fig.bbox.x1 and box.y1 <= fig.bbox.y1
    top, bottom = fig.axes
    rows = table.sort_values("signal")
    for ax, label, column in (
        (top, "BaGLM", "baglm"),
        (top, "off-the-shelf LMM", "off_the_shelf"),
        (bottom, "BaGLM gain", "gain"),
    ):
        line = _line(ax, label)
        assert list(line.get_xdata()) == [0.0, 4.0]
        np.testing.assert_array_equal(line.get_ydata(), rows[column])
    assert _levels(top) == [52.0, 57.4]  # the paper's levels
    assert _levels(bottom) == [0.0, 5.4]  # zero and the paper's gain
    for ax in (top, bottom):  # the calibrated signal, vertical
        assert [list(ln.get_xdata()) for ln in ax.get_lines()][-1] == [1.244, 1.244]
    # a simulated curve and the paper's level of the same method share a hue, dashed
    paper_baglm = _line(top, "paper: BaGLM (InternVL2.5-8B)")
    assert paper_baglm.get_color() == _line(top, "BaGLM").get_color() == palette.colour("BaGLM")
    assert paper_baglm.get_linestyle() == "--"
    paper_off = _line(top, "paper: off-the-shelf (InternVL2.5-8B)")
    assert paper_off.get_color() == _line(top, "off-the-shelf LMM").get_color()
    assert _line(top, "off-the-shelf LMM").get_color() == palette.colour("off-the-shelf LMM")
    # every reference line is in the legend
    [legend] = fig.legends
    entries = {t.get_text() for t in legend.get_texts()}
    assert entries == {
        "BaGLM",
        "off-the-shelf LMM",
        "BaGLM gain",
        "paper: BaGLM gain",
        "paper: BaGLM (InternVL2.5-8B)",
        "paper: off-the-shelf (InternVL2.5-8B)",
        "calibrated signal (off-the-shelf = paper)",
    }


def test_sensitivity_lines_one_column_per_dataset():
    df = pd.DataFrame(
        {
            "dataset": ["HT-Step"] * 2 + ["COIN"] * 2,
            "signal": [1.0, 0.0] * 2,
            "baglm": [60.0, 40.0, 50.0, 45.0],
            "off_the_shelf": [55.0, 41.0, 48.0, 46.0],
            "gain": [5.0, -1.0, 2.0, -1.0],
            "paper_baglm": [57.4, 57.4, np.nan, np.nan],
            "paper_off_the_shelf": [52.0, 52.0, np.nan, np.nan],
            "paper_gain": [5.4, 5.4, np.nan, np.nan],
        }
    )
    fig = plots.sensitivity_lines(df, "t")
    assert [ax.get_title() for ax in fig.axes[:2]] == ["HT-Step", "COIN"]
    top, bottom = fig.axes[1], fig.axes[3]  # COIN: no paper levels
    np.testing.assert_array_equal(_line(top, "BaGLM").get_ydata(), [45.0, 50.0])
    np.testing.assert_array_equal(_line(bottom, "BaGLM gain").get_ydata(), [-1.0, 2.0])
    assert _levels(top) == [] and _levels(bottom) == [0.0]
    assert len(fig.axes) == 4


def test_sensitivity_lines_one_line_per_dependency_source_and_the_calibrated_mark():
    tables = [
        sensitivity_table("htstep", [0.0], deps=d, limit=4)
        for d in ("simulated-llm:llama", "oracle")
    ]
    table = ResultTable.concat(tables).frame
    fig = plots.sensitivity_lines(table, "t")
    top, bottom = fig.axes
    calibrated = float(table.loc[table["calibrated"], "signal"].iloc[0])
    for d, part in table.groupby("D", sort=False):
        line = _line(top, f"BaGLM (D={d})")
        np.testing.assert_array_equal(line.get_ydata(), part.sort_values("signal")["baglm"])
        gain = _line(bottom, f"BaGLM gain (D={d})")
        np.testing.assert_array_equal(gain.get_ydata(), part.sort_values("signal")["gain"])
        assert line.get_color() == gain.get_color() == palette.colour(d)  # one hue per D
    assert palette.colour("oracle") != palette.colour("simulated-llm:llama")
    assert len([ln for ln in top.get_lines() if ln.get_label() == "off-the-shelf LMM"]) == 1
    for ax in (top, bottom):  # the calibrated signal of the table, vertical
        assert [list(ln.get_xdata()) for ln in ax.get_lines()][-1] == [calibrated, calibrated]


def test_dependency_quality_lines_draw_the_sweep_and_the_presets():
    df = pd.DataFrame(
        {
            "dataset": ["HT-Step"] * 4,
            "D": ["noisy-oracle:1", "noisy-oracle:0", "simulated-llm:llama", "simulated-llm:gpt"],
            "level": [1.0, 0.0, np.nan, np.nan],
            "gain": [2.0, 9.0, 6.0, 4.0],
            "paper_gain": [5.4] * 4,
        }
    )
    fig = plots.dependency_quality_lines(df, "quality")
    [ax] = fig.axes
    line = _line(ax, "oracle chain + noise")
    assert list(line.get_xdata()) == [0.0, 1.0] and list(line.get_ydata()) == [9.0, 2.0]
    assert _levels(ax) == [0.0, 4.0, 5.4, 6.0]  # zero, the presets, the paper's gain
    [legend] = fig.legends  # below the panel, at a size readable at page width
    assert {t.get_text() for t in legend.get_texts()} >= {
        "simulated-llm:llama",
        "simulated-llm:gpt",
        "paper gain (LLaMA D)",
    }
    _legend_clear_of_the_panels(fig, legend)


def _legend_clear_of_the_panels(fig, legend) -> None:
    """A figure legend inside the figure, under every panel, its text at least 8 pt."""
    fig.canvas.draw()
    box = legend.get_window_extent()
    assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 and box.y0 >= fig.bbox.y0
    for ax in fig.axes:
        assert box.y1 <= ax.get_tightbbox().y0 + 1, "the legend overlaps a panel"
    assert min(t.get_fontsize() for t in legend.get_texts()) >= 8


def test_violation_lines_draw_each_source_and_the_papers_rows():
    from baglm_nb.analyses.violations import violation_report
    from baglm_nb.inputs.paper import PAPER_VIOLATIONS

    long = violation_report("htstep", ["simulated-llm:llama", "oracle"], group_limit=10)[1].frame
    fig = plots.violation_lines(long, "violations", paper=PAPER_VIOLATIONS)
    left, right = fig.axes
    for ax, col in ((left, "violated_pct"), (right, "tasks_violated_pct")):
        for source, part in long.groupby("source"):
            np.testing.assert_array_equal(_line(ax, source).get_ydata(), part[col])
        paper = _line(ax, "paper: LLaMA-3.3-70B")
        np.testing.assert_array_equal(paper.get_ydata(), PAPER_VIOLATIONS[col]["LLaMA-3.3-70B"])
        assert list(paper.get_xdata())[:3] == [0.0, 0.1, 0.2]
        simulated = _line(ax, "simulated-llm:llama")  # the simulated LLaMA and the paper's
        assert simulated.get_color() == paper.get_color() == palette.colour("LLaMA")
        assert (simulated.get_linestyle(), paper.get_linestyle()) == ("-", "--")
        gpt = _line(ax, "paper: GPT-4.1-mini")
        assert gpt.get_color() == palette.colour("simulated-llm:gpt") != paper.get_color()
        assert _line(ax, "oracle").get_color() == palette.colour("oracle")
    [legend] = fig.legends  # not over a curve: below both panels
    _legend_clear_of_the_panels(fig, legend)
    assert len(plots.violation_lines(long, "v").axes[0].get_lines()) == 2  # no paper rows


def test_results_bars_draw_negative_values_below_zero():
    df = pd.DataFrame(
        {
            "dataset": ["Ego4D", "HT-Step"],
            "method": ["gain"] * 2,
            "workbench": [-2.9, 5.6],
            "paper": [-1.9, 5.4],
        }
    )
    fig = plots.results_bars(df, "gains", ylabel="gain (points)")
    ax = fig.axes[0]
    assert [p.get_height() for p in ax.patches] == [-2.9, 5.6]
    low, high = ax.get_ylim()
    assert low < -2.9 and high > 5.6 and ax.get_ylabel() == "gain (points)"


def test_steps_lines_draw_the_table(obs):
    steps = breakdown_tables(obs, "oracle")[1].frame
    title = title_for("R@1 by number of candidate steps K", obs.label)
    fig = plots.steps_lines(steps, title)
    [ax] = fig.axes
    assert _text(ax.get_title()) == title and SIMULATED in title
    methods = ["off-the-shelf LMM", "BaGLM"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == methods
    for method in methods:
        rows = steps[steps["method"] == method].sort_values("num_steps")
        line = _line(ax, method)
        np.testing.assert_array_equal(line.get_xdata(), rows["num_steps"])
        np.testing.assert_array_equal(line.get_ydata(), rows["workbench"])
    first = steps[steps["method"] == methods[0]].sort_values("num_steps")
    assert [t.get_text() for t in ax.texts] == [str(n) for n in first["videos"]]
    assert ax.get_ylim() == (0, 100)


@pytest.mark.parametrize("style", ["lines", "heatmap"])
def test_belief_figure_updates_in_place(obs, style):
    video = load_dataset("htstep")[0]
    t = obs.vsg[video.uid].shape[0]
    fig = plots.BeliefFigure(video, t, style=style, blit=True)
    fig.update(obs.vsg[video.uid], obs.vsg[video.uid], "a")
    first = fig.png()
    fig.update(np.zeros_like(obs.vsg[video.uid]), obs.vsg[video.uid], "a")
    assert first[:8] == b"\x89PNG\r\n\x1a\n" and fig.png() != first
    with pytest.raises(ValueError, match="must be"):
        fig.update(obs.vsg[video.uid][:-1], obs.vsg[video.uid])
    other = load_dataset("htstep")[1]
    fig.set_video(other, obs.vsg[other.uid].shape[0])
    fig.update(obs.vsg[other.uid], obs.vsg[other.uid], "b")
    assert fig.png() != first


def test_keyframes_from_a_video_file(obs, tmp_path):
    video = load_dataset("htstep")[0]
    rows = obs.vsg[video.uid]
    times = plots.keyframe_times(rows, np.roll(rows, 1, axis=1), 3)
    assert len(times) == 3 and times == sorted(times)
    assert plots.keyframe_times(rows, rows, 2) == [
        rows.shape[0] // 4 + 0.5,
        3 * rows.shape[0] // 4 + 0.5,
    ]
    clip = ROOT / "tests" / "data" / "videos" / "cup.mp4"
    (tmp_path / f"{video.uid}.mp4").symlink_to(clip)
    path = find_video_file(tmp_path, video.uid)
    assert path is not None and find_video_file(None, video.uid) is None
    frames = frames_at(path, [0.5, 1e6], width=64)
    assert len(frames) == 2 and frames[0][1].ndim == 3 and frames[0][1].dtype == np.uint8
    fig = plots.belief_figure(video, rows, rows, title="t", keyframes=frames)
    out = plots.save_figure(fig, tmp_path / "q")
    assert all(p.stat().st_size > 0 for p in out)


def _bar_colours(ax) -> dict[str, str]:
    """The face colour of each legend entry's bars (a bar container per method)."""
    return {c.get_label(): to_hex(c.patches[0].get_facecolor()) for c in ax.containers}


def test_one_hue_per_method_across_the_bar_charts():
    from baglm_nb.analyses.results import main_results_table, oracle_table, transition_table

    obs = [from_simulation("htstep", limit=3)]
    main = plots.results_bars(main_results_table(obs).frame, "main").axes[0]
    transition = plots.results_bars(transition_table(obs).frame, "transition").axes[0]
    oracles = plots.results_bars(oracle_table(obs).frame, "oracles").axes[0]
    llms = {"LLaMA-3.3-70B": "simulated-llm:llama", "GPT-4.1-mini": "simulated-llm:gpt"}
    llm = plots.results_bars(llm_table(obs, llms).frame, "llm").axes[0]
    main_c, tr_c, or_c, llm_c = map(_bar_colours, (main, transition, oracles, llm))
    assert main_c == {
        "BaGLM": palette.COLOURS["baglm"],
        "off-the-shelf LMM": palette.COLOURS["off_the_shelf"],
    }
    # the full model is BaGLM's hue everywhere; no variant takes the off-the-shelf hue
    llama, gpt = llm_c["LLaMA-3.3-70B (simulated)"], llm_c["GPT-4.1-mini (simulated)"]
    assert tr_c["both"] == or_c["LLM D, LMM progress"] == llama == main_c["BaGLM"]
    assert main_c["off-the-shelf LMM"] not in set(tr_c.values()) | set(or_c.values())
    assert len(set(tr_c.values())) == 4 and len(set(or_c.values())) == 4
    assert or_c["oracle D, LMM progress"] == palette.colour("oracle")
    assert gpt == palette.colour("paper: GPT-4.1-mini")


def test_calibrated_bars_are_hatched_and_named_in_the_legend():
    from baglm_nb.analyses.results import main_results_table

    table = main_results_table([from_simulation("htstep", limit=3)]).frame
    ax = plots.results_bars(table, "main").axes[0]
    hatched = {c.get_label(): [p.get_hatch() for p in c.patches] for c in ax.containers}
    assert hatched == {"BaGLM": [None], "off-the-shelf LMM": [palette.CALIBRATED_HATCH]}
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[-1] == plots.CALIBRATED_LABEL
    from baglm_nb.analyses.ablations import prompt_table

    two = [from_simulation("htstep", limit=2), from_simulation("coin", limit=2)]
    prompt = prompt_table(two).frame
    fig = plots.results_bars(prompt, "prompt")  # long legend entries in a narrow figure
    fig.canvas.draw()
    box = fig.axes[0].get_legend().get_window_extent()
    assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1  # no entry cut off at the sides
    real = plots.results_bars(table.assign(source="lmm:internvl"), "main").axes[0]
    assert plots.CALIBRATED_LABEL not in [t.get_text() for t in real.get_legend().get_texts()]
    assert all(p.get_hatch() is None for p in real.patches)  # a real model is not calibrated


def test_localization_bars_draw_the_computed_rows_and_the_papers_ticks():
    from baglm_nb.analyses.localization import localization_table
    from baglm_nb.core import sources

    table = localization_table(sources.observations("htstep", limit=3)).frame
    ax = plots.localization_bars(table, "mAP").axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["@0.3", "@0.5", "@0.7", "@[0.3-0.7]"]
    computed = table[table["source"] == "simulated"]
    colours = _bar_colours(ax)
    assert set(colours) == {"off-the-shelf LMM", "+ BaGLM", "NaSVA (offline)"}  # no slot LMM
    assert colours["+ BaGLM"] == palette.colour("BaGLM")
    heights = [
        p.get_height() for c in ax.containers if c.get_label() == "+ BaGLM" for p in c.patches
    ]
    row = computed[computed["method"] == "+ BaGLM"].iloc[0]
    assert heights == [row[m] for m in ("@0.3", "@0.5", "@0.7", "@[0.3-0.7]")]
    assert [t.get_text() for t in ax.texts] == [plots.PAPER_ONLY_TEXT] * 4  # NaSVA
    ticks = np.concatenate([c.get_offsets()[:, 1] for c in ax.collections])
    assert 13.7 in ticks and 15.9 in ticks  # NaSVA's and BaGLM's paper @0.3


def test_palette_maps_every_label_of_a_method_to_one_hue():
    assert palette.key_of("paper: LLaMA-3.3-70B") == palette.key_of("simulated-llm:llama")
    assert palette.key_of("gain, D = simulated-llm:llama:held-out") == "held_out"
    assert palette.key_of("BaGLM gain (D=oracle)") == "oracle"
    assert palette.key_of("multiple choice (pi_VSG)") == "off_the_shelf"
    assert palette.key_of("something new") is None
    hues = palette.colours(["BaGLM", "x", "y", "x"])
    assert list(hues.values()) == [palette.COLOURS["baglm"], *palette.SPARE[:2]]
    assert len(set(palette.COLOURS.values())) == len(palette.COLOURS)  # one hue, one meaning


def _cielab(colour: str) -> np.ndarray:
    """sRGB (D65) to CIELAB, written out from the standard's formulas (a slow reference)."""
    from matplotlib.colors import to_rgb

    rgb = np.array(to_rgb(colour))
    linear = np.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = m @ linear / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def _delta_e(a: str, b: str) -> float:
    return float(np.linalg.norm(_cielab(a) - _cielab(b)))


#: Two hues this far apart in CIELAB (delta E 1976) are told apart at a glance.
APART = 20.0


def test_step_and_stage_hues_never_reuse_a_method_or_source_hue():
    from baglm_nb.analyses.belief_legend import HIT, MISS
    from baglm_nb.analyses.belief_views import step_colours
    from baglm_nb.analyses.palette import COLOURS, NONE_STATE, SPARE, STAGE_COLOURS, STEP_COLOURS

    methods = {c.lower() for c in (*COLOURS.values(), *SPARE)}
    steps = {c.lower() for c in STEP_COLOURS}
    stages = {c.lower() for c in STAGE_COLOURS.values()}
    assert len(steps) == len(STEP_COLOURS) and len(stages) == len(STAGE_COLOURS)
    assert not steps & methods and not stages & methods and not steps & stages
    for hue in (*steps, *stages):
        nearest = min(methods | {NONE_STATE}, key=lambda m: _delta_e(hue, m))
        assert _delta_e(hue, nearest) >= APART, (hue, nearest)
    for hue in steps:  # the strips beside the steps: right (green) / wrong (red)
        assert min(_delta_e(hue, HIT), _delta_e(hue, MISS)) >= APART, hue
    for i, a in enumerate(STEP_COLOURS):
        for b in STEP_COLOURS[:i]:
            assert _delta_e(a, b) >= APART, (a, b)
    # what the figures draw: the first steps' colours are the palette's, in order, none grey
    drawn = step_colours(12)
    from matplotlib.colors import to_hex

    assert [to_hex(c) for c in drawn[: len(STEP_COLOURS)]] == [c.lower() for c in STEP_COLOURS]
    assert to_hex(drawn[-1]) == NONE_STATE.lower() and len(drawn) == 13


def test_method_hues_are_apart_and_the_two_reds_are_two_hues():
    from baglm_nb.analyses.palette import COLOURS

    greys = {"none", "baseline"}  # no D and the paper's other methods: two greys
    keys = [k for k in COLOURS if k not in greys]
    for i, a in enumerate(keys):
        for b in keys[:i]:
            assert _delta_e(COLOURS[a], COLOURS[b]) >= APART, (a, b)

    def hue_deg(colour: str) -> float:
        _, a, b = _cielab(colour)
        return float(np.degrees(np.arctan2(b, a)) % 360)

    # 04's propagated prior and 03's "LLM D, oracle progress": not two shades of one red
    turn = abs(hue_deg(COLOURS["propagated"]) - hue_deg(COLOURS["oracle_progress"]))
    assert min(turn, 360 - turn) >= 30


def test_ink_on_reads_on_light_and_dark_backgrounds():
    from baglm_nb.analyses.palette import ink_on

    assert ink_on("#ffffff") == "black" and ink_on("#000000") == "white"
    assert ink_on("#ffd92f") == "black" and ink_on("#5511ff") == "white"
