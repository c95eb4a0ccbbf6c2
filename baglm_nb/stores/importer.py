"""The importer of the authors' published precomputed ``.pt`` files into the Parquet caches.

The published files hold per-second arrays (each segment row repeated ``segment_duration``
times): ``vsg/<uid>.pt`` (T, K+1), ``prog/<uid>.pt`` (T, K, 10) and ``prereq/<group>.pt``
(K, K). Each is loaded with ``torch.load(weights_only=True)`` (a single float tensor, no
arbitrary unpickling), checked, reduced to one row per segment and written to a
:class:`~baglm_nb.stores.scores.ScoreCache` (source ``"imported"``) and a
:class:`~baglm_nb.stores.dependencies.DependencyCache`.

Exports :func:`import_reference_results`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from baglm_nb.stores.dependencies import DependencyCache
from baglm_nb.stores.keys import PUBLISHED_LLM, DependencyKey, ScoreKey
from baglm_nb.stores.scores import ScoreCache

if TYPE_CHECKING:
    from baglm_nb.inputs.datasets import Video

__all__ = ["import_reference_results"]


def _find_pt(base: Path, sub: str, name: str) -> tuple[Path | None, list[Path]]:
    """``base/sub/name.pt`` if present, else ``base/name.pt``; returns (found, candidates)."""
    candidates = [base / sub / f"{name}.pt", base / f"{name}.pt"]
    for c in candidates:
        if c.is_file():
            return c, candidates
    return None, candidates


def _load_tensor(path: Path) -> np.ndarray:
    import torch

    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # unpickling errors come in many types
        raise ValueError(
            f"{path}: cannot load as a single tensor ({type(exc).__name__}: {exc})"
        ) from None
    if not isinstance(obj, torch.Tensor):
        raise ValueError(f"{path}: expected a single tensor, got {type(obj).__name__}")
    if not obj.is_floating_point():
        raise ValueError(f"{path}: expected a float tensor, got dtype {obj.dtype}")
    return obj.detach().to(torch.float64).numpy()


def _per_segment(arr: np.ndarray, path: Path, expected: tuple[int, ...], d: int) -> np.ndarray:
    """Check the per-second shape and duplicated rows; return every ``d``-th row."""
    if arr.shape != expected:
        raise ValueError(f"{path}: expected shape {expected}, got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{path}: contains NaN or inf values")
    segs = arr.reshape(expected[0] // d, d, *expected[1:])
    same = np.isclose(segs, segs[:, :1]).reshape(segs.shape[0], -1)  # np.allclose tolerances
    if not same.all():
        bad = int(np.argmin(same.all(axis=1)))
        raise ValueError(
            f"{path}: shape {arr.shape} (expected {expected}) but the {d} rows of segment {bad} "
            f"differ; expected each segment row repeated {d} times"
        )
    return np.ascontiguousarray(segs[:, 0])


def _import_scores(
    src: Path,
    model: str,
    videos: Sequence[Video],
    scores: ScoreCache,
    sampling_fps: float,
    show_progress: bool,
) -> tuple[int, int, dict[str, tuple[str, ...]]]:
    """Import the VSG and progress files of ``videos``: (imported, skipped, group -> steps)."""
    from tqdm.auto import tqdm

    d = scores.key.segment_duration
    imported = skipped = 0
    group_steps: dict[str, tuple[str, ...]] = {}
    desc = f"import {scores.key.dataset} scores"
    for video in tqdm(videos, desc=desc, disable=not show_progress):
        vsg_path, _ = _find_pt(src / "vsg", model, video.uid)
        if vsg_path is None:
            skipped += 1
            continue
        prog_path, prog_candidates = _find_pt(src / "prog", model, video.uid)
        if prog_path is None:
            raise ValueError(
                f"{prog_candidates[0]}: progress file missing for video {video.uid!r} "
                f"(also tried {prog_candidates[1]})"
            )
        if group_steps.setdefault(video.group, video.steps) != video.steps:
            raise ValueError(
                f"group {video.group!r}: videos of this group have different step lists "
                f"(video {video.uid!r}); one dependency matrix cannot serve them all"
            )
        t, k = video.num_rows(d, sampling_fps), video.num_steps
        vsg = _per_segment(_load_tensor(vsg_path), vsg_path, (t, k + 1), d)
        prog = _per_segment(_load_tensor(prog_path), prog_path, (t, k, 10), d)
        try:
            scores.write_video(video.uid, vsg, prog, steps=video.steps)
        except ValueError as exc:
            raise ValueError(f"{vsg_path} / {prog_path}: {exc}") from None
        imported += 1
    return imported, skipped, group_steps


def _import_prerequisites(
    src: Path,
    group_steps: dict[str, tuple[str, ...]],
    deps: DependencyCache,
    show_progress: bool,
) -> None:
    """Import the prerequisite matrix of every group in ``group_steps``."""
    from tqdm.auto import tqdm

    desc = f"import {deps.key.dataset} prereqs"
    for group, steps in tqdm(sorted(group_steps.items()), desc=desc, disable=not show_progress):
        path, candidates = _find_pt(src / "prereq", deps.key.model, group)
        if path is None:
            raise ValueError(
                f"{candidates[0]}: prerequisite file missing for group {group!r} "
                f"(also tried {candidates[1]})"
            )
        m = _load_tensor(path)
        k = len(steps)
        if m.shape != (k, k):
            raise ValueError(f"{path}: expected shape {(k, k)}, got {m.shape}")
        try:
            deps.write(group, steps, m)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None


def import_reference_results(
    src_dir: str | os.PathLike,
    dataset: str,
    model: str,
    *,
    root: str | os.PathLike,
    llm: str = PUBLISHED_LLM,
    segment_duration: int = 2,
    sampling_fps: float = 2.0,
    videos: Sequence[Video] | None = None,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Import the authors' published precomputed ``.pt`` files into the Parquet caches.

    Parameters
    ----------
    src_dir
        Folder with ``vsg/``, ``prog/`` and ``prereq/``. Each file is looked up first in the
        model sub-folder (``vsg/<model>/<uid>.pt``, ``prog/<model>/<uid>.pt``,
        ``prereq/<llm>/<group>.pt``), then flat (``vsg/<uid>.pt`` ...).
    dataset, model
        Dataset name (for :func:`baglm_nb.inputs.datasets.load_dataset`) and LMM key.
    root
        Cache root for :class:`~baglm_nb.stores.scores.ScoreCache` and
        :class:`~baglm_nb.stores.dependencies.DependencyCache`.
    llm
        LLM key of the prerequisite matrices.
    segment_duration, sampling_fps
        The sampling the files were made with; T must equal ``video.num_rows(...)``.
    videos
        The annotation records (default: ``load_dataset(dataset)``).
    show_progress
        Show tqdm progress bars.

    Returns
    -------
    dict
        ``videos_imported``, ``videos_skipped`` (no VSG file), ``groups_imported``,
        ``scores_path`` and ``dependencies_path``.

    Raises
    ------
    ValueError
        A file that is not a single float tensor, has the wrong shape (T or K) or whose rows
        within a segment differ; a missing progress file for a video with VSG; a missing
        prerequisite file for the group of an imported video. The message names the file.
        Videos written before the error stay in the cache (each file is complete).
    """
    src = Path(src_dir)
    if videos is None:
        from baglm_nb.inputs.datasets import load_dataset

        videos = load_dataset(dataset)
    d = int(segment_duration)
    scores = ScoreCache(
        root, ScoreKey(dataset, model, "published", d, sampling_fps, source="imported")
    )
    deps = DependencyCache(root, DependencyKey(dataset, llm, "published"))
    imported, skipped, group_steps = _import_scores(
        src, model, videos, scores, sampling_fps, show_progress
    )
    _import_prerequisites(src, group_steps, deps, show_progress)
    return {
        "videos_imported": imported,
        "videos_skipped": skipped,
        "groups_imported": len(group_steps),
        "scores_path": str(scores.path),
        "dependencies_path": str(deps.path),
    }
