"""Observation sources for the filter: a score cache or the simulated CPU default.

An :class:`Observations` holds per-second rows (the published layout: each segment's row
repeated ``segment_duration`` times) for every video it covers, and a ``label`` that says where
the numbers come from. Anything built from simulated scores carries the label ``simulated``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from baglm_nb.datasets import Video, load_dataset

__all__ = ["Observations", "from_cache", "from_simulation"]


@dataclass
class Observations:
    """Per-second observation rows of one dataset.

    ``vsg[uid]`` is (T, K+1), none last; ``progress[uid]`` is (T, K, 10); ``next_step[uid]``
    (optional) is shaped like ``vsg``. ``label`` names the source (``simulated``,
    ``imported:<model>`` or ``lmm:<model>``).
    """

    dataset: str
    label: str
    segment_duration: int
    vsg: dict[str, np.ndarray]
    progress: dict[str, np.ndarray]
    next_step: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def simulated(self) -> bool:
        """Whether the rows come from the simulated observation model."""
        return self.label == "simulated"

    def uids(self) -> list[str]:
        """The covered video uids."""
        return list(self.vsg)

    def subset(self, uids) -> Observations:
        """The same source restricted to ``uids``."""
        keep = [u for u in uids if u in self.vsg]
        return Observations(
            self.dataset,
            self.label,
            self.segment_duration,
            {u: self.vsg[u] for u in keep},
            {u: self.progress[u] for u in keep},
            {u: self.next_step[u] for u in keep if u in self.next_step},
        )


def from_cache(path: str | os.PathLike) -> Observations:
    """Load every video of the score cache at ``path`` (a folder with ``config.json``)."""
    from baglm_nb.cache import ScoreCache

    cache = ScoreCache.open(Path(path))
    key = cache.key
    vsg, progress = {}, {}
    for uid, scores in cache.read_all().items():
        if scores.progress is None:
            raise ValueError(f"{path}: video {uid!r} has no progress scores; the filter needs them")
        vsg[uid] = np.repeat(scores.vsg, key.segment_duration, axis=0)
        progress[uid] = np.repeat(scores.progress, key.segment_duration, axis=0)
    label = "simulated" if key.source == "simulated" else f"{key.source}:{key.model}"
    return Observations(key.dataset, label, key.segment_duration, vsg, progress)


def from_simulation(
    dataset: str, params=None, videos: list[Video] | None = None, limit: int | None = None
) -> Observations:
    """Simulated observations (the CPU default without model weights), labelled ``simulated``."""
    from baglm_nb.simulate import SimulationParams, simulate_dataset

    params = SimulationParams() if params is None else params
    videos = load_dataset(dataset) if videos is None else videos
    videos = videos[:limit] if limit else videos
    sims = simulate_dataset(dataset, params, videos=videos)
    d = params.segment_duration
    vsg = {u: np.repeat(s.vsg, d, axis=0) for u, s in sims.items()}
    progress = {u: np.repeat(s.progress, d, axis=0) for u, s in sims.items()}
    return Observations(dataset, "simulated", d, vsg, progress)
