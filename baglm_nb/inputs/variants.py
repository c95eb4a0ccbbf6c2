"""The project's vocabulary: every name a user chooses from, and the published grid, once.

The filter's variants (transitions, each a :class:`TransitionSpec` carrying the readiness and
validity flags the kernels take; priors, steppings, precisions, the label of its ``stay``
option beyond the paper), the online gap modes, the
simulator's off-step progress models and the grid (:data:`SEGMENT_DURATION`,
:data:`SAMPLING_FPS`) are written here and only here; CLI choices, widgets, tables and checks
import them. Each ``Literal`` type is the source of its tuple (``typing.get_args``), so the
two cannot drift apart. Standard library only, so any stage may import it.

The dataset names are not here: they are the keys of
:data:`baglm_nb.inputs.datasets.DATASETS`, one :class:`~baglm_nb.inputs.datasets.DatasetSpec`
each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

__all__ = [
    "BASE_PRIORS",
    "GAP_MODES",
    "LOCALIZATIONS",
    "OFF_STEP_PROGRESS",
    "PRECISIONS",
    "PRIORS",
    "PUBLISHED_PRECISION",
    "SAMPLING_FPS",
    "SEGMENT_DURATION",
    "STEPPINGS",
    "TRANSITIONS",
    "TRANSITION_SPECS",
    "GapMode",
    "Localization",
    "Precision",
    "Prior",
    "Stepping",
    "Transition",
    "TransitionSpec",
    "stay_label",
    "transition_spec",
    "with_stay",
]

#: The published grid: 2-second segments (reference-protocol §1.2) sampled at 2 frames per second.
SEGMENT_DURATION = 2
SAMPLING_FPS = 2.0

Transition = Literal["static", "readiness", "validity", "both"]
Prior = Literal["uniform", "propagated", "next_step"]
Stepping = Literal["second", "segment"]
Precision = Literal["float64", "float32-published"]
GapMode = Literal["predict", "pause"]
Localization = Literal["article_map", "windowed_recall"]

#: Transition variants, in the order of the paper's table (static, +readiness, +validity, both).
TRANSITIONS: tuple[str, ...] = get_args(Transition)


@dataclass(frozen=True)
class TransitionSpec:
    """One transition variant: which factors weight the static matrix's destination columns.

    ``uses_readiness``: the share of a step's prerequisites already done; ``uses_validity``:
    the share of the steps that need it not yet done (paper eq. 4-5). The filter's kernels take
    these two flags, never the variant's position in :data:`TRANSITIONS`; the paper's table
    prints them as its Readiness and Validity check marks.
    """

    name: str
    uses_readiness: bool
    uses_validity: bool

    @property
    def is_full(self) -> bool:
        """Both factors: BaGLM's own transition."""
        return self.uses_readiness and self.uses_validity


#: Each transition variant's spec, keyed by name, in the order of :data:`TRANSITIONS`.
TRANSITION_SPECS: dict[str, TransitionSpec] = {
    spec.name: spec
    for spec in (
        TransitionSpec("static", uses_readiness=False, uses_validity=False),
        TransitionSpec("readiness", uses_readiness=True, uses_validity=False),
        TransitionSpec("validity", uses_readiness=False, uses_validity=True),
        TransitionSpec("both", uses_readiness=True, uses_validity=True),
    )
}


def transition_spec(transition: str | TransitionSpec) -> TransitionSpec:
    """The spec of a transition variant (a spec is returned as is); ``ValueError`` naming the
    choices for an unknown name."""
    if isinstance(transition, TransitionSpec):
        return transition
    spec = TRANSITION_SPECS.get(transition) if isinstance(transition, str) else None
    if spec is None:
        raise ValueError(f"transition must be one of {TRANSITIONS}, got {transition!r}")
    return spec


#: State priors divided out in the update; ``next_step`` needs the LMM's next-step scores.
PRIORS: tuple[str, ...] = get_args(Prior)
#: The priors that need no extra scores (what a cache without next-step scores offers).
BASE_PRIORS: tuple[str, ...] = PRIORS[:2]
#: Filter steps: once per per-second row (the published code) or once per segment.
STEPPINGS: tuple[str, ...] = get_args(Stepping)
#: Filter arithmetic: float64, or the published code's torch float32 order of operations.
PRECISIONS: tuple[str, ...] = get_args(Precision)
PUBLISHED_PRECISION: str = PRECISIONS[1]
"""The published code's torch float32 arithmetic: the default on the authors' imported files."""
#: What the online grounder does over segments a live stream lost.
GAP_MODES: tuple[str, ...] = get_args(GapMode)
#: A dataset's localization protocol: article-grounding mAP at tIoU (HT-Step), or windowed
#: R@1 at IoU over natural-language queries (Ego4D Goal-Step, NLQ).
LOCALIZATIONS: tuple[str, ...] = get_args(Localization)
#: How the simulator reads a step that is not on screen (``core/simulate.py``).
OFF_STEP_PROGRESS: tuple[str, ...] = ("noisy", "zero")


def stay_label(stay: float) -> str:
    """How an output made with the filter's ``stay`` S says so: ``"stay S (beyond the paper)"``;
    ``""`` for 0, the paper's filter."""
    return f"stay {float(stay):g} (beyond the paper)" if stay else ""


def with_stay(what: str, stay: float) -> str:
    """A title or banner ``what`` that says so when the filter ran with a non-zero ``stay``:
    ``"<what>; stay S (beyond the paper)"`` (``what`` unchanged for 0)."""
    return f"{what}; {stay_label(stay)}" if stay else what
