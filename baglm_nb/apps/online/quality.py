"""A followed run measured on an annotated video: :func:`run_rows` (its estimates as
per-second beliefs and announced states) and :func:`video_quality` (its online metrics).

``follow``'s quality line (:mod:`.session`) and the HTML report's quality table
(:mod:`.report`) both read them; this module draws nothing, so a run without ``--html`` loads
no plotting library.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from baglm_nb.core.online_metrics import dataset_metrics, video_counts
from baglm_nb.inputs.grid import per_second

if TYPE_CHECKING:
    from baglm_nb.core.online import Estimate
    from baglm_nb.inputs.datasets import Video

__all__ = ["run_rows", "video_quality"]


def run_rows(estimates: Sequence[Estimate], steps: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per-second beliefs (T, K+1) and announced states (T,) (K: none or nothing yet), placed
    by segment number: the rows of segments that were not scored (gaps) hold zeros and keep
    the announced state."""
    d = int(round(estimates[0].t_end - estimates[0].t_start)) or 1
    index = {name: i for i, name in enumerate(steps)}
    rows = estimates[-1].segment + 1
    beliefs = np.zeros((rows, len(steps) + 1))
    said = np.full(rows, len(steps), dtype=np.int64)
    for e in estimates:
        beliefs[e.segment] = e.belief
        said[e.segment] = index.get(e.current, len(steps))
    scored = np.zeros(rows, dtype=bool)
    scored[[e.segment for e in estimates]] = True
    for s in range(1, rows):
        if not scored[s]:
            said[s] = said[s - 1]
    return per_second(beliefs, d), per_second(said, d)


def video_quality(estimates: Sequence[Estimate], steps: Sequence[str], video: Video) -> dict:
    """The online metrics of this video (:mod:`baglm_nb.core.online_metrics`,
    :func:`~baglm_nb.core.online_metrics.online_keys`) from the run's own beliefs and
    announcements: what notebook 09's timeline measures on the same video and settings."""
    beliefs, _ = run_rows(estimates, steps)
    d = int(round(estimates[0].t_end - estimates[0].t_start)) or 1
    lag = float(estimates[0].lag_s)
    said = [(e.segment, e.step) for e in estimates if e.announced]
    counts = video_counts(video, beliefs, said, segment_duration=d, lag_s=lag)
    return dataset_metrics(video.dataset, {video.uid: counts}, [video])
