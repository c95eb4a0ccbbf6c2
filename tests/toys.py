"""Hand-made annotated videos for tests (closed-form cases)."""

from __future__ import annotations

from collections.abc import Sequence

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
