"""Figures: small matplotlib functions that take tables and return a Figure."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use(os.environ.get("MPLBACKEND", "Agg"))
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = ["results_bars", "save_figure"]


def results_bars(df: pd.DataFrame, title: str, group: str = "dataset", bar: str = "method"):
    """Grouped bars of the workbench's numbers, with the paper's values as black ticks.

    ``df`` has the columns ``group``, ``bar``, ``workbench`` and ``paper`` (NaN where the paper
    reports nothing).
    """
    groups = list(dict.fromkeys(df[group]))
    bars = list(dict.fromkeys(df[bar]))
    width = 0.8 / len(bars)
    fig, ax = plt.subplots(figsize=(1.6 + 1.6 * len(groups), 3.6))
    for b_i, name in enumerate(bars):
        sub = df[df[bar] == name].set_index(group).reindex(groups)
        x = np.arange(len(groups)) + (b_i - (len(bars) - 1) / 2) * width
        ax.bar(x, sub["workbench"].astype(float), width, label=str(name))
        paper = pd.to_numeric(sub["paper"], errors="coerce")
        ax.scatter(x, paper, marker="_", s=300, color="black", zorder=3,
                   label="paper" if b_i == 0 else None)  # fmt: skip
    ax.set_xticks(np.arange(len(groups)), groups)
    ax.set_ylabel("R@1 (%)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


def save_figure(fig, stem: str | os.PathLike) -> list[Path]:
    """Save ``fig`` as ``<stem>.png`` and ``<stem>.pdf``; returns the paths."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".pdf")]
    for path in paths:
        fig.savefig(path, dpi=150)
    return paths
