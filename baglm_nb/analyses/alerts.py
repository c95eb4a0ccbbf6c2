"""How well the alerts find injected mistakes: the alert table (simulated observations).

For each dataset, the first ``limit`` videos (annotation order) are simulated three times: as
annotated, with a Skip and with a Swap injected (:mod:`baglm_nb.analyses.mistakes`; the
simulation draws from the edited ground truth). Each simulated video goes through ``follow``'s
online path (:class:`~baglm_nb.core.online.OnlineGrounder`, per segment, its hysteresis) and
the alert rules (:class:`~baglm_nb.core.alerts.AlertMonitor`), with the D of the *annotated*
video (``oracle``: its own chain; a simulated LLM: its task group's matrix): D describes the
procedure, the mistake is the person's.

Measures (also in ``docs/alerts.md``), per dataset, D and mistake kind:

- ``detection_pct``: the share of edited videos with a *detection*, an alert whose missing step
  is the removed (Skip) or swapped prerequisite j (Swap: j now comes after k), raised at or
  after the dependent step k's first start in the edited video;
- ``delay_median_s`` / ``delay_p90_s``: the first detection's time (its segment's end) minus
  k's first start, over the detected videos;
- ``false_alerts_per_video``: alerts of either kind per *unedited* video (the annotation has
  no injected mistake, so every alert there counts as false).

Exports :data:`ALERT_DEPS`, :func:`video_alerts` and :func:`alert_table`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from baglm_nb.analyses.mistakes import MISTAKE_KINDS, MISTAKE_SEED, Mistake, mistakes_of
from baglm_nb.analyses.result_table import ResultTable
from baglm_nb.analyses.tables import DATASET_NAMES
from baglm_nb.core import sources
from baglm_nb.core.alerts import DEFAULT_THRESHOLD, DONE_LEVEL, Alert, AlertMonitor
from baglm_nb.core.online import OnlineGrounder
from baglm_nb.core.simulate import LABEL, SimulationParams, default_params, simulate_video
from baglm_nb.inputs.datasets import DATASETS, Video, load_dataset
from baglm_nb.inputs.progress import bar_options
from baglm_nb.inputs.variants import SEGMENT_DURATION

__all__ = ["ALERT_DEPS", "alert_table", "video_alerts"]

#: The dependency sources the alert table compares.
ALERT_DEPS = ("oracle", "simulated-llm:llama", "simulated-llm:gpt")

_COLUMNS = [
    "dataset",
    "mistake",
    "D",
    "videos",
    "detected",
    "detection_pct",
    "delay_median_s",
    "delay_p90_s",
    "unedited_videos",
    "false_alerts_per_video",
    "source",
]


def video_alerts(
    video: Video,
    vsg: np.ndarray,
    progress: np.ndarray,
    dependency: np.ndarray,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    done_level: float = DONE_LEVEL,
    hysteresis: tuple[float, int] = (0.5, 2),
    segment_duration: int = SEGMENT_DURATION,
) -> list[Alert]:
    """The alerts ``follow`` raises on one video's per-segment scores (end of video included).

    ``vsg`` (S, K+1) and ``progress`` (S, K, 10) are per segment; ``hysteresis`` is
    ``(threshold, patience)`` of the announcements (``follow``'s defaults).
    """
    grounder = OnlineGrounder(
        None,
        video.goal,
        video.steps,
        dependency,
        segment_duration=segment_duration,
        threshold=hysteresis[0],
        patience=hysteresis[1],
    )
    monitor = AlertMonitor(
        dependency,
        video.steps,
        threshold=threshold,
        done_level=done_level,
        segment_duration=segment_duration,
    )
    out: list[Alert] = []
    for s in range(len(vsg)):
        out += monitor.feed(grounder.push_scores(vsg[s], progress[s]))
    return out + monitor.finish()


def _detection(mistake: Mistake, alerts: Sequence[Alert]) -> float | None:
    """The delay (s) of the first alert naming the mistake's step, or None."""
    times = [a.t for a in alerts if a.missing == mistake.step and a.t >= mistake.dependent_start]
    return min(times) - mistake.dependent_start if times else None


def _scores(video: Video, params) -> tuple[np.ndarray, np.ndarray]:
    sim = simulate_video(video, params)
    return sim.vsg, sim.progress


def _dataset_items(
    dataset: str,
    deps: Sequence[str],
    limit: int | None,
    params: SimulationParams,
    kw: dict,
    seed: int,
    show_progress: bool,
) -> pd.DataFrame:
    """One row per (video, mistake kind or ``none``, D): what the alerts did on it."""
    every = load_dataset(dataset)
    videos = sources.select_videos(dataset, limit, videos=every)
    resolved = {name: sources.dependencies(dataset, name) for name in deps}
    cases = [("none", v, None) for v in videos]
    for kind in MISTAKE_KINDS:
        cases += [(kind, m.video, m) for m in mistakes_of(videos, kind, seed=seed, groups=every)]
    rows = []
    bar = tqdm(
        cases,
        desc=f"alerts {dataset} ({LABEL})",
        unit="video",
        disable=not show_progress,
        **bar_options(),
    )
    for kind, video, mistake in bar:
        vsg, progress = _scores(video, params)
        original = video if mistake is None else mistake.original
        for source in resolved.values():
            alerts = video_alerts(video, vsg, progress, source.matrix(original), **kw)
            delay = None if mistake is None else _detection(mistake, alerts)
            rows.append(
                {
                    "dataset": DATASET_NAMES.get(dataset, dataset),
                    "mistake": kind,
                    "D": source.label,
                    "video_uid": video.uid,
                    "step_index": -1 if mistake is None else mistake.step,
                    "dependent_index": -1 if mistake is None else mistake.dependent,
                    "alerts": len(alerts),
                    "detected": delay is not None,
                    "delay_s": np.nan if delay is None else delay,
                }
            )
    return pd.DataFrame(rows)


def _summary_rows(items: pd.DataFrame) -> list[dict]:
    rows = []
    for (dataset, label), part in items.groupby(["dataset", "D"], sort=False):
        clean = part[part["mistake"] == "none"]
        false = float(clean["alerts"].mean()) if len(clean) else np.nan
        for kind in MISTAKE_KINDS:
            edited = part[part["mistake"] == kind]
            delays = edited.loc[edited["detected"], "delay_s"].to_numpy()
            rows.append(
                {
                    "dataset": dataset,
                    "mistake": kind,
                    "D": label,
                    "videos": len(edited),
                    "detected": int(edited["detected"].sum()),
                    "detection_pct": round(100 * edited["detected"].mean(), 1)
                    if len(edited)
                    else np.nan,
                    "delay_median_s": round(float(np.median(delays)), 1) if len(delays) else np.nan,
                    "delay_p90_s": round(float(np.percentile(delays, 90)), 1)
                    if len(delays)
                    else np.nan,
                    "unedited_videos": len(clean),
                    "false_alerts_per_video": round(false, 3),
                    "source": LABEL,
                }
            )
    return rows


def alert_table(
    datasets: Sequence[str] = tuple(DATASETS),
    deps: Sequence[str] = ALERT_DEPS,
    *,
    limit: int | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    done_level: float = DONE_LEVEL,
    noise_corr: float | None = None,
    seed: int = MISTAKE_SEED,
    show_progress: bool = True,
) -> ResultTable:
    """The alert table: detection of injected Skips and Swaps, false alerts, delay (simulated).

    Parameters
    ----------
    datasets : sequence of str
        Dataset names (default: all four).
    deps : sequence of str
        Deps settings (:mod:`baglm_nb.core.sources`; default :data:`ALERT_DEPS`).
    limit : int, optional
        The first ``limit`` videos of each dataset (annotation order); the task groups that
        define the dependent pairs always use the whole annotation file.
    threshold, done_level : float
        The alert rules' parameters (:mod:`baglm_nb.core.alerts`).
    noise_corr : float, optional
        The simulation's noise correlation across segments (None: the default twin's,
        :func:`~baglm_nb.core.simulate.default_params`).
    seed : int
        Seed of the mistake injection (:mod:`baglm_nb.analyses.mistakes`).
    show_progress : bool
        A progress bar per dataset.

    Returns
    -------
    ResultTable
        One row per (dataset, D, mistake): ``dataset``, ``mistake`` (skip / swap), ``D``,
        ``videos`` (edited), ``detected``, ``detection_pct``, ``delay_median_s``,
        ``delay_p90_s``, ``unedited_videos``, ``false_alerts_per_video``, ``source``
        (``simulated``). Its ``items`` hold one row per (video, mistake or ``none``, D):
        ``video_uid``, ``step_index`` (j), ``dependent_index`` (k), ``alerts``, ``detected``,
        ``delay_s``.
    """
    kw = {"threshold": threshold, "done_level": done_level}
    frames = []
    for dataset in datasets:
        params = default_params(dataset)
        if noise_corr is not None:
            params = replace(params, noise_corr=noise_corr)
        kw["segment_duration"] = params.segment_duration
        frames.append(_dataset_items(dataset, deps, limit, params, kw, seed, show_progress))
    items = pd.concat(frames, ignore_index=True)
    table = pd.DataFrame(_summary_rows(items), columns=_COLUMNS)
    return ResultTable.of(table, [items.assign(source=LABEL)], observations=[LABEL])
