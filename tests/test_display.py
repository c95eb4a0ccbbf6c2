"""What the notebooks show (analyses.display): tables in full, figures saved and shown inline."""

from __future__ import annotations

import html
import re

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from baglm_nb.analyses import display as shown
from baglm_nb.analyses.ablations import llm_table, prompt_table, sensitivity_table
from baglm_nb.analyses.display import MISSING, format_cells, show_figure, show_table
from baglm_nb.analyses.localization import DETECTION_CHOICES
from baglm_nb.analyses.plots import results_bars
from baglm_nb.analyses.results import dataset_table, main_results_table
from baglm_nb.core.observations import from_simulation


@pytest.fixture(scope="module")
def observations():
    return [from_simulation("htstep", limit=5), from_simulation("crosstask", limit=5)]


def body_rows(page: str) -> list[list[str]]:
    """The cell texts of each row of the table body of an HTML table."""
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    rows = re.findall(r"<tr>(.*?)</tr>", body, flags=re.S)
    return [[html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)] for r in rows]


def header(page: str) -> list[str]:
    head = page.split("<thead>", 1)[1].split("</thead>", 1)[0]
    return [html.unescape(c) for c in re.findall(r"<th[^>]*>(.*?)</th>", head, re.S)]


def test_dataset_statistics_print_counts_as_integers():
    table = dataset_table()  # 4 datasets x 5 statistics
    view = show_table(table, "Dataset statistics")
    rows = body_rows(view._repr_html_())
    assert len(rows) == 20 and header(view._repr_html_()) == list(table.frame.columns)
    cells = {(r[0], r[1]): r[2:] for r in rows}
    assert cells[("HT-Step", "videos")] == ["600", "600"]
    assert cells[("COIN", "videos")] == ["2354", "2354 (of 2797 test)"]
    assert cells[("CrossTask", "tasks")] == ["18", "18"]
    assert cells[("HT-Step", "mean_steps")] == ["10.13", "about 10"]
    assert cells[("COIN", "mean_steps")] == ["4.36", MISSING]  # the paper states none
    assert not any(re.fullmatch(r"\d+\.0+", r[2]) for r in rows)
    assert "600.0" not in repr(view) and "Dataset statistics" in repr(view)


def test_slot_notes_are_shown_in_full(observations):
    table = llm_table(observations, {"LLaMA-3.3-70B": {}, "GPT-4.1-mini": {}})
    page = show_table(table, "LLM ablation")._repr_html_()
    rows = body_rows(page)
    notes = [r[header(page).index("note")] for r in rows]
    assert notes == table.frame["note"].tolist()  # every note whole, e.g. the cache it needs
    assert notes[0] == "slot: pass a LLaMA-3.3-70B dependency source (02_dependencies) for htstep"
    assert [r[header(page).index("workbench")] for r in rows] == [MISSING] * 4
    assert "..." not in page and "\u2026" not in page
    assert notes[0] in repr(show_table(table))  # the text form is whole too


def test_one_missing_marker_and_no_index(observations):
    prompt = prompt_table(observations).frame  # slot rows: NaN workbench; note "" elsewhere
    mixed = pd.DataFrame({"paper": [1.5, None, np.nan], "n": pd.array([1, None, 3], "Int64")})
    both = pd.concat([prompt, prompt])  # a repeated index 0..3, 0..3
    cells = format_cells(both)
    words = [shown.header(c) for c in prompt.columns]  # "queries_per_segment" in words
    assert list(cells.columns) == words and "queries / segment" in words and len(cells) == 8
    assert (cells.loc[cells["method"].str.startswith("binary"), "workbench"] == MISSING).all()
    assert (cells.loc[cells["method"].str.startswith("multiple"), "note"] == MISSING).all()
    assert format_cells(mixed).to_dict("list") == {
        "paper": ["1.5", MISSING, MISSING],
        "n": ["1", MISSING, "3"],
    }
    for bad in ("nan", "None", "NaN", "<NA>"):
        assert not (cells == bad).any().any()
    page = show_table(both)._repr_html_()
    assert len(body_rows(page)) == 8 and header(page) == words


def test_a_meaningful_index_becomes_a_column():
    cells = format_cells(pd.Series(DETECTION_CHOICES, name="choice"))
    assert list(cells.columns) == ["index", "choice"]
    assert cells["index"].tolist() == list(DETECTION_CHOICES)
    assert cells["choice"].tolist() == list(DETECTION_CHOICES.values())  # not cut
    named = pd.DataFrame({"s": [1.25]}, index=pd.Index(["v1"], name="video_uid"))
    assert format_cells(named).to_dict("list") == {"video_uid": ["v1"], "s": ["1.25"]}


def test_float_columns_share_the_decimals_they_need():
    table = sensitivity_table("htstep", [0.5, 1.244], limit=4, with_calibrated=False).frame
    cells = format_cells(table)
    assert cells["signal"].tolist() == ["0.500", "1.244"]
    assert all(re.fullmatch(r"\d+\.\d", v) for v in cells["BaGLM"])  # R@1: one decimal
    assert cells["videos"].tolist() == ["4", "4"]
    assert format_cells(pd.DataFrame({"x": [22.966867, 1.0]}))["x"].tolist() == ["22.967", "1.000"]


def test_long_tables_show_every_row_up_to_the_limit(observations):
    items = main_results_table(observations).items  # one row per (video, step) and method
    assert 60 < len(items) < shown.MAX_ROWS
    page = show_table(items, "items")._repr_html_()
    assert len(body_rows(page)) == len(items) and "items" in page
    rows = body_rows(page)
    assert [r[list(items.columns).index("video_uid")] for r in rows] == items["video_uid"].tolist()
    longer = pd.concat([items] * 3)
    view = show_table(longer, "T")
    assert len(body_rows(view._repr_html_())) == shown.MAX_ROWS
    assert f"the first {shown.MAX_ROWS} of {len(longer)} rows" in view.caption


def test_show_figure_saves_and_shows_the_same_png(observations, tmp_path, monkeypatch):
    import IPython.display

    shown_objects = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown_objects.append(obj))
    table = main_results_table(observations).frame
    fig = results_bars(table, "Main results")
    assert plt.fignum_exists(fig.number)
    assert show_figure(fig, tmp_path / "main_results") is None
    [image] = shown_objects
    png = (tmp_path / "main_results.png").read_bytes()
    assert image.data == png and image.format == "png"
    assert image.width == round(fig.get_figwidth() * 100)
    assert (tmp_path / "main_results.pdf").stat().st_size > 0
    assert not plt.fignum_exists(fig.number)  # closed: the inline backend shows it no more


def test_no_minus_zero_and_headers_in_words():
    table = pd.DataFrame(
        {"gain_difference": [-0.0, -0.04, -1.5], "paper_off_the_shelf": [52.0] * 3}
    )
    cells = format_cells(table)
    assert list(cells.columns) == ["gain \u2212 paper gain", "paper: off-the-shelf"]
    assert cells["gain \u2212 paper gain"].tolist() == ["0.00", "-0.04", "-1.50"]
    assert format_cells(pd.DataFrame({"x": [-0.0, 0.04]}))["x"].tolist() == ["0.00", "0.04"]
    assert format_cells(pd.DataFrame({"x": [-0.04, 1.0]}).round(1))["x"].tolist() == ["0.0", "1.0"]
    page = show_table(table)._repr_html_()
    assert ">-0.00<" not in page and ">0.00<" in page and "gain_difference" not in page
    assert "snake_case" == shown.header("snake_case")  # a name not listed stays as it is


def test_a_note_is_shown_under_the_table_and_the_figure(tmp_path, monkeypatch):
    import IPython.display

    view = show_table(pd.DataFrame({"a": [1]}), "T", note="Departs from the paper: <why>")
    page = view._repr_html_()
    assert page.index("</table>") < page.index("Departs from the paper: &lt;why&gt;")
    assert repr(view).endswith("Departs from the paper: <why>")
    assert "baglm-note" not in show_table(pd.DataFrame({"a": [1]}))._repr_html_()
    shown_objects = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown_objects.append(obj))
    fig, ax = plt.subplots()
    show_figure(fig, tmp_path / "f", note="calibrated")
    image, note = shown_objects
    assert image.format == "png" and "calibrated" in note._repr_html_()
