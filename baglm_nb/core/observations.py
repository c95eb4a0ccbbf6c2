"""Per-second observation rows of one dataset, from a score cache or the simulated default.

An :class:`Observations` holds per-second rows (the published layout: each segment's row
repeated ``segment_duration`` times) for every video it covers, the covered videos' annotations
(annotation-file order), the ``source`` the numbers come from and the ``precision`` the filter
runs in, as two fields; its ``label`` joins them for output. Anything built from simulated scores
has the source ``simulated``.
Settings such as ``"simulated"`` or a per-dataset mapping are resolved by
:mod:`baglm_nb.core.sources`.

The precision rule lives here (:func:`default_precision`, :func:`labelled`): the authors'
imported files run in ``float32-published`` (the published code's arithmetic, so that R@1 is
the published one), everything else in ``float64``; the label of imported observations, and of
any observations in a non-default precision, ends in ``", <precision>"``, e.g.
``imported:internvl2.5-8b, float32-published``.

Exports :class:`Observations`, :func:`default_precision`, :func:`labelled`, :func:`from_cache`,
:func:`vsg_from_cache` and :func:`from_simulation`.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from baglm_nb.core.filtering import PRECISIONS, PUBLISHED_PRECISION
from baglm_nb.inputs import grid
from baglm_nb.inputs.datasets import Video, annotation_path, load_dataset

__all__ = [
    "Observations",
    "default_precision",
    "from_cache",
    "from_simulation",
    "labelled",
    "vsg_from_cache",
]

IMPORTED = "imported:"

#: How a stale cached video is brought up to date, by the cache's source.
_REDO = {
    "lmm": "run the same 'python -m baglm_nb score' again: it re-scores stale videos",
    "simulated": "run 'python -m baglm_nb simulate' (or 'make data') again: it re-simulates "
    "stale videos",
    "imported": "import the authors' files again under this annotation",
}


def default_precision(source: str) -> str:
    """``float32-published`` for the authors' imported files (``imported:<model>``), else float64.

    The published code computes in torch float32; on its own files only that arithmetic gives
    its per-(video, step) best rows, and so its R@1, to the last digit.
    """
    return PUBLISHED_PRECISION if source.startswith(IMPORTED) else "float64"


def _source_of(label: str) -> str:
    """``label`` without a trailing ``", <precision>"``."""
    for precision in PRECISIONS:
        if label.endswith(f", {precision}"):
            return label[: -len(precision) - 2]
    return label


def labelled(source: str, precision: str) -> str:
    """The output label: ``source``, plus ``", <precision>"`` on imported files or off float64."""
    source = _source_of(source)
    if source.startswith(IMPORTED) or precision != "float64":
        return f"{source}, {precision}"
    return source


@dataclass
class Observations:
    """Per-second observation rows of one dataset.

    ``vsg[uid]`` is (T, K+1), none last; ``progress[uid]`` is (T, K, 10); ``next_step[uid]``
    (optional) is shaped like ``vsg``. ``source`` names where the rows come from
    (``simulated``, ``imported:<model>`` or ``lmm:<model>``; a label given here loses its
    precision suffix). ``videos`` are the covered videos in annotation-file order (looked up in
    the dataset when not given). ``precision`` is the filter's arithmetic (``None``:
    :func:`default_precision` of the source). :attr:`label` joins source and precision for
    output (:func:`labelled`).
    """

    dataset: str
    source: str
    segment_duration: int
    vsg: dict[str, np.ndarray]
    progress: dict[str, np.ndarray]
    next_step: dict[str, np.ndarray] = field(default_factory=dict)
    videos: list[Video] = field(default_factory=list)
    precision: str | None = None

    def __post_init__(self) -> None:
        self.source = _source_of(self.source)
        if self.precision is None:
            self.precision = default_precision(self.source)
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        if not self.videos:
            self.videos = [v for v in load_dataset(self.dataset) if v.uid in self.vsg]
        known = {v.uid for v in self.videos}
        unknown = [u for u in self.vsg if u not in known]
        if unknown:
            raise ValueError(
                f"{self.dataset}: observations name videos not in the dataset: {unknown[:5]}"
            )

    @property
    def label(self) -> str:
        """The output label: the source, with the precision where it is recorded
        (:func:`labelled`)."""
        return labelled(self.source, self.precision)

    @property
    def simulated(self) -> bool:
        """Whether the rows come from the simulated observation model."""
        return self.source == "simulated"

    def with_precision(self, precision: str | None) -> Observations:
        """The same rows in another precision (``None``: the source's default), relabelled."""
        return replace(self, precision=precision or default_precision(self.source))

    def uids(self) -> list[str]:
        """The covered video uids, in annotation-file order."""
        return [v.uid for v in self.videos]

    def subset(self, uids: Iterable[str]) -> Observations:
        """The same source restricted to ``uids`` (annotation order kept)."""
        keep = set(uids)
        videos = [v for v in self.videos if v.uid in keep]
        return Observations(
            self.dataset,
            self.source,
            self.segment_duration,
            {v.uid: self.vsg[v.uid] for v in videos},
            {v.uid: self.progress[v.uid] for v in videos},
            {v.uid: self.next_step[v.uid] for v in videos if v.uid in self.next_step},
            videos,
            self.precision,
        )


def from_cache(
    path: str | os.PathLike,
    videos: Sequence[Video] | None = None,
    *,
    length_mismatch: str = "error",
    annotation: str | os.PathLike | None = None,
) -> Observations:
    """Load every video of the score cache at ``path`` (a folder with ``config.json``).

    ``videos`` is the dataset's annotation list when the caller already has it (read from
    ``annotation``, default the dataset's annotation file). A video stored for other steps than
    its annotation's (reversed, renamed: :mod:`baglm_nb.stores.provenance`) is refused with a
    :class:`~baglm_nb.stores.provenance.StaleCacheError` naming the file, the annotation and the
    first differing step; a cache without the record is read with one warning line. A video whose
    stored segment count differs from its annotation by more than one segment
    (:func:`baglm_nb.inputs.grid.length_mismatch`) is an error naming the file
    (``length_mismatch="error"``), or a warning (``"warn"``) for users who know the
    difference. Imported authors' files are evaluated on their own length, as published.
    """
    from baglm_nb.stores.scores import ScoreCache

    if length_mismatch not in ("error", "warn"):
        raise ValueError(f"length_mismatch must be 'error' or 'warn', got {length_mismatch!r}")
    cache = ScoreCache.open(Path(path))
    key = cache.key
    stored = set(cache.uids())
    if videos is None:
        videos = load_dataset(key.dataset)
        unknown = sorted(stored - {v.uid for v in videos})
        if unknown:
            raise ValueError(
                f"{path}: the cache holds videos that are not in {key.dataset}: {unknown[:5]}"
            )
    covered = [v for v in videos if v.uid in stored]
    if not covered:
        raise ValueError(f"{path}: the score cache holds no scored video of {key.dataset}")
    from baglm_nb.stores.provenance import check_steps, warn_unrecorded

    annotation = annotation_path(key.dataset) if annotation is None else annotation
    vsg, progress, unrecorded = {}, {}, 0
    for video, (uid, scores) in zip(
        covered, cache.read_all([v.uid for v in covered]).items(), strict=True
    ):
        unrecorded += scores.steps is None
        check_steps(
            scores.steps,
            video.steps,
            file=cache.file(uid),
            annotation=annotation,
            what=f"video {uid!r}",
            redo=_REDO[key.source],
        )
        if scores.progress is None:
            raise ValueError(f"{path}: video {uid!r} has no progress scores; the filter needs them")
        if key.source != "imported":
            _check_length(cache, video, scores.num_segments, length_mismatch)
        vsg[uid], progress[uid] = scores.per_second()
    warn_unrecorded(cache.path, unrecorded)
    return Observations(
        key.dataset, key.source_label, key.segment_duration, vsg, progress, videos=covered
    )


def vsg_from_cache(path: str | os.PathLike) -> tuple[str, str, dict[str, np.ndarray]]:
    """Per-second VSG rows of every video of the score cache at ``path``; no progress needed.

    Returns ``(dataset, label, {uid: (T, K+1) array})``; used for off-the-shelf comparisons
    such as the binary prompt, whose caches may hold no progress scores. A stale video is
    refused, as in :func:`from_cache`.
    """
    from baglm_nb.stores.provenance import check_steps
    from baglm_nb.stores.scores import ScoreCache

    cache = ScoreCache.open(Path(path))
    key = cache.key
    stored = cache.read_all()
    for video in load_dataset(key.dataset):
        if video.uid in stored:
            check_steps(
                stored[video.uid].steps,
                video.steps,
                file=cache.file(video.uid),
                annotation=annotation_path(key.dataset),
                what=f"video {video.uid!r}",
                redo="score it again",
            )
    rows = {u: grid.per_second(s.vsg, key.segment_duration) for u, s in stored.items()}
    return key.dataset, key.source_label, rows


def _check_length(cache: Any, video: Video, segments: int, mode: str) -> None:
    why = grid.length_mismatch(
        video,
        segments,
        what=f"{cache.videos_dir / video.uid}.parquet",
        segment_duration=cache.key.segment_duration,
        sampling_fps=cache.key.sampling_fps,
    )
    if why and mode == "error":
        raise ValueError(f"{why} (evaluate with --allow-length-mismatch to use it anyway)")
    if why:
        warnings.warn(why, stacklevel=3)


def from_simulation(
    dataset: str, params=None, videos: Sequence[Video] | None = None, limit: int | None = None
) -> Observations:
    """Simulated observations (the CPU default without model weights), labelled ``simulated``.

    ``params`` defaults to the dataset's calibrated parameters
    (:func:`~baglm_nb.core.simulate.default_params`). ``videos`` (default: the dataset's) are
    simulated in their order; ``limit`` keeps the first.
    """
    from baglm_nb.core.simulate import default_params, per_second, simulate_dataset

    params = default_params(dataset) if params is None else params
    videos = list(load_dataset(dataset) if videos is None else videos)
    videos = videos[:limit] if limit else videos
    sims = simulate_dataset(dataset, params, videos=videos)
    vsg, progress = {}, {}
    for uid, sim in sims.items():
        vsg[uid], progress[uid] = per_second(sim)
    d = params.segment_duration
    return Observations(dataset, "simulated", d, vsg, progress, videos=videos)
