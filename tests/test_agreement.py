"""What agrees with the paper by construction, and the lines that say where the simulation departs.

Checked on real tables of the simulated source (small limits) and on small hand-made tables whose
answer is known.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from baglm_nb.analyses import agreement
from baglm_nb.analyses.ablations import prompt_table
from baglm_nb.analyses.results import main_results_table
from baglm_nb.core.observations import from_simulation


def test_only_the_simulated_off_the_shelf_rows_are_calibrated():
    obs = [from_simulation("htstep", limit=3)]
    main = main_results_table(obs).frame
    assert agreement.calibrated_mask(main).tolist() == [False, True]  # BaGLM, off-the-shelf
    assert not agreement.calibrated_mask(main.assign(source="lmm:internvl")).any()
    assert not agreement.calibrated_mask(main.assign(paper=np.nan)).any()
    prompt = prompt_table(
        obs
    ).frame  # the multiple-choice row is the calibrated one; binary: a slot
    assert agreement.calibrated_mask(prompt).tolist() == [True, False]
    assert "agrees by construction" in agreement.calibration_note(main)
    assert agreement.calibration_note(main.iloc[:1]) is None
    assert agreement.is_simulated("simulated, float64") and not agreement.is_simulated("x")


def _duration(best: dict[str, int]) -> pd.DataFrame:
    rows = []
    for name, top in best.items():
        for d in (1, 2, 3):
            value = 60.0 - abs(d - top)
            rows.append(
                {
                    "dataset": name,
                    "source": "simulated",
                    "segment_duration": d,
                    "method": "BaGLM",
                    "workbench": value,
                }
            )
    return pd.DataFrame(rows)


def test_the_duration_note_names_where_the_simulation_is_not_best_at_2_s():
    note = agreement.duration_note(_duration({"HT-Step": 1, "CrossTask": 1, "Ego4D": 2}))
    assert note.startswith("Departs from the paper") and "at 1 s on HT-Step, CrossTask" in note
    assert "Ego4D" not in note and "visual cues" in note
    assert agreement.duration_note(_duration({"HT-Step": 2})) is None
    real = _duration({"HT-Step": 1}).assign(source="lmm:qwen")
    assert agreement.duration_note(real) is None  # a real model's curve is not judged


def test_the_localization_note_measures_the_gap():
    table = pd.DataFrame(
        {
            "source": ["simulated", "simulated", "paper"],
            "@[0.3-0.7]": [4.2, 4.6, None],
            "paper @[0.3-0.7]": [7.0, 7.7, 6.7],
        }
    )
    ratio = np.mean([4.2 / 7.0, 4.6 / 7.7])
    note = agreement.localization_note(table)
    assert f"{1 - ratio:.0%} below" in note and note.startswith("Departs")
    close = table.assign(**{"@[0.3-0.7]": [7.0, 7.6, None]})
    assert agreement.localization_note(close) is None


def test_the_oracle_violation_note_says_why_with_the_measured_share():
    long = pd.DataFrame(
        {
            "source": ["oracle"] * 2 + ["simulated-llm:llama"] * 2,
            "threshold": [0.0, 0.5] * 2,
            "violated_pct": [26.1, 23.0, 26.1, 8.2],
        }
    )
    note = agreement.oracle_violation_note(long)
    assert "23.0 %" in note and "the most of all sources" in note and "union" in note
    assert agreement.oracle_violation_note(long[long["source"] != "oracle"]) is None


def test_the_departure_note_lists_the_simulated_rows_far_from_the_paper():
    table = pd.DataFrame(
        {
            "dataset": ["HT-Step", "HT-Step", "Ego4D", "Ego4D"],
            "method": ["BaGLM", "off-the-shelf LMM"] * 2,
            "workbench": [61.6, 40.0, 53.1, 45.2],
            "paper": [57.4, 52.0, 43.3, 45.2],
            "source": "simulated",
        }
    )
    note = agreement.departure_note(table)
    # the calibrated off-the-shelf rows are not listed, even where far (limit: a subset)
    assert "HT-Step (BaGLM) +4.2; Ego4D (BaGLM) +9.8" in note and "off-the-shelf" not in note
    assert agreement.departure_note(table.assign(source="lmm:x")) is None
    assert agreement.departure_note(table, points=20) is None
