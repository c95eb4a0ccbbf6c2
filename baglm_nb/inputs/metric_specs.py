"""The metrics as specs: one :class:`MetricSpec` per metric, carrying everything about it.

As in lmms-eval's task files, a metric's entry holds its key (in the ``evaluate`` JSON, the
tables and the reports), its label in words, its unit, a one-line description, its
aggregation over a dataset and whether higher is better. Everything that names a metric reads
it from :data:`METRICS`: the ``evaluate`` JSON and text, the tables' column names
(:func:`baglm_nb.analyses.display.header`), the ``follow`` report's table, and the table of
``docs/metrics.md`` (:func:`metric_table`, checked by a test). The functions that compute the
metrics live in ``core`` (R@1: :mod:`baglm_nb.core.evaluation`; online quality:
:mod:`baglm_nb.core.online_metrics`, whose :func:`~baglm_nb.core.online_metrics.dataset_metrics`
aggregates each :data:`ONLINE` spec as its ``aggregation`` and ``counts`` say);
localization's in :mod:`baglm_nb.analyses.localization.metrics`.

Adding a metric (``docs/architecture.md``): one entry here, its counts in its function, and
its test. Standard library only, so any stage may import it.

Exports :class:`MetricSpec`, :data:`AGGREGATIONS`, :data:`GROUPS`, :data:`METRICS`,
:func:`metric_spec`, :func:`metric_keys` and :func:`metric_table`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal, get_args

__all__ = [
    "AGGREGATIONS",
    "FRACTION",
    "GROUPS",
    "METRICS",
    "ONLINE",
    "R_AT_1",
    "Aggregation",
    "MetricGroup",
    "MetricSpec",
    "metric_keys",
    "metric_spec",
    "metric_table",
]

Aggregation = Literal[
    "pair_mean", "task_subset_mean", "activity_mean", "query_mean", "pooled_ratio",
    "harmonic_mean", "median", "p90",
]  # fmt: skip
MetricGroup = Literal["grounding", "online", "localization", "diagnostic"]

#: How a metric is taken over a dataset. ``pair_mean``: the mean over (video, step) pairs;
#: ``task_subset_mean``: per task, then over tasks, over random video subsets;
#: ``activity_mean``: average precision per activity, then over activities and tIoUs;
#: ``query_mean``: the mean over queries; ``pooled_ratio``: the ``counts`` (numerator,
#: denominator) pooled over the videos, divided once (per task over the recall subsets where
#: the dataset's recall is per task); ``harmonic_mean``: of the two metrics in ``counts``;
#: ``median`` / ``p90``: of the values of ``counts[0]`` pooled over the videos.
AGGREGATIONS: tuple[str, ...] = get_args(Aggregation)
#: What a metric judges: the paper's grounding number, online quality (``follow``'s view, the
#: ``online`` keys of ``evaluate --json``), step localization, or a diagnosis.
GROUPS: tuple[str, ...] = get_args(MetricGroup)
#: How many ``counts`` each aggregation needs (others need none).
_COUNTS = {"pooled_ratio": 2, "harmonic_mean": 2, "median": 1, "p90": 1}


@dataclass(frozen=True)
class MetricSpec:
    """Everything about one metric.

    ``key`` names it in outputs; ``label`` in words and ``unit`` (``"fraction"``, ``"s"``,
    ``"%"``, ``"per min"``) make its :attr:`header`; ``description`` is its one line (the
    ``follow`` report's "what", the docs' table); ``aggregation`` is one of
    :data:`AGGREGATIONS`, with its ``counts`` (what it aggregates: for the ``online`` group,
    columns of :func:`~baglm_nb.core.online_metrics.video_counts` or other online metrics; for
    a diagnosis, its function's own counts); ``higher_is_better`` is None for a reference
    value (the ground truth's own flicker); ``group`` is one of :data:`GROUPS`.
    """

    key: str
    label: str
    unit: str
    description: str
    aggregation: Aggregation
    higher_is_better: bool | None
    group: MetricGroup
    counts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.key.isidentifier():
            raise ValueError(f"metric key must be an identifier, got {self.key!r}")
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(
                f"metric {self.key}: aggregation must be one of {AGGREGATIONS}, "
                f"got {self.aggregation!r}"
            )
        if self.group not in GROUPS:
            raise ValueError(
                f"metric {self.key}: group must be one of {GROUPS}, got {self.group!r}"
            )
        if len(self.counts) != _COUNTS.get(self.aggregation, 0):
            raise ValueError(
                f"metric {self.key}: aggregation {self.aggregation} takes "
                f"{_COUNTS.get(self.aggregation, 0)} counts, got {self.counts!r}"
            )

    @property
    def header(self) -> str:
        """The label with its unit, as a table's column name: ``"delay median (s)"``; a
        fraction's label alone; ``"top-state changes per min"``."""
        if self.unit == FRACTION:
            return self.label
        if self.unit.startswith("per "):
            return f"{self.label} {self.unit}"
        return f"{self.label} ({self.unit})"

    def describe(self) -> dict:
        """The spec as JSON fields (``counts`` left out: how it is computed, not what it is)."""
        out = asdict(self)
        del out["counts"]
        return out


_SPECS = (
    MetricSpec("r_at_1", "R@1", "%",
               "(video, step) pairs whose highest-belief second lies inside the step's annotation",
               "pair_mean", True, "grounding"),
    MetricSpec("avg_r_at_1", "Avg. R@1", "%",
               "R@1 per task, averaged over tasks, over random subsets of the videos",
               "task_subset_mean", True, "grounding"),
    MetricSpec("frame_accuracy", "per-second accuracy", "fraction",
               "per-second accuracy: top state (a step or none) right, every second",
               "pooled_ratio", True, "online", ("rows_correct", "rows")),
    MetricSpec("frame_accuracy_on_steps", "step-row accuracy", "fraction",
               "per-second accuracy on the seconds where a step is annotated",
               "pooled_ratio", True, "online", ("step_rows_correct", "step_rows")),
    MetricSpec("announce_precision", "announcement precision", "fraction",
               "announcements of a step inside an annotated interval of that step",
               "pooled_ratio", True, "online", ("announced_correct", "announced")),
    MetricSpec("announce_recall", "announcement recall", "fraction",
               "annotated steps with at least one correct announcement",
               "pooled_ratio", True, "online", ("steps_found", "steps_annotated")),
    MetricSpec("announce_f1", "announcement F1", "fraction",
               "2 P R / (P + R) of the two above",
               "harmonic_mean", True, "online", ("announce_precision", "announce_recall")),
    MetricSpec("delay_median_s", "delay median", "s",
               "annotated start to the first correct announcement (s), median",
               "median", False, "online", ("delays",)),
    MetricSpec("delay_p90_s", "delay p90", "s",
               "the same delay, 90th percentile",
               "p90", False, "online", ("delays",)),
    MetricSpec("flicker_per_min", "top-state changes", "per min",
               "changes of the top state per minute",
               "pooled_ratio", False, "online", ("changes", "minutes")),
    MetricSpec("truth_flicker_per_min", "annotated-state changes", "per min",
               "changes of the annotated state per minute (ground truth)",
               "pooled_ratio", None, "online", ("truth_changes", "minutes")),
    MetricSpec("absent_step_share", "absent-step share", "fraction",
               "step rows whose top state is a step the video never does",
               "pooled_ratio", False, "diagnostic", ("absent_rows", "step_rows")),
    MetricSpec("map", "mAP", "%",
               "HT-Step article-grounding AP, mean over activities (at a tIoU, or over 0.3-0.7)",
               "activity_mean", True, "localization"),
    MetricSpec("windowed_r_at_1", "windowed R@1", "%",
               "(video, step) pairs whose top-1 segment overlaps the annotation (IoU > threshold)",
               "query_mean", True, "localization"),
)  # fmt: skip

#: Every metric by key, in reading order. A test adds one with ``monkeypatch.setitem``; every
#: reader looks it up at call time, so the new entry reaches every output.
METRICS: dict[str, MetricSpec] = {s.key: s for s in _SPECS}

#: The online group's name (``evaluate --json``'s ``online`` keys).
ONLINE: str = GROUPS[1]
#: The unit of a share in [0, 1] (drawn times 100, in percent, in figures).
FRACTION = "fraction"
#: The paper's measure (a dataset's ``Recall`` names it or its per-task average).
R_AT_1 = "r_at_1"


def metric_spec(key: str) -> MetricSpec:
    """The spec of metric ``key``; a ``KeyError`` naming the known keys otherwise."""
    try:
        return METRICS[key]
    except KeyError:
        raise KeyError(f"unknown metric {key!r}; known: {', '.join(METRICS)}") from None


def metric_keys(group: str) -> tuple[str, ...]:
    """The keys of the metrics of ``group`` (one of :data:`GROUPS`), in reading order."""
    if group not in GROUPS:
        raise ValueError(f"metric group must be one of {GROUPS}, got {group!r}")
    return tuple(k for k, s in METRICS.items() if s.group == group)


def metric_table() -> str:
    """Every metric as a Markdown table: key, group, header, unit, aggregation, better, what
    (the table of ``docs/metrics.md``, which a test compares with this)."""
    better = {True: "higher", False: "lower", None: "neither"}
    lines = [
        "| key | group | header | unit | aggregation | better | what |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| `{s.key}` | {s.group} | {s.header} | {s.unit} | {s.aggregation} | "
        f"{better[s.higher_is_better]} | {s.description} |"
        for s in METRICS.values()
    ]
    return "\n".join(lines)
