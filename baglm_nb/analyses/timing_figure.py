"""The per-segment timing figure of notebook 07: a run measured here beside the paper's numbers.

Two panels on one seconds axis. Left: the mean seconds per segment of each stage (decoding and
preprocessing, VSG scores, progress scores) of a run measured here, one stacked bar per
number of steps K (:func:`baglm_nb.analyses.timing.timing_summary`), its source in the panel
title (``random-init`` for a tiny random model: the mechanics' times, not a real LMM's).
Right: the paper's numbers for its example video (``-25-1nbOki0``, K = 10, InternVL2.5-8B on
one H100; App. inference speed), hatched and marked "paper only: not run here". A dashed line
marks real time (one segment's duration) on both.

Exports :data:`STAGE_STYLE` and :func:`timing_figure`.
"""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from baglm_nb.analyses.palette import STAGE_COLOURS
from baglm_nb.inputs.paper import PAPER_TIMING
from baglm_nb.inputs.variants import SEGMENT_DURATION

__all__ = ["STAGE_STYLE", "timing_figure"]

#: Each timed stage's label and colour, in stacking order (the same in both panels).
#: The colours are the palette's stage hues (:data:`~baglm_nb.analyses.palette.STAGE_COLOURS`).
STAGE_STYLE: dict[str, tuple[str, str]] = {
    "decode_s": ("decoding + preprocessing", STAGE_COLOURS["decode"]),
    "vsg_s": ("VSG scores", STAGE_COLOURS["vsg"]),
    "progress_s": ("progress scores", STAGE_COLOURS["progress"]),
}


def _stack(ax, x: np.ndarray, values: dict[str, np.ndarray], hatch: str | None = None) -> None:
    bottom = np.zeros(len(x))
    for stage, v in values.items():
        label, colour = STAGE_STYLE.get(stage, (stage.removesuffix("_s"), "#bbbbbb"))
        ax.bar(
            x,
            v,
            bottom=bottom,
            width=0.6,
            color=colour,
            hatch=hatch,
            edgecolor="white",
            label=label,
        )
        bottom += v
    for xi, total in zip(x, bottom, strict=True):
        ax.text(xi, total, f"{total:.2f} s", ha="center", va="bottom", fontsize=8)


def timing_figure(
    summary: pd.DataFrame, source: str, title: str, segment_duration: float = SEGMENT_DURATION
):
    """Stacked seconds per segment by stage: this run (by K) beside the paper's example.

    Parameters
    ----------
    summary : DataFrame
        :func:`baglm_nb.analyses.timing.timing_summary` of the run (one row per K).
    source : str
        The run's observation label (e.g. ``lmm:random-init/internvl-h64-l2-seed0``).
    title : str
        The figure's title.
    segment_duration : float
        Seconds per segment: the real-time line.
    """
    stages = [s for s in STAGE_STYLE if s in summary.columns]
    stages += [c for c in summary.columns if c.endswith("_s") and c not in (*stages, "total_s")]
    ratios = [max(len(summary), 1) + 1, 2]
    fig, (run, paper) = plt.subplots(
        1, 2, figsize=(9, 3.8), sharey=True, gridspec_kw={"width_ratios": ratios}
    )
    x = np.arange(len(summary))
    _stack(run, x, {s: summary[s].fillna(0).to_numpy(dtype=float) for s in stages})
    run.set_xticks(x, [f"K = {k}" for k in summary["num_steps"]])
    n = int(summary["segments"].sum())
    what = f"measured here: {source}, {n} segments"
    if "random-init" in source:
        what += " (a tiny random model: the mechanics' times, not a real LMM's)"
    run.set_title(textwrap.fill(what, 60), fontsize=8.5)
    ex = {s: np.array([float(PAPER_TIMING[s])]) for s in STAGE_STYLE if s in PAPER_TIMING}
    _stack(paper, np.zeros(1), ex, hatch="//")
    paper.set_xticks([0], [f"K = {PAPER_TIMING['example_num_steps']}"])
    paper.set_title(
        f"paper only (not run here): {PAPER_TIMING['example_uid']},\n"
        "InternVL2.5-8B, one H100 (App. inference speed)",
        fontsize=8.5,
    )
    run.set_xlim(-0.8, len(summary) - 0.2)
    paper.set_xlim(-0.8, 0.8)
    for ax in (run, paper):
        ax.axhline(segment_duration, color="black", ls="--", lw=1, label="real time (segment)")
        ax.tick_params(labelsize=8)
    top = max(run.get_ylim()[1], paper.get_ylim()[1], segment_duration * 1.25)
    run.set_ylim(0, top * 1.08)
    run.set_ylabel("seconds per segment (mean)", fontsize=8.5)
    handles, labels = run.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    fig.suptitle(textwrap.fill(title, 110), fontsize=9.5)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig
