"""Synthetic files in the authors' published layout, driven by real annotations (for tests).

``vsg/<model>/<uid>.pt`` (T, K+1) and ``prog/<model>/<uid>.pt`` (T, K, 10) float32 per-second
tensors (each 2-s segment's row repeated twice), ``prereq/<group>.pt`` (K, K) float32, as the
published scripts write them. Scores follow each video's ground truth: *confident* rows put most
of the mass on the annotated step (the other options at 1e-12..1e-3, as an 8B LMM answers),
*hesitant* rows are flat Dirichlet draws. Dependency matrices are LLaMA-like: mostly exact 0/1,
some fractional entries.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from baglm_nb.inputs.datasets import Video

MODEL = "internvl2.5-8b"
LLM = "llama-3.3-70b-instruct"


def segment_labels(video: Video, num_segments: int, d: int = 2) -> np.ndarray:
    """The annotated step column at each segment's start (K = none)."""
    labels = np.full(num_segments, video.num_steps)
    for seg in video.segments:
        a, b = int(seg.start // d), int(seg.end // d)
        labels[a : min(b, num_segments - 1) + 1] = seg.step_index
    return labels


def authors_scores(
    rng: np.random.Generator, video: Video, *, confident: bool, rows: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-second float32 VSG (T, K+1) and progress (T, K, 10) tensors for ``video``.

    ``rows`` overrides T (default: the frame-derived ``video.num_rows()``).
    """
    t = video.num_rows() if rows is None else rows
    s, k = -(-t // 2), video.num_steps
    labels = segment_labels(video, s)
    if confident:
        vsg = 10.0 ** rng.uniform(-12, -3, size=(s, k + 1))
        top = rng.beta(8, 1.2, size=s)
        wrong = rng.random(s) < 0.15  # now and then a confident wrong answer
        cols = np.where(wrong, rng.integers(0, k + 1, size=s), labels)
        vsg[np.arange(s), cols] = top
    else:
        vsg = rng.dirichlet(np.ones(k + 1), size=s) * rng.uniform(0.6, 1.0, size=(s, 1))
    vsg = vsg / np.maximum(vsg.sum(axis=1, keepdims=True), 1.0)
    progress = rng.dirichlet(np.full(10, 0.5), size=(s, k)) * rng.uniform(0.7, 1.0, (s, k, 1))
    as_rows = [torch.from_numpy(x).float().repeat_interleave(2, dim=0)[:t] for x in (vsg, progress)]
    return as_rows[0], as_rows[1]


def authors_dependency(rng: np.random.Generator, k: int) -> torch.Tensor:
    """A LLaMA-like (K, K) float32 matrix: exact 0/1 mostly, some fractions, some zero rows."""
    m = (rng.random((k, k)) < 0.4).astype(float)
    soft = rng.random((k, k)) < 0.1
    m[soft] = rng.random(int(soft.sum()))
    m[rng.random(k) < 0.2] = 0.0
    return torch.from_numpy(m).float()


def write_authors_files(
    src: Path, videos: list[Video], seed: int = 0, *, flat_prereq: bool = True
) -> dict[str, dict[str, np.ndarray]]:
    """Write the three kinds of files for ``videos`` (confident and hesitant alternating).

    Returns the arrays written, ``{"vsg": {uid: ...}, "prog": {uid: ...}, "prereq": {group:
    ...}}`` as float32 numpy arrays.
    """
    rng = np.random.default_rng(seed)
    vsg_dir, prog_dir = src / "vsg" / MODEL, src / "prog" / MODEL
    prereq_dir = src / "prereq" if flat_prereq else src / "prereq" / LLM
    for folder in (vsg_dir, prog_dir, prereq_dir):
        folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, dict[str, np.ndarray]] = {"vsg": {}, "prog": {}, "prereq": {}}
    for i, video in enumerate(videos):
        vsg, prog = authors_scores(rng, video, confident=i % 3 != 2)
        torch.save(vsg, vsg_dir / f"{video.uid}.pt")
        torch.save(prog, prog_dir / f"{video.uid}.pt")
        out["vsg"][video.uid], out["prog"][video.uid] = vsg.numpy(), prog.numpy()
        if video.group not in out["prereq"]:
            dep = authors_dependency(rng, video.num_steps)
            torch.save(dep, prereq_dir / f"{video.group}.pt")
            out["prereq"][video.group] = dep.numpy()
    return out
