"""Qualitative belief plots behind notebook 08 (Fig. qualitative): one video at a time.

Exports :func:`qualitative_case`: the video's belief views
(:class:`~baglm_nb.analyses.belief_views.BeliefFigure`) and a one-row table of its per-video
R@1 (BaGLM and the off-the-shelf model) with its (video, step) items
(:class:`~baglm_nb.analyses.result_table.ResultTable`); stack the rows of several videos with
:meth:`~baglm_nb.analyses.result_table.ResultTable.concat`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from baglm_nb.analyses.result_table import ResultTable
from baglm_nb.analyses.tables import DATASET_NAMES, METHOD_NAMES, TableBuilder, title_for
from baglm_nb.core import sources
from baglm_nb.core.evaluation import pair_hits
from baglm_nb.core.pipeline import run_baglm
from baglm_nb.inputs.datasets import load_dataset

__all__ = ["qualitative_case"]


def qualitative_case(
    dataset: str,
    uid: str,
    *,
    scores: Mapping[str, str | os.PathLike] | None = None,
    deps: sources.DependencySource = sources.SIMULATED_LLM,
    video_dir: str | os.PathLike | None = None,
    keyframes: int = 4,
    style: str = "heatmap",
) -> tuple[Any, ResultTable]:
    """One video's belief views (Fig. qualitative) and its row.

    Observations come from ``scores[dataset]`` when given, else the simulation; ``deps`` is a
    deps setting (default ``simulated-llm:llama``, the tables' D; ``"none"`` when it has no
    source for ``dataset``), named in the figure's title and the row's ``D`` column. Keyframes
    are decoded from ``<video_dir>/<uid>.<ext>`` at the times
    :func:`~baglm_nb.analyses.belief_data.keyframe_times` picks, when that file exists.
    ``style`` is the panels' style (:class:`~baglm_nb.analyses.belief_views.BeliefFigure`):
    heatmaps unless ``"lines"`` (or ``"auto"``) is asked for.

    Returns
    -------
    (BeliefFigure, ResultTable)
        The figure (it displays as a PNG in a notebook; save it with
        :func:`~baglm_nb.analyses.plots.save_figure`) and a one-row table ``dataset, video,
        task, K, baglm, off_the_shelf, keyframes, D, source`` (per-video R@1 in percent: the flat
        mean over the video's evaluable steps) with the video's pairs of both methods as items.
    """
    from baglm_nb.analyses.belief_views import belief_figure, keyframe_times
    from baglm_nb.inputs.video_records import find_video_file

    video = next((v for v in load_dataset(dataset) if v.uid == uid), None)
    if video is None:
        raise KeyError(f"video {uid!r} is not in {dataset}")
    obs = sources.observations(dataset, scores or {}, videos=[video])
    if uid not in obs.vsg:
        raise KeyError(f"video {uid!r} is not in the score cache {scores[dataset]}")
    d = sources.dependencies(dataset, deps)
    beliefs = run_baglm(obs, "none" if d is None else d, videos=[video])[uid]
    raw = obs.vsg[uid]
    path = find_video_file(video_dir, uid)
    frames = None
    if path:  # torch and torchcodec only where a keyframe is decoded
        from baglm_nb.inputs.video import frames_at

        frames = frames_at(path, keyframe_times(beliefs, raw, keyframes))
    name = DATASET_NAMES.get(dataset, dataset)
    d_label = d.label if d is not None else "none"
    what = f"{name} {uid}: {video.goal}; D: {d_label}"
    title = title_for(what, obs.label)
    fig = belief_figure(video, beliefs, raw, title=title, keyframes=frames, style=style)
    runs = {"baglm": beliefs, "off_the_shelf": raw}
    hits = {key: pair_hits(dataset, {uid: rows}, [video]) for key, rows in runs.items()}
    r1 = {k: round(float(h["hit"].mean() * 100), 1) if len(h) else np.nan for k, h in hits.items()}
    table = TableBuilder()
    table.row(
        {
            "dataset": name,
            "video": uid,
            "task": video.goal,
            "K": video.num_steps,
            "baglm": r1["baglm"],
            "off_the_shelf": r1["off_the_shelf"],
            "keyframes": len(frames) if frames else 0,
            "D": d_label,
            "source": obs.label,
        }
    )
    for key, h in hits.items():
        table.item(h, dataset=name, method=METHOD_NAMES[key], source=obs.label)
    return fig, table.result()
