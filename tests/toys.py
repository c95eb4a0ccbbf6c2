"""Hand-made annotated videos for tests (closed-form cases), and random score arrays."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from baglm_nb.inputs.datasets import Segment, Video


def toy_video(
    intervals: Sequence[tuple[float, float, int]],
    steps: Sequence[str] = ("a", "b"),
    *,
    fps: float = 10.0,
    duration: float = 10.0,
    num_frames: int | None = None,
) -> Video:
    """A video with the given ``(start, end, step index)`` intervals; frames = fps * duration."""
    steps = tuple(steps)
    return Video(
        dataset="x",
        uid="v",
        task="t",
        group="g",
        goal="goal",
        llm_goal="goal",
        steps=steps,
        segments=tuple(Segment(float(a), float(b), steps[i], i) for a, b, i in intervals),
        fps=fps,
        num_frames=round(fps * duration) if num_frames is None else num_frames,
        duration=duration,
    )


def random_scores(rng: np.random.Generator, s: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Random (S, K+1) VSG and (S, K, 10) progress probabilities (progress rows sum to <= 1)."""
    vsg = rng.dirichlet(np.ones(k + 1), size=s)
    progress = rng.dirichlet(np.ones(10), size=(s, k)) * rng.uniform(0.5, 1.0, size=(s, k, 1))
    return vsg, progress
