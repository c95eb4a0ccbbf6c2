"""The importer of the authors' published precomputed ``.pt`` files into the Parquet caches.

The published files hold per-second arrays (each segment row repeated ``segment_duration``
times): ``vsg/<uid>.pt`` (T, K+1), ``prog/<uid>.pt`` (T, K, 10) and ``prereq/<group>.pt``
(K, K). Each is loaded with ``torch.load(weights_only=True)`` (a single float tensor, no
arbitrary unpickling), checked (:mod:`baglm_nb.stores.published_files`: what the published
code runs on is accepted, with a one-line warning where it is unusual; what is impossible is
refused, naming the file, row and value), reduced to one row per segment and written to a
:class:`~baglm_nb.stores.scores.ScoreCache` (source ``"imported"``) and a
:class:`~baglm_nb.stores.dependencies.DependencyCache`. A refused file leaves its video (or,
for a prerequisite file, its group's videos) out of the import; the others are imported and the
summary counts what was imported, warned about and refused.

Exports :func:`import_reference_results`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from baglm_nb.inputs.progress import bar_options
from baglm_nb.inputs.variants import SAMPLING_FPS, SEGMENT_DURATION
from baglm_nb.stores import published_files as pf
from baglm_nb.stores.caches import create_cache
from baglm_nb.stores.dependencies import DependencyCache
from baglm_nb.stores.keys import PUBLISHED_LLM, DependencyKey, ScoreKey
from baglm_nb.stores.provenance import file_sha256
from baglm_nb.stores.scores import ScoreCache

if TYPE_CHECKING:
    from baglm_nb.inputs.datasets import Video

__all__ = ["import_reference_results", "unknown_files_line"]


@dataclass
class _Run:
    """One import's paths, caches and running tallies."""

    src: Path
    model: str
    scores: ScoreCache
    deps: DependencyCache
    sampling_fps: float
    notes: pf.Notes
    refused: dict[str, str] = field(default_factory=dict)  # file -> the one-line reason
    prereqs: dict[str, tuple[Path, object] | None] = field(default_factory=dict)

    def refuse(self, path: Path | str, line: str) -> None:
        """Record a refused file (once) and log its line."""
        if str(path) not in self.refused:
            self.refused[str(path)] = line
            self.notes.log(f"refused: {line}")


def _prerequisites(run: _Run, video: Video) -> tuple[Path, object] | None:
    """The group's checked (K, K) matrix and its file, loaded once per group; None if refused."""
    if video.group in run.prereqs:
        return run.prereqs[video.group]
    base, found = run.src / "prereq", None
    try:
        path, m = pf.find_and_load(base, run.deps.key.model, video.group, run.notes)
        if path is None:
            raise pf.Refused(
                f"{m[0]}: prerequisite file missing for group {video.group!r} (also tried {m[1]})",
                m[0],
            )
        found = (path, pf.check_prerequisites(m, path, video.num_steps, video.group, run.notes))
    except pf.Refused as exc:
        run.refuse(exc.path, str(exc))
    run.prereqs[video.group] = found
    return found


def _scores(run: _Run, video: Video, vsg_path: Path, vsg) -> tuple | None:
    """Checked per-segment VSG and progress arrays of ``video`` and T; None if refused."""
    d, k = run.scores.key.segment_duration, video.num_steps
    try:
        prog_path, prog = pf.find_and_load(run.src / "prog", run.model, video.uid, run.notes)
        if prog_path is None:
            raise pf.Refused(
                f"{vsg_path}: progress file missing for video {video.uid!r} (tried {prog[0]} "
                f"and {prog[1]})",
                vsg_path,
            )
        vsg = pf.check_vsg(vsg, vsg_path, k, video.uid, run.notes)
        prog = pf.check_progress(prog, prog_path, k, video.uid, run.notes)
        t = vsg.shape[0]
        if prog.shape[0] != t:
            raise pf.Refused(
                f"{prog_path}: T = {prog.shape[0]} rows, but {vsg_path} has T = {t}; the "
                "progress and VSG rows of a video must cover the same seconds",
                prog_path,
            )
        expected = video.num_rows(d, run.sampling_fps)
        vsg = pf.per_segment(vsg, vsg_path, d, expected, run.notes, warn_rows=True)
        prog = pf.per_segment(prog, prog_path, d, expected, run.notes, warn_rows=False)
    except pf.Refused as exc:
        run.refuse(exc.path, str(exc))
        return None
    return vsg, prog, t


def _import_video(run: _Run, video: Video) -> str:
    """Import one video: ``"imported"``, ``"skipped"`` (no VSG file) or ``"refused"``."""
    try:
        vsg_path, vsg = pf.find_and_load(run.src / "vsg", run.model, video.uid, run.notes)
    except pf.Refused as exc:
        run.refuse(exc.path, str(exc))
        return "refused"
    if vsg_path is None:
        return "skipped"
    prereq = _prerequisites(run, video)
    scores = _scores(run, video, vsg_path, vsg)
    if prereq is None or scores is None:
        return "refused"
    vsg, prog, t = scores
    try:
        run.scores.write_video(video.uid, vsg, prog, steps=video.steps, num_rows=t)
    except ValueError as exc:
        raise ValueError(f"{vsg_path}: {exc}") from None
    return "imported"


def _import_all(run: _Run, videos: Sequence[Video], show_progress: bool) -> dict[str, Any]:
    """Import every video of ``videos`` and the prerequisite matrix of their groups.

    Returns the summary of :func:`import_reference_results`.
    """
    from tqdm.auto import tqdm

    group_steps: dict[str, tuple[str, ...]] = {}
    for video in videos:
        if group_steps.setdefault(video.group, video.steps) != video.steps:
            raise ValueError(
                f"group {video.group!r}: videos of this group have different step lists "
                f"(video {video.uid!r}); one dependency matrix cannot serve them all"
            )
    outcome = {"imported": 0, "skipped": 0, "refused": 0}
    groups: set[str] = set()
    desc = f"import {run.scores.key.dataset}"
    for video in tqdm(videos, desc=desc, disable=not show_progress, **bar_options()):
        result = _import_video(run, video)
        outcome[result] += 1
        if result == "imported":
            groups.add(video.group)
    for group in sorted(groups):
        path, matrix = run.prereqs[group]
        try:
            run.deps.write(group, group_steps[group], matrix)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
    return {
        "videos_imported": outcome["imported"],
        "videos_skipped": outcome["skipped"],
        "videos_refused": outcome["refused"],
        "groups_imported": len(groups),
        "files_imported": 2 * outcome["imported"] + len(groups),
        "warnings": run.notes.counts(),
        "max_clipped": run.notes.max_clipped,
        "files_refused": len(run.refused),
        "refused": list(run.refused.values()),
        "scores_path": str(run.scores.path),
        "dependencies_path": str(run.deps.path),
        "unmatched": _unmatched(run.src, videos),
    }


def _unmatched(src: Path, videos: Sequence[Video]) -> list[str]:
    """The ``.pt`` files anywhere under ``src`` (relative paths) that name no video or group of
    ``videos``: another dataset's files, misnamed ones, or files outside ``vsg/``, ``prog/``
    and ``prereq/``."""
    names = {
        "vsg": {v.uid for v in videos},
        "prog": {v.uid for v in videos},
        "prereq": {v.group for v in videos},
    }
    return sorted(
        str(rel)
        for rel in (path.relative_to(src) for path in src.rglob("*.pt"))
        if rel.parts[0] not in names or rel.stem not in names[rel.parts[0]]
    )


def unknown_files_line(unmatched: Sequence[str], dataset: str) -> str:
    """One line naming the ``.pt`` files an import did not use (at most 5, then a count)."""
    shown = ", ".join(unmatched[:5]) + (
        f" and {len(unmatched) - 5} more" if len(unmatched) > 5 else ""
    )
    return (
        f"{len(unmatched)} .pt file(s) name no {dataset} video or group and were not imported: "
        f"{shown}"
    )


@contextlib.contextmanager
def _no_empty_folders(paths: Sequence[Path]) -> Iterator[None]:
    """Remove, on the way out, the folders created for ``paths`` that hold no ``.parquet``
    entry (an import that imported nothing leaves no cache skeleton behind)."""
    created = []
    for path in paths:
        missing = [p for p in (path, *path.parents) if not p.exists()]
        created.append(missing[-1] if missing else None)
    try:
        yield
    finally:
        for top in created:
            if top is not None and top.is_dir() and not any(top.rglob("*.parquet")):
                shutil.rmtree(top, ignore_errors=True)


def _source(
    src: Path, dataset: str, videos: Sequence[Video] | None, strict: bool
) -> tuple[Path, Sequence[Video], str | None]:
    """``(src, videos, annotation hash)`` of an import (the hash is ``None`` for given
    ``videos``); bad input when ``src`` is no folder, or (``strict``) holds unknown files."""
    if not src.is_dir():
        raise FileNotFoundError(f"{src}: no such folder (expected vsg/, prog/ and prereq/)")
    annotation = None
    if videos is None:
        from baglm_nb.inputs.datasets import annotation_path, load_dataset

        annotation = file_sha256(annotation_path(dataset))
        videos = load_dataset(dataset)
    if strict and _unmatched(src, videos):
        line = unknown_files_line(_unmatched(src, videos), dataset)
        raise ValueError(f"{src}: {line}; --strict refuses the import (nothing written)")
    return src, videos, annotation


def import_reference_results(
    src_dir: str | os.PathLike,
    dataset: str,
    model: str,
    *,
    root: str | os.PathLike,
    llm: str = PUBLISHED_LLM,
    segment_duration: int = SEGMENT_DURATION,
    sampling_fps: float = SAMPLING_FPS,
    videos: Sequence[Video] | None = None,
    show_progress: bool = True,
    log: Callable[[str], None] | None = None,
    strict: bool = False,
) -> dict[str, Any]:
    """Import the authors' published precomputed ``.pt`` files into the Parquet caches.

    Parameters
    ----------
    src_dir
        Folder with ``vsg/``, ``prog/`` and ``prereq/``. Each file is looked up in the model
        sub-folder (``vsg/<model>/<uid>.pt``, ``prog/<model>/<uid>.pt``,
        ``prereq/<llm>/<group>.pt``, where the published scripts write) and flat
        (``vsg/<uid>.pt`` ..., where the published filter reads prerequisites); when both exist
        they must hold the same tensor.
    dataset, model
        Dataset name (for :func:`baglm_nb.inputs.datasets.load_dataset`) and LMM key.
    root
        Cache root for :class:`~baglm_nb.stores.scores.ScoreCache` and
        :class:`~baglm_nb.stores.dependencies.DependencyCache`.
    llm
        LLM key of the prerequisite matrices.
    segment_duration, sampling_fps
        The sampling the files were made with; a T that differs from ``video.num_rows(...)``
        is imported as it is (an ``own_rows`` warning).
    videos
        The annotation records (default: ``load_dataset(dataset)``).
    show_progress
        Show tqdm progress bars.
    log
        Receives each warning and refusal line (default: printed to stderr).
    strict
        Refuse (``ValueError``, before anything is written) when a ``.pt`` file under
        ``src_dir`` names no video or group of ``videos``; by default such files are only
        listed in ``unmatched``.

    Returns
    -------
    dict
        ``videos_imported``, ``videos_skipped`` (no VSG file), ``videos_refused``,
        ``groups_imported``, ``files_imported`` (VSG, progress and prerequisite files),
        ``warnings`` (count per kind of :data:`~baglm_nb.stores.published_files.WARNING_KINDS`),
        ``max_clipped`` (the largest clipped deviation from [0, 1]), ``files_refused``,
        ``refused`` (one line per refused file), ``scores_path``, ``dependencies_path`` and
        ``unmatched`` (the ``.pt`` files that name no annotated video or group).

    Raises
    ------
    ValueError
        Videos of one group with different step lists in the annotation (one matrix cannot
        serve them), a cache write that fails, or (``strict``) unknown files. When nothing is
        imported, the cache folders the call created are removed. Refused files do not
        raise: they are in ``refused``, and their videos are not imported.
    """
    src, videos, annotation = _source(Path(src_dir), dataset, videos, strict)
    d = int(segment_duration)
    keys = (
        ScoreKey(dataset, model, "published", d, sampling_fps, source="imported"),
        DependencyKey(dataset, llm, "published"),
    )
    notes = pf.Notes() if log is None else pf.Notes(log=log)
    with _no_empty_folders([Path(root) / key.relpath() for key in keys]):
        scores, deps = (create_cache(root, key, annotation_sha256=annotation) for key in keys)
        run = _Run(src, model, scores, deps, sampling_fps, notes)
        return _import_all(run, videos, show_progress)
