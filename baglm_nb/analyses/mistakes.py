"""Mistakes injected into real annotations, so that an alert's ground truth is known.

Definitions (also in ``docs/alerts.md``):

- **Dependent pair** (j, k) of a video: step k's first annotated start comes right after step
  j's in the video's first-start order (:func:`~baglm_nb.inputs.grid.first_starts`; j strictly
  earlier, so k is the oracle chain's successor of j), and in every video of the task group
  that has both steps, j's first start is strictly before k's (the annotation's order within
  the group, :func:`~baglm_nb.core.simulate_deps.order_evidence`). k is the *dependent* step.
- **Skip**: every annotated interval of j is removed (the step is never performed).
- **Swap**: the intervals of j and k exchange their steps (each interval of j becomes one of
  k and vice versa), so k is now performed first.
- Each video gets at most one mistake of each kind: the pair is drawn uniformly among its
  dependent pairs by ``np.random.default_rng([seed, crc32(uid), kind])`` (kind 0: skip,
  1: swap); a video without a dependent pair gets none. ``seed`` defaults to
  :data:`MISTAKE_SEED`.
- The edited :class:`~baglm_nb.inputs.datasets.Video` keeps its uid, steps and length, so the
  simulation (:func:`~baglm_nb.core.simulate.simulate_video`) draws the same noise and only the
  ground truth differs: the removed step is truly absent from the scores.
- ``dependent_start`` is the first start of k in the edited video (an alert's delay counts
  from it).

Exports :data:`MISTAKE_KINDS`, :data:`MISTAKE_SEED`, :class:`Mistake`, :func:`dependent_pairs`,
:func:`inject` and :func:`mistakes_of`.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from baglm_nb.core.simulate_deps import order_evidence
from baglm_nb.inputs.datasets import Segment, Video
from baglm_nb.inputs.grid import first_starts

__all__ = ["MISTAKE_KINDS", "MISTAKE_SEED", "Mistake", "dependent_pairs", "inject", "mistakes_of"]

#: The injected mistakes (module docstring).
MISTAKE_KINDS = ("skip", "swap")
#: The default seed of the pair choice.
MISTAKE_SEED = 0


@dataclass(frozen=True)
class Mistake:
    """One injected mistake: ``video`` is the edited record, ``original`` the annotation's.

    ``step`` is j (removed, or moved after k), ``dependent`` is k, ``dependent_start`` k's
    first start (s) in the edited video.
    """

    kind: str
    video: Video
    original: Video
    step: int
    dependent: int
    dependent_start: float


def dependent_pairs(video: Video, group: Sequence[Video]) -> list[tuple[int, int]]:
    """The video's dependent pairs (j, k) in first-start order (module docstring).

    ``group`` holds the annotated videos of the video's task group (those with the video's
    step list count; the video itself always does).
    """
    same = [g for g in group if g.steps == video.steps and g.uid != video.uid]
    n, b = order_evidence([video, *same])
    order = list(first_starts(video).items())
    pairs = []
    for (j, start_j), (k, start_k) in zip(order, order[1:], strict=False):
        if start_j < start_k and n[k, j] > 0 and b[k, j] == n[k, j]:
            pairs.append((j, k))
    return pairs


def inject(video: Video, kind: str, pair: tuple[int, int]) -> Mistake:
    """``video`` with mistake ``kind`` (``"skip"`` or ``"swap"``) on the pair (j, k)."""
    j, k = pair
    if kind == "skip":
        segments = tuple(s for s in video.segments if s.step_index != j)
    elif kind == "swap":
        other = {j: k, k: j}
        segments = tuple(
            _relabel(s, video, other[s.step_index]) if s.step_index in other else s
            for s in video.segments
        )
    else:
        raise ValueError(f"mistake kind must be one of {MISTAKE_KINDS}, got {kind!r}")
    edited = replace(video, segments=segments)
    return Mistake(kind, edited, video, j, k, first_starts(edited)[k])


def _relabel(segment: Segment, video: Video, column: int) -> Segment:
    return replace(segment, step=video.steps[column], step_index=column, step_id=None)


def mistakes_of(
    videos: Sequence[Video],
    kind: str,
    *,
    seed: int = MISTAKE_SEED,
    groups: Sequence[Video] | None = None,
) -> list[Mistake]:
    """One ``kind`` mistake per video that has a dependent pair, in the order of ``videos``.

    ``groups`` are the videos whose orders define the task groups (default: ``videos``; pass
    the whole annotation file when ``videos`` is a subset).
    """
    if kind not in MISTAKE_KINDS:
        raise ValueError(f"mistake kind must be one of {MISTAKE_KINDS}, got {kind!r}")
    by_group: dict[str, list[Video]] = {}
    for v in videos if groups is None else groups:
        by_group.setdefault(v.group, []).append(v)
    out = []
    for video in videos:
        pairs = dependent_pairs(video, by_group.get(video.group, [video]))
        if not pairs:
            continue
        rng = np.random.default_rng(
            [seed, zlib.crc32(video.uid.encode()), MISTAKE_KINDS.index(kind)]
        )
        out.append(inject(video, kind, pairs[int(rng.integers(len(pairs)))]))
    return out
