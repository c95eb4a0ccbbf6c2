"""Belief views (analyses.belief_views): what they draw, checked against the annotation files
and real simulated scores filtered by BaGLM.

The video ``-25-1nbOki0`` (HT-Step, K = 10, six annotated steps) is the one most tests draw.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from matplotlib.colors import to_hex
from PIL import Image

from baglm_nb.analyses import plots
from baglm_nb.analyses.belief_data import (
    annotated_intervals,
    announced_status,
    peak_hits,
    right_wrong,
    truth_index,
)
from baglm_nb.analyses.belief_legend import HIT, MISS
from baglm_nb.analyses.belief_views import BeliefFigure, belief_figure, step_colours
from baglm_nb.analyses.tables import title_for
from baglm_nb.core.evaluation import video_hits
from baglm_nb.core.observations import from_simulation
from baglm_nb.core.pipeline import run_baglm
from baglm_nb.inputs.datasets import load_dataset
from baglm_nb.inputs.grid import ground_truth

UID = "-25-1nbOki0"


def _case(dataset: str, uid: str):
    video = next(v for v in load_dataset(dataset) if v.uid == uid)
    obs = from_simulation(dataset, videos=[video])
    return video, run_baglm(obs, "oracle", videos=[video])[uid], obs.vsg[uid]


@pytest.fixture(scope="module")
def case():
    return _case("htstep", UID)


@pytest.fixture(scope="module")
def figure(case):
    video, beliefs, raw = case
    title = title_for(f"HT-Step {UID}: {video.goal}", "simulated")
    return belief_figure(video, beliefs, raw, title=title)


def _outlines(ax) -> set[tuple[int, float, float]]:
    """``(step, start, end)`` of the ground-truth outlines (or shaded spans) of a panel."""
    out = set()
    for collection in ax.collections:  # heatmaps: the outlines, one collection
        if collection.get_gid() == "truth":
            for path in collection.get_paths():
                (x0, y0), (x1, y1) = path.get_extents().get_points()
                step = int(round(y0 + 0.5)) if round(y1 - y0, 6) == 1.0 else None
                out.add((step, round(float(x0), 3), round(float(x1), 3)))
    for patch in ax.patches:
        if patch.get_gid() != "truth":
            continue
        x0, y0 = patch.get_xy() if hasattr(patch, "get_xy") else (patch.get_x(), patch.get_y())
        step = int(round(y0 + 0.5)) if patch.get_height() == 1.0 else None
        out.add((step, round(float(x0), 3), round(float(x0 + patch.get_width()), 3)))
    return out


def test_the_case_is_the_chosen_htstep_video(case):
    video, beliefs, raw = case
    assert video.num_steps == 10 and len({s.step_index for s in video.segments}) == 6
    assert beliefs.shape == raw.shape == (video.num_rows(), 11)


def test_heatmaps_have_a_row_per_step_and_none(figure, case):
    video, beliefs, raw = case
    assert figure.style == "heatmap" and figure.panels == ("baglm", "off_the_shelf")
    for name, values in (("baglm", beliefs), ("off_the_shelf", raw)):
        image = figure.artists[name][0]
        assert image.get_array().shape == (video.num_steps + 1, video.num_rows())  # K+1 rows
        np.testing.assert_array_equal(image.get_array(), values.T)
        labels = [t.get_text() for t in figure.axes[name].get_yticklabels()]
        assert len(labels) == 11 and labels[-1] == "none"
        for i, (label, step) in enumerate(zip(labels, video.steps, strict=False)):
            number, text = label.split(". ", 1)
            assert int(number) == i + 1
            assert step.startswith(text.rstrip("\u2026")), (label, step)
    # every full step text is in the legend table, unabbreviated
    legend = " ".join(" ".join(t.get_text().split()) for t in figure.figure.texts)
    for step in video.steps:
        assert " ".join(step.split()) in legend


def test_outlines_are_the_annotated_intervals(figure, case):
    video, _, _ = case
    expected = {(s.step_index, round(s.start, 3), round(s.end, 3)) for s in video.segments}
    assert len(expected) == 6
    for name in figure.panels:
        assert _outlines(figure.axes[name]) == expected
    # in the evaluation's per-second rows, each outline covers its step's ground truth
    y = ground_truth(video, video.num_rows())
    for step, start, end in expected:
        rows = np.flatnonzero(y[:, step])
        assert rows[0] == int(np.floor(start)) and rows[-1] == int(np.ceil(end))


def test_strips_are_the_truth_and_the_argmax(figure, case):
    video, beliefs, raw = case
    strips = {k: v.get_array()[0] for k, v in figure.strips.items()}
    assert set(strips) == {"truth", "baglm", "baglm:right", "off_the_shelf", "off_the_shelf:right"}
    np.testing.assert_array_equal(strips["baglm"], beliefs.argmax(axis=1))
    np.testing.assert_array_equal(strips["off_the_shelf"], raw.argmax(axis=1))
    truth = strips["truth"]
    for seg in video.segments:  # the annotated step inside each interval, none outside
        assert truth[int(np.ceil(seg.start)) + 1] == seg.step_index
    assert (truth[: int(min(s.start for s in video.segments))] == 10).all()
    y = ground_truth(video, video.num_rows())
    for name in ("baglm", "off_the_shelf"):
        top, right = strips[name], strips[f"{name}:right"]
        for t in range(0, len(top), 7):
            expect = y[t, top[t]] if y[t, :10].any() else top[t] == 10
            assert right[t] == expect
        assert 0 < right.mean() < 1
    # the strip's colours are the step colours (none: light grey)
    image = figure.strips["baglm"]
    colours = step_colours(10)
    for state in (0, 5, 10):
        np.testing.assert_allclose(image.cmap(image.norm(state)), colours[state])


def test_peaks_and_legend_follow_r1(figure, case):
    video, beliefs, raw = case
    for name, values in (("baglm", beliefs), ("off_the_shelf", raw)):
        steps, hits = video_hits(video, values)
        hit, miss = figure.markers[name]
        assert sorted(hit.get_ydata()) == sorted(steps[hits].tolist())
        assert sorted(miss.get_ydata()) == sorted(steps[~hits].tolist())
        best = values[:, steps].argmax(axis=0)
        np.testing.assert_array_equal(sorted(hit.get_xdata()), sorted(best[hits] + 0.5))
        for step, got in zip(steps, hits, strict=True):
            cell = figure.legend.cell(name, int(step))
            assert cell == ("\u2713 hit" if got else "\u2717 miss")
        unannotated = set(range(10)) - set(steps.tolist())
        assert all(figure.legend.cell(name, s) == "\u2013" for s in unannotated)
        # what is drawn: each cell's text, green for a hit, red for a miss
        drawn = figure.legend.cells[name]
        green = {s for s, t in drawn.items() if to_hex(t.get_color()) == HIT}
        red = {s for s, t in drawn.items() if to_hex(t.get_color()) == MISS}
        assert green == {int(s) for s, h in zip(steps, hits, strict=True) if h}
        assert red == {int(s) for s, h in zip(steps, hits, strict=True) if not h}
        assert all(drawn[s].get_text() == figure.legend.cell(name, s) for s in drawn)


def test_title_names_the_source(figure, case):
    assert "simulated observations, not a real model" in figure.title_text
    assert "simulated observations" in figure._title.get_text().replace("\n", " ")
    video, beliefs, raw = case
    other = belief_figure(video, beliefs, raw, title=title_for("x", "lmm:internvl3-8b"))
    assert "(observations: lmm:internvl3-8b)" in other.title_text


def test_lines_only_for_few_steps_or_on_demand(case):
    video, beliefs, raw = case
    coin = next(v for v in load_dataset("coin") if v.num_steps == 4)
    _, b4, r4 = _case("coin", coin.uid)
    few = belief_figure(coin, b4, r4)
    assert few.style == "lines" and len(few.artists["baglm"]) == 5  # 4 steps + none
    np.testing.assert_array_equal(few.artists["baglm"][2].get_ydata(), b4[:, 2])
    expected = {(round(s.start, 3), round(s.end, 3)) for s in coin.segments}
    assert {(a, b) for _, a, b in _outlines(few.axes["baglm"])} == expected
    assert belief_figure(video, beliefs, raw).style == "heatmap"
    lines = belief_figure(video, beliefs, raw, style="lines")
    assert lines.style == "lines" and len(lines.artists["off_the_shelf"]) == 11


def test_displays_and_saves_as_png(figure, tmp_path):
    from IPython.core.formatters import PNGFormatter

    png = PNGFormatter()(figure)  # what display(fig) puts into the notebook
    assert png is not None and png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = Image.open(io.BytesIO(png)).size
    assert width >= 1000 and height > 600
    paths = plots.save_figure(figure, tmp_path / "q")
    assert [p.suffix for p in paths] == [".png", ".pdf"]
    assert all(p.stat().st_size > 10_000 for p in paths)


def test_blitted_redraw_matches_a_full_draw(case):
    """The widget redraws only the data; the result must equal a full draw (outlines kept)."""
    video, beliefs, raw = case
    blit = BeliefFigure(video, len(beliefs), blit=True, dpi=60)
    blit.update(np.zeros_like(beliefs), np.zeros_like(raw), "t")
    blit.png()
    blit.update(beliefs, raw, "t")
    full = BeliefFigure(video, len(beliefs), dpi=60)
    full.update(beliefs, raw, "t")
    a = np.asarray(Image.open(io.BytesIO(blit.png())).convert("RGB"), dtype=int)
    b = np.asarray(Image.open(io.BytesIO(full.png())).convert("RGB"), dtype=int)
    assert a.shape == b.shape
    assert (np.abs(a - b).max(axis=2) > 40).mean() < 0.002
    orange = (np.abs(a - [255, 127, 0]).max(axis=2) < 40).sum()
    assert orange > 500  # the outlines are drawn over the heatmaps


def test_online_strip_and_a_task_without_ground_truth(case):
    video, beliefs, _ = case
    said = np.full(len(beliefs), 10)
    said[300:400] = 8  # "Add your chopped onions" (not annotated)
    said[100:104] = 5  # "Blend your tomatoes" inside its annotation (01:35-01:51)
    plot = BeliefFigure(video, len(beliefs), panels=("baglm",), announced=True)
    plot.update(beliefs, title="t", announced=said)
    np.testing.assert_array_equal(plot.strips["announced"].get_array()[0], said)
    status = announced_status(video, said)
    assert status[8] == "false" and status[5] == "hit" and status[9] == "missed"
    assert status[0] == "-"
    assert plot.legend.cell("announced", 8) == "\u2717 announced, not annotated"
    np.testing.assert_array_equal(
        plot.strips["announced:right"].get_array()[0], right_wrong(video, said)
    )
    bare = BeliefFigure(list(video.steps), len(beliefs), panels=("baglm",))
    bare.update(beliefs)
    assert not _outlines(bare.axes["baglm"]) and set(bare.strips) == {"baglm"}
    with pytest.raises(ValueError, match="off_the_shelf values"):
        BeliefFigure(video, len(beliefs)).update(beliefs)


def test_many_steps_show_numbers_and_the_annotated_steps():
    video = max(load_dataset("ego4d_goalstep"), key=lambda v: v.num_steps)
    rows = video.num_rows()
    values = np.full((rows, video.num_steps + 1), 1.0 / (video.num_steps + 1))
    plot = BeliefFigure(video, rows, panels=("baglm",))
    plot.update(values)
    annotated = sorted({s.step_index for s in video.segments})
    assert plot.legend.listed == annotated
    labels = [t.get_text() for t in plot.axes["baglm"].get_yticklabels()]
    assert all(label.isdigit() or label == "none" for label in labels if label)
    step = plot.row_step  # a long video: each drawn column is a block of rows
    assert rows > 2000 and step == int(np.ceil(rows / (2 * 7.85 * plot.dpi))) > 1
    truth = truth_index(video, rows)[::step]
    np.testing.assert_array_equal(truth, plot.strips["truth"].get_array()[0])
    values[step // 2 :: step, 3] = 0.9  # a one-row peak inside each block is still drawn
    plot.update(values)
    drawn = plot.artists["baglm"][0].get_array()
    assert drawn.shape == (video.num_steps + 1, len(truth)) and (drawn[3] == 0.9).all()
    assert set(peak_hits(video, values)) == set(annotated)


# --------------------------------------------------------------------------------------------
# time ticks and the caption (no duplicated mm:ss ticks; no caption describing outlines on a
# clip that has none)


@pytest.mark.parametrize(
    ("seconds", "ticks"),
    [
        (4, [0, 1, 2, 3, 4]),  # cup.mp4's clip: was 00:00, 00:00, 00:01, ... 00:04, 00:04
        (8, list(range(9))),
        (30, list(range(0, 31, 5))),
        (566, list(range(0, 541, 60))),  # -25-1nbOki0: each minute
        (3000, list(range(0, 3001, 300))),
        (20_000, list(range(0, 20_001, 1800))),
    ],
)
def test_time_ticks_are_distinct_whole_seconds(seconds, ticks):
    from matplotlib.ticker import MaxNLocator

    from baglm_nb.analyses.belief_legend import MMSS_STEPS, MMSSLocator, mmss

    assert MMSSLocator(12).tick_values(0, seconds) == ticks
    labels = [mmss(t) for t in ticks]
    assert len(set(labels)) == len(labels) <= 13 and ticks[1] - ticks[0] in MMSS_STEPS
    # the locator it replaced repeats labels on a short clip
    old = [mmss(t) for t in MaxNLocator(12).tick_values(0, 4)]
    assert len(set(old)) < len(old)


@pytest.mark.parametrize("rows", [4, 8, 566])
def test_the_drawn_time_axis_has_no_repeated_label(rows):
    """The strips' axis as rendered (a task without ground truth, as cup.mp4's report)."""
    steps = ["pick up the cup", "turn the cup", "put the cup down"]
    plot = BeliefFigure(steps, rows, panels=("baglm",), announced=True, legend=False)
    plot.update(np.full((rows, 4), 0.25), announced=np.full(rows, 3))
    plot.png()
    ax = plot.axes["strips"]
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert labels[0] == "00:00" and len(set(labels)) == len(labels) >= 5
    assert all(float(x).is_integer() for x in ax.get_xticks())


def _drawn(plot) -> dict[str, bool]:
    """What a one-panel view really draws: outlines, shaded spans, peak marks, truth strips."""
    ax = plot.axes["baglm"]
    truth = [a for a in (*ax.patches, *ax.collections) if a.get_gid() == "truth"]
    heat = plot.style == "heatmap"
    return {
        "outlines": heat and bool(truth),
        "shaded": not heat and bool(truth),
        "peaks": any(len(m.get_xdata()) for m in plot.markers["baglm"]),
        "right_wrong": any(name.endswith(":right") for name in plot.strips),
        "truth_strip": "truth" in plot.strips,
        "announced": "announced" in plot.strips,
    }


def test_the_caption_describes_only_what_is_drawn(case):
    """The report's caption (reading_guide) for each kind of view, checked against the artists
    of the figure it captions: no outlines, peaks or right/wrong strips mentioned where none
    are drawn, and the style (heatmap or lines) named as drawn."""
    from baglm_nb.analyses.belief_legend import reading_guide

    video, beliefs, _ = case
    coin = next(v for v in load_dataset("coin") if v.num_steps == 4)
    _, b4, _ = _case("coin", coin.uid)
    first = min(s.start for s in coin.segments)  # a clip that ends before any annotation
    views = [
        (video, beliefs),
        (list(video.steps), beliefs),
        (coin, b4),
        (list(coin.steps), b4),
        (coin, b4[: int(first) - 1]),
    ]
    for subject, values in views:
        plot = BeliefFigure(subject, len(values), panels=("baglm",), announced=True, legend=False)
        plot.update(values, announced=values.argmax(axis=1))
        drawn = _drawn(plot)
        inside = plot.video is not None and bool(annotated_intervals(plot.video, len(values)))
        text = reading_guide(
            plot.style, truth=plot.video is not None, announced=True, annotated=inside
        )
        assert drawn["outlines"] == ("orange outlines" in text)
        assert drawn["shaded"] == ("shaded spans" in text)
        assert drawn["peaks"] == ("white dot" in text) == inside
        assert drawn["truth_strip"] == (plot.video is not None)
        assert ("nothing is outlined" in text) == (not inside)
        assert drawn["right_wrong"] == ("right (green)" in text)
        assert ("darker: more probable" in text) == (plot.style == "heatmap")
        assert ("one line per step" in text) == (plot.style == "lines")
        assert drawn["announced"] and "announced after hysteresis" in text
        if plot.video is None:
            assert "No ground truth" in text and "annotat" not in text
    with pytest.raises(ValueError, match="style"):
        reading_guide("auto", truth=False, announced=False)


def _extent(artist, renderer):
    box = artist.get_window_extent(renderer)
    return box.y0, box.y1


@pytest.mark.parametrize("k", [38, 5])
def test_panel_titles_clear_the_panel_above(k):
    """At K = 38 (Ego4D) and K = 5, each panel's title lies between its panel and everything
    the panel above draws (its tick labels included), and a two-line title clears both."""
    video = next(
        v for v in load_dataset("ego4d_goalstep" if k == 38 else "htstep") if v.num_steps == k
    )
    rows = min(video.num_rows(), 600)
    values = np.full((rows, k + 1), 1.0 / (k + 1))
    plot = BeliefFigure(video, rows, style="heatmap", title_lines=2)
    plot.update(values, values, "first line of the title\nsecond line: D, settings")
    fig = plot.figure
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    upper, lower = plot.axes["baglm"], plot.axes["off_the_shelf"]
    titles = {
        ax: next(t for t in ax.texts if t.get_text() == plot.TITLES[ax.get_label()])
        for ax in (upper, lower)
    }
    t0, t1 = _extent(titles[lower], renderer)
    assert t0 >= _extent(lower, renderer)[1]  # above its own panel
    assert t1 < upper.get_tightbbox(renderer).y0  # below the panel above, with its labels
    f0, _ = _extent(plot._title, renderer)
    assert f0 > _extent(titles[upper], renderer)[1]  # the figure's two-line title clears it


def test_in_place_updates_draw_what_a_fresh_figure_draws(case):
    """A blitted figure (no title, as the explorer's) fed several results in turn: each render
    equals a full draw of a figure built afresh for that result, the legend's outcome cells
    (redrawn only where they changed) included."""
    video, beliefs, raw = case
    plot = BeliefFigure(video, len(beliefs), blit=True, dpi=60, title_lines=0)
    inputs = [(raw, beliefs), (beliefs, raw), (np.roll(beliefs, 40, axis=0), raw)]
    shown = []
    for baglm, lmm in inputs:
        plot.update(baglm, lmm)
        ours = np.asarray(plot.render()[..., :3], dtype=int)
        fresh = BeliefFigure(video, len(beliefs), dpi=60, title_lines=0)
        fresh.update(baglm, lmm)
        theirs = np.asarray(fresh.render()[..., :3], dtype=int)
        assert ours.shape == theirs.shape
        assert (np.abs(ours - theirs).max(axis=2) > 40).mean() < 0.002
        np.testing.assert_array_equal(
            plot.artists["baglm"][0].get_array(), fresh.artists["baglm"][0].get_array()
        )
        for name, strip in plot.strips.items():
            np.testing.assert_array_equal(strip.get_array(), fresh.strips[name].get_array())
        cells = {
            (c, s): t.get_text() for c, texts in plot.legend.cells.items() for s, t in texts.items()
        }
        assert cells == {
            (c, s): t.get_text()
            for c, texts in fresh.legend.cells.items()
            for s, t in texts.items()
        }
        shown.append(cells)
    assert shown[0] != shown[1]  # the legend's cells did change in between
    assert not plot.figure.texts[0].get_text().startswith("HT-Step")  # no title in the figure
