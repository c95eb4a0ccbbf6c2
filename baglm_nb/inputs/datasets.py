"""The four annotation formats as one record type, ground-truth grids and statistics.

Dataset differences are data (:data:`DATASETS`), not code per dataset. Every record keeps the
published protocol's conventions: the candidate steps in stored order, the time axis derived
from the frame count and fps (never from ``video_duration``), and one row per second.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from baglm_nb.inputs.grid import ground_truth, num_rows
from baglm_nb.inputs.metric_specs import R_AT_1, metric_spec
from baglm_nb.inputs.variants import SAMPLING_FPS, SEGMENT_DURATION, Localization

__all__ = [
    "DATASETS",
    "DatasetSpec",
    "Recall",
    "Segment",
    "Video",
    "annotation_path",
    "data_dir",
    "dataset_spec",
    "dataset_stats",
    "dataset_version",
    "load_dataset",
]


@dataclass(frozen=True)
class Recall:
    """How a dataset reports R@1 (reference-protocol §6).

    ``subsets == 0``: the flat mean over evaluable (video, step) pairs. Otherwise the mean,
    over ``subsets`` random subsets of ``subset_size`` videos (``random.seed(0..subsets-1)``,
    uids in annotation-file order), of the per-task average recall. ``metric`` is the number's
    key in :data:`~baglm_nb.inputs.metric_specs.METRICS` (``r_at_1``, ``avg_r_at_1``), whose
    spec gives its :attr:`label` in tables ("R@1", "Avg. R@1").
    """

    metric: str = R_AT_1
    subsets: int = 0
    subset_size: int = 0

    @property
    def label(self) -> str:
        """The number's name in tables: its metric spec's label."""
        return metric_spec(self.metric).label

    @property
    def per_task(self) -> bool:
        """Whether the number is a per-task average over random subsets."""
        return self.subsets > 0


@dataclass(frozen=True)
class DatasetSpec:
    """Where one dataset keeps its fields, how it is named, evaluated and simulated.

    ``group_fields`` build the dependency-matrix key (one D per group), ``task_field`` the key
    that statistics and a per-task average (:class:`Recall`) use. ``display_name`` labels
    tables and figures. ``calibrated_signal`` is the simulator's ``signal`` that
    ``python -m baglm_nb calibrate`` finds for this dataset against the paper's off-the-shelf
    value (``inputs/paper.py``); None until calibrated (simulating it is then an error).
    ``pinned_signal`` is the same fit for the *pinned* twin, whose noise lasts across segments
    (``noise_corr`` :data:`~baglm_nb.core.simulate.PINNED_NOISE_CORR`, fitted with it to the
    paper's off-the-shelf HT-Step mAP): ``python -m baglm_nb calibrate --twin pinned``.
    ``localization`` names how ``python -m baglm_nb localize`` scores it
    (:data:`~baglm_nb.inputs.variants.LOCALIZATIONS`).
    """

    name: str
    filename: str
    goal_field: str
    steps_field: str
    group_fields: tuple[str, ...]
    task_field: str
    llm_goal_field: str
    display_name: str
    recall: Recall = Recall()
    calibrated_signal: float | None = None
    pinned_signal: float | None = None
    localization: Localization = "article_map"


DATASETS: dict[str, DatasetSpec] = {
    "htstep": DatasetSpec(
        "htstep",
        "htstep_video_annots.json",
        goal_field="activity",
        steps_field="step_headline",
        group_fields=("activity", "variation"),
        task_field="activity",
        llm_goal_field="activity",
        display_name="HT-Step",
        calibrated_signal=1.2439,
        pinned_signal=1.3715,
    ),
    "crosstask": DatasetSpec(
        "crosstask",
        "crosstask_video_annots.json",
        goal_field="task_name",
        steps_field="task_steps",
        group_fields=("task_id",),
        task_field="task_id",
        # The published prerequisite script passes the numeric task id as the goal (quirk).
        llm_goal_field="task_id",
        display_name="CrossTask",
        recall=Recall("avg_r_at_1", subsets=20, subset_size=1850),
        calibrated_signal=1.3843,
        pinned_signal=1.5112,
    ),
    "ego4d_goalstep": DatasetSpec(
        "ego4d_goalstep",
        "ego4d_goalstep_video_annots.json",
        goal_field="goal_description",
        steps_field="step_headline",
        group_fields=("video_uid",),
        task_field="goal_category",
        llm_goal_field="goal_description",
        display_name="Ego4D",
        calibrated_signal=1.3086,
        pinned_signal=1.4136,
        localization="windowed_recall",
    ),
    "coin": DatasetSpec(
        "coin",
        "coin_video_annots.json",
        goal_field="activity",
        steps_field="step_headline",
        group_fields=("activity",),
        task_field="activity",
        llm_goal_field="activity",
        display_name="COIN",
        calibrated_signal=0.8032,
        pinned_signal=0.8691,
    ),
}


@dataclass(frozen=True)
class Segment:
    """One annotated step occurrence, in seconds of video time.

    ``step_index`` is the column of the step in the video's step list; for duplicate step
    texts it is the *last* matching column, as in the published ground truth.
    """

    start: float
    end: float
    step: str
    step_index: int
    step_id: str | None = None


@dataclass(frozen=True)
class Video:
    """One annotated video with its candidate steps (stored order) and step segments."""

    dataset: str
    uid: str
    task: str
    group: str
    goal: str
    llm_goal: str
    steps: tuple[str, ...]
    segments: tuple[Segment, ...]
    fps: float
    num_frames: int
    duration: float
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def num_steps(self) -> int:
        """K, the number of candidate steps (the "none" option excluded)."""
        return len(self.steps)

    def num_rows(
        self, segment_duration: int = SEGMENT_DURATION, sampling_fps: float = SAMPLING_FPS
    ) -> int:
        """T, the number of per-second rows the published code scores for this video."""
        return num_rows(self.num_frames, self.fps, segment_duration, sampling_fps)

    def ground_truth(self, num_rows_: int | None = None) -> np.ndarray:
        """The (T, K+1) boolean ground truth, none last; see :func:`ground_truth`."""
        return ground_truth(self, self.num_rows() if num_rows_ is None else num_rows_)


def data_dir() -> Path:
    """The project's ``data/`` folder, or ``$BAGLM_DATA_DIR`` when set."""
    env = os.environ.get("BAGLM_DATA_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "data"


def annotation_path(name: str, root: str | os.PathLike | None = None) -> Path:
    """Path of dataset ``name``'s annotation file under ``root`` (default ``data/annotations``)."""
    spec = dataset_spec(name)
    base = Path(root) if root is not None else data_dir() / "annotations"
    return base / spec.filename


def dataset_spec(name: str) -> DatasetSpec:
    """The :class:`DatasetSpec` of ``name``; ValueError naming the known ones otherwise."""
    try:
        return DATASETS[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; choose one of {sorted(DATASETS)}") from None


class AnnotationError(ValueError):
    """A missing or malformed annotation file; the message names the file and record."""


def _field(record: dict, name: str, path: Path, index: int):
    try:
        return record[name]
    except (KeyError, TypeError):
        uid = record.get("video_uid", "?") if isinstance(record, dict) else "?"
        raise AnnotationError(
            f"{path}: record {index} (video_uid={uid!r}) has no field {name!r}"
        ) from None


def _parse_video(spec: DatasetSpec, record: dict, path: Path, index: int) -> Video:
    uid = _field(record, "video_uid", path, index)
    where = f"{path}: record {index} (video_uid={uid!r})"
    steps = _field(record, spec.steps_field, path, index)
    if not isinstance(steps, list) or not all(isinstance(s, str) for s in steps) or not steps:
        raise AnnotationError(
            f"{where}: field {spec.steps_field!r} must be a non-empty list of str"
        )
    column = {text: i for i, text in enumerate(steps)}  # last duplicate wins
    num_frames = _field(record, "video_num_frames", path, index)
    fps = _field(record, "video_fps", path, index)
    if not isinstance(num_frames, int) or num_frames <= 0:
        raise AnnotationError(f"{where}: field 'video_num_frames' must be a positive int")
    if not isinstance(fps, (int, float)) or not fps > 0:
        raise AnnotationError(f"{where}: field 'video_fps' must be a positive number")
    try:
        queries = record["clips"][0]["annotations"][0]["language_queries"]
    except (KeyError, IndexError, TypeError):
        raise AnnotationError(
            f"{where}: field 'clips[0].annotations[0].language_queries' is missing"
        ) from None
    segments = []
    for q_index, q in enumerate(queries):
        qwhere = f"{where}, language_queries[{q_index}]"
        try:
            start, end, text = float(q["clip_start_sec"]), float(q["clip_end_sec"]), q["query"]
        except (KeyError, TypeError, ValueError) as exc:
            raise AnnotationError(f"{qwhere}: bad or missing field ({exc})") from None
        if text not in column:
            raise AnnotationError(f"{qwhere}: query {text!r} is not in {spec.steps_field!r}")
        if not end >= start or start < 0:
            raise AnnotationError(f"{qwhere}: bad interval [{start}, {end}]")
        step_id = q.get("step")
        segments.append(
            Segment(start, end, text, column[text], None if step_id is None else str(step_id))
        )
    group = "_".join(str(_field(record, f, path, index)) for f in spec.group_fields)
    extra = {
        k: v
        for k, v in record.items()
        if k not in ("clips", spec.steps_field) and not k.startswith("video_")
    }
    return Video(
        dataset=spec.name,
        uid=str(uid),
        task=str(_field(record, spec.task_field, path, index)),
        group=group,
        goal=str(_field(record, spec.goal_field, path, index)),
        llm_goal=str(_field(record, spec.llm_goal_field, path, index)),
        steps=tuple(steps),
        segments=tuple(segments),
        fps=float(fps),
        num_frames=num_frames,
        duration=float(record.get("video_duration", num_frames / fps)),
        extra=extra,
    )


def load_dataset(name: str, root: str | os.PathLike | None = None) -> list[Video]:
    """Load dataset ``name`` (a key of :data:`DATASETS`) as :class:`Video` records.

    Records come in annotation-file order (CrossTask's subsets depend on it). ``root`` is the
    folder that holds the annotation files (default ``data/annotations``). Parsed files are
    remembered per (spec, path, mtime, size): an edited file or spec is read again.
    """
    return list(_load_cached(*dataset_version(name, root)))


def dataset_version(name: str, root: str | os.PathLike | None = None) -> tuple:
    """What :func:`load_dataset` remembers ``name``'s videos by: its spec, its annotation file,
    the file's modification time and size. A cache of values derived from a dataset's videos
    can key on it (cheap to compute and to hash) and so see an edited file or spec.
    """
    spec, path = dataset_spec(name), annotation_path(name, root)
    return (spec, str(path), *_stamp(path))


def _stamp(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except OSError:
        raise AnnotationError(f"{path}: annotation file not found") from None
    return st.st_mtime_ns, st.st_size


@lru_cache(maxsize=8)
def _load_cached(spec: DatasetSpec, path_str: str, _mtime_ns: int, _size: int) -> tuple[Video, ...]:
    path = Path(path_str)
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise AnnotationError(f"{path}: not UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise AnnotationError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(records, list):
        raise AnnotationError(f"{path}: expected a JSON list of video records")
    videos = tuple(_parse_video(spec, r, path, i) for i, r in enumerate(records))
    seen: set[str] = set()
    for i, v in enumerate(videos):
        if v.uid in seen:
            raise AnnotationError(f"{path}: record {i} repeats video_uid {v.uid!r}")
        seen.add(v.uid)
    return videos


def dataset_stats(
    name: str,
    root: str | os.PathLike | None = None,
    videos: Sequence[Video] | None = None,
) -> dict[str, float | int]:
    """Summary statistics of a dataset (reference-protocol §7.5).

    Keys: ``videos``, ``tasks``, ``groups``, ``mean_steps``, ``mean_duration_s`` (the
    annotation's ``video_duration``), ``mean_segment_s`` (mean annotated segment length;
    CrossTask's times are already floor/ceil-rounded), ``segments_per_video``,
    ``evaluable_pairs`` and ``mean_rows``.
    """
    videos = load_dataset(name, root) if videos is None else videos
    seg_lengths = [s.end - s.start for v in videos for s in v.segments]
    pairs = 0
    rows = []
    for v in videos:
        t = v.num_rows()
        rows.append(t)
        pairs += int(ground_truth(v, t)[:, :-1].any(axis=0).sum())
    return {
        "dataset": name,
        "videos": len(videos),
        "tasks": len({v.task for v in videos}),
        "groups": len({v.group for v in videos}),
        "mean_steps": round(float(np.mean([v.num_steps for v in videos])), 2),
        "mean_duration_s": round(float(np.mean([v.duration for v in videos])), 1),
        "mean_segment_s": round(float(np.mean(seg_lengths)), 2),
        "segments_per_video": round(len(seg_lengths) / len(videos), 2),
        "evaluable_pairs": pairs,
        "mean_rows": round(float(np.mean(rows)), 1),
    }
