"""The paper's reported numbers, in one place: every table and figure reads them from here.

Values are copied from the paper's LaTeX source (``../shared/paper/``) and its appendix; the
setting is InternVL2.5-8B + LLaMA-3.3-70B with 2-s segments unless a table says otherwise.

Exports :data:`PAPER` (R@1 per table row and dataset) with :func:`paper_value`,
:data:`PAPER_STATS`, :data:`PAPER_POSITION`, :data:`PAPER_PROMPT_QUERIES`,
:data:`PAPER_TIMING`, :data:`PAPER_VIOLATIONS`, :data:`PAPER_LOCALIZATION` with
:func:`paper_model` (their datasets: :data:`PAPER_VIOLATIONS_DATASET`,
:data:`PAPER_LOCALIZATION_DATASET`), :data:`PAPER_BASELINES` (the other methods of Tab.
comparison and Tab. COIN), :data:`PAPER_COMPARISON_ORDER`, :data:`PAPER_LMM_NAMES` and
:data:`RERUN_MARK`.
"""

from __future__ import annotations

__all__ = [
    "PAPER",
    "PAPER_BASELINES",
    "PAPER_COMPARISON_ORDER",
    "PAPER_LMM_NAMES",
    "PAPER_LOCALIZATION",
    "PAPER_LOCALIZATION_DATASET",
    "PAPER_POSITION",
    "PAPER_PROMPT_QUERIES",
    "PAPER_STATS",
    "PAPER_TIMING",
    "PAPER_VIOLATIONS",
    "PAPER_VIOLATIONS_DATASET",
    "RERUN_MARK",
    "paper_model",
    "paper_value",
]

#: Reported in the paper (InternVL2.5-8B + LLaMA-3.3-70B, 2-s segments), in percent.
PAPER: dict[str, dict[str, float]] = {
    "baglm": {"htstep": 57.4, "crosstask": 59.8, "ego4d_goalstep": 43.3, "coin": 51.0},
    "off_the_shelf": {"htstep": 52.0, "crosstask": 54.3, "ego4d_goalstep": 45.2, "coin": 47.9},
    "static": {"htstep": 55.9, "crosstask": 58.0, "ego4d_goalstep": 42.1},
    "readiness": {"htstep": 57.0, "crosstask": 58.8, "ego4d_goalstep": 42.0},
    "validity": {"htstep": 56.4, "crosstask": 58.8, "ego4d_goalstep": 43.1},
    "both": {"htstep": 57.4, "crosstask": 59.8, "ego4d_goalstep": 43.3},
    "gpt-4.1-mini": {"htstep": 57.1, "crosstask": 60.9, "ego4d_goalstep": 40.6},
    "binary_prompt": {"htstep": 52.5, "crosstask": 56.0, "ego4d_goalstep": 41.8},
    "prior_next_step": {"htstep": 50.5, "crosstask": 52.6, "ego4d_goalstep": 28.1},
    "prior_propagated": {"htstep": 55.6, "crosstask": 57.3, "ego4d_goalstep": 39.9},
    "oracle_progress": {"htstep": 44.9, "crosstask": 38.6, "ego4d_goalstep": 36.0},
    "oracle_dependency": {"htstep": 54.6, "crosstask": 58.3, "ego4d_goalstep": 45.2},
    "oracle_both": {"htstep": 62.6, "crosstask": 66.9, "ego4d_goalstep": 82.2},
}

#: The mark of a value the paper's authors obtained by running the method's released code
#: (the paper's dagger) rather than from the method's own paper.
RERUN_MARK = "\u2020"

#: The other methods of Tab. comparison (HT-Step, Ego4D Goal-Step, CrossTask) and Tab. COIN,
#: R@1 in percent (CrossTask: Avg. R@1), in the paper's order: dataset -> ``(setting, method,
#: value, rerun)``, ``setting`` ``"offline"`` or ``"online"``, ``rerun`` True where the paper
#: marks the value with a dagger (:data:`RERUN_MARK`). BaGLM's and the off-the-shelf LMM's
#: values are in :data:`PAPER`.
PAPER_BASELINES: dict[str, tuple[tuple[str, str, float, bool], ...]] = {
    "htstep": (
        ("offline", "TAN*", 30.7, False),
        ("offline", "VINA", 39.1, False),
        ("offline", "NaSVA", 53.1, True),
        ("online", "NaSVA (online)", 46.1, True),
    ),
    "crosstask": (
        ("offline", "Zhukov et al.", 22.4, False),
        ("offline", "HT100M", 33.6, False),
        ("offline", "VideoCLIP", 33.9, False),
        ("offline", "MCN", 35.1, False),
        ("offline", "DWSA", 35.3, False),
        ("offline", "MIL-NCE", 40.5, False),
        ("offline", "VT-TWINS", 40.7, False),
        ("offline", "UniVL", 42.0, False),
        ("offline", "VINA", 44.8, False),
        ("offline", "NaSVA", 46.7, False),
        ("offline", "MPTVA", 47.9, False),
    ),
    "ego4d_goalstep": (
        ("offline", "VSLNet", 24.3, True),
        ("offline", "NaSVA", 29.1, True),
        ("online", "NaSVA (online)", 24.2, True),
    ),
    "coin": (
        ("offline", "NaSVA", 36.8, False),
        ("online", "NaSVA (online)", 32.1, False),
    ),
}

#: The order of the rows of Tab. htstep_ego4d_goalstep (HT-Step and Ego4D share it).
PAPER_COMPARISON_ORDER: tuple[str, ...] = ("VSLNet", "TAN*", "VINA", "NaSVA", "NaSVA (online)")

#: Display names of the LMMs of the paper's localization table, in its order.
PAPER_LMM_NAMES: dict[str, str] = {
    "llava-onevision-7b": "LLaVA-OV-7B",
    "qwen2.5-vl-7b": "Qwen2.5-VL-7B",
    "internvl3-8b": "InternVL3-8B",
    "internvl2.5-8b": "InternVL2.5-8B",
}

#: Dataset figures as the paper states them (text; "" where it gives none for this split).
PAPER_STATS: dict[str, dict[str, str]] = {
    "htstep": {
        "videos": "600",
        "tasks": "120",
        "mean_steps": "about 10",
        "mean_duration_s": "6 min",
        "mean_segment_s": "16 s",
    },
    "crosstask": {
        "videos": "about 4.8k (whole dataset)",
        "tasks": "18",
        "mean_steps": "7.5",
        "mean_duration_s": "< 5 min",
        "mean_segment_s": "10.7 s",
    },
    "ego4d_goalstep": {
        "videos": "851 (whole dataset)",
        "tasks": "",
        "mean_steps": "17",
        "mean_duration_s": "28 min",
        "mean_segment_s": "53 s",
    },
    "coin": {
        "videos": "2354 (of 2797 test)",
        "tasks": "180",
        "mean_steps": "",
        "mean_duration_s": "",
        "mean_segment_s": "",
    },
}


#: R@1 (%) per temporal-position bin on HT-Step (Tab. htstep_step_position), bins 0..4 from
#: early to late steps (position = first annotated start / video duration, five equal bins).
PAPER_POSITION: dict[str, dict[str, tuple[float, ...]]] = {
    "htstep": {
        "off_the_shelf": (53.6, 52.7, 54.6, 49.7, 49.3),
        "baglm": (56.1, 57.2, 60.2, 56.8, 56.6),
    },
}

#: LMM queries per segment of the two VSG prompts (Tab. prompt): one multiple-choice query, or
#: one yes/no query per candidate step.
PAPER_PROMPT_QUERIES: dict[str, str] = {"multiple_choice": "1", "binary": "K"}

#: Per-segment inference times stated in the paper (App. inference speed, one H100), for the
#: HT-Step video ``-25-1nbOki0`` (283 segments of 2 s, K = 10 steps), in seconds.
PAPER_TIMING: dict[str, float | str] = {
    "example_uid": "-25-1nbOki0",
    "example_num_steps": 10,
    "decode_s": 1.201,
    "vsg_s": 0.088,
    "progress_s": 0.814,
    "total_s": 2.1,
    "vsg_binary_s": 0.756,
}


#: The dataset of the paper's dependency-violation table (its values below are for it alone).
PAPER_VIOLATIONS_DATASET = "htstep"

#: Dependency violations on HT-Step (Tab. htstep_dependency_violations), in percent, at the
#: thresholds 0.0, 0.1, ..., 1.0 (D >= t): metric -> LLM -> one value per threshold. The
#: threshold-0 values depend on the annotations only (every pair is kept).
PAPER_VIOLATIONS: dict[str, dict[str, tuple[float, ...]]] = {
    "violated_pct": {
        "LLaMA-3.3-70B": (26.1, 8.6, 8.4, 8.4, 8.4, 8.4, 8.4, 8.3, 8.3, 8.1, 8.1),
        "GPT-4.1-mini": (26.1, 15.4, 12.5, 11.6, 10.8, 10.2, 9.6, 8.9, 8.2, 7.6, 0.0),
    },
    "tasks_violated_pct": {
        "LLaMA-3.3-70B": (100.0, 72.0, 71.3, 71.3, 69.3, 69.3, 69.3, 68.7, 68.7, 68.7, 68.7),
        "GPT-4.1-mini": (100.0, 74.0, 65.3, 64.0, 59.3, 54.0, 51.3, 48.0, 44.7, 42.0, 0.0),
    },
}


def paper_value(key: str, dataset: str) -> float:
    """The paper's reported value ``PAPER[key][dataset]``, NaN where it reports none."""
    return float(PAPER.get(key, {}).get(dataset, float("nan")))


#: The dataset of the paper's localization tables (its values below are for it alone).
PAPER_LOCALIZATION_DATASET = "htstep"

#: The paper's localization results on HT-Step, mAP (%) at tIoU (Tab. htstep_localization and
#: Tab. off_the_shelf_vs_baglm_localization). Keys: LMM short id (as in
#: ``baglm_nb.models.registry``), then ``off_the_shelf`` / ``baglm``; ``nasva`` is the offline
#: competitor (softmax over steps).
PAPER_LOCALIZATION: dict[str, dict[str, dict[str, float]]] = {
    "llava-onevision-7b": {
        "off_the_shelf": {"@0.3": 14.1, "@0.5": 5.5, "@0.7": 1.3, "@[0.3-0.7]": 6.6},
        "baglm": {"@0.3": 14.7, "@0.5": 5.8, "@0.7": 1.5, "@[0.3-0.7]": 6.9},
    },
    "qwen2.5-vl-7b": {
        "off_the_shelf": {"@0.3": 15.5, "@0.5": 6.1, "@0.7": 1.4, "@[0.3-0.7]": 7.3},
        "baglm": {"@0.3": 15.8, "@0.5": 6.6, "@0.7": 1.7, "@[0.3-0.7]": 7.7},
    },
    "internvl3-8b": {
        "off_the_shelf": {"@0.3": 15.6, "@0.5": 5.8, "@0.7": 1.4, "@[0.3-0.7]": 7.2},
        "baglm": {"@0.3": 17.5, "@0.5": 6.5, "@0.7": 1.6, "@[0.3-0.7]": 8.1},
    },
    "internvl2.5-8b": {
        "off_the_shelf": {"@0.3": 15.0, "@0.5": 6.0, "@0.7": 1.3, "@[0.3-0.7]": 7.0},
        "baglm": {"@0.3": 15.9, "@0.5": 6.7, "@0.7": 1.5, "@[0.3-0.7]": 7.7},
    },
    "nasva": {"offline": {"@0.3": 13.7, "@0.5": 6.0, "@0.7": 1.4, "@[0.3-0.7]": 6.7}},
}

_MODEL_ALIASES = {
    "llava-onevision-qwen2-7b-ov": "llava-onevision-7b",
    "llava-hf/llava-onevision-qwen2-7b-ov-hf": "llava-onevision-7b",
    "lmms-lab/llava-onevision-qwen2-7b-ov": "llava-onevision-7b",
    "qwen/qwen2.5-vl-7b-instruct": "qwen2.5-vl-7b",
    "opengvlab/internvl2_5-8b": "internvl2.5-8b",
    "opengvlab/internvl3-8b": "internvl3-8b",
    "opengvlab/internvl3-8b-hf": "internvl3-8b",
}


def paper_model(source: str) -> str:
    """The LMM key of :data:`PAPER_LOCALIZATION` for an observation label.

    ``"simulated"`` maps to InternVL2.5-8B (the simulation is calibrated to its R@1);
    ``"<source>:<model>"`` (optionally followed by ``", <precision>"``) to the model, through
    a few aliases; unknown models map to themselves.
    """
    source = source.split(",", 1)[0]  # drop a recorded precision ("..., float32-published")
    if source == "simulated":
        return "internvl2.5-8b"
    model = source.split(":", 1)[1] if ":" in source else source
    return _MODEL_ALIASES.get(model.lower(), model.lower())
