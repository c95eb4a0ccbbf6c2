"""What a followed run used, named once: its observation source, D, announcement settings and
the filter's stay.

:func:`run_settings` lists them as ``(name, value)`` fields, in the order both the terminal's
first lines (:func:`settings_line`) and the HTML report's banner
(:class:`baglm_nb.apps.online.report.RunReport`, ``settings``) show them, so a field added to
the list shows in both. A value that is missing prints as
:data:`~baglm_nb.analyses.display.MISSING` ("–").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from baglm_nb.apps.follow_config import FollowConfig
    from baglm_nb.core.online import OnlineGrounder

__all__ = ["dependency_label", "run_settings", "settings_line"]


def dependency_label(config: FollowConfig) -> str:
    """The D a run used: ``--deps`` for a dataset video, or what the task file gives."""
    from baglm_nb.core.simulate_deps import SIMULATED_LLM
    from baglm_nb.inputs.tasks import load_task

    path = config.task_path
    if not path:
        return str(config.deps or SIMULATED_LLM)
    task = load_task(path)
    if task.dependency is not None:
        return f"the task file's 'dependency' ({path})"
    if task.ordered:
        return f"the task file's step order, a chain ({path})"
    return f"none: the task file has no 'dependency' and is not ordered ({path})"


def _segments(count: int, segment_duration: int) -> str:
    """A count of segments with its length in seconds."""
    unit = "segment" if count == 1 else "segments"
    return f"{count} {unit} ({count * segment_duration:g} s)"


def _stay(stay: float) -> str:
    """The filter's stay S: the paper's filter at 0, else labelled beyond the paper."""
    from baglm_nb.inputs.variants import stay_label

    return stay_label(stay).removeprefix("stay ") if stay else "0 (the paper's filter)"


def run_settings(config: FollowConfig, grounder: OnlineGrounder) -> list[tuple[str, str]]:
    """The ``(name, value)`` fields of what the run used, in the order they are shown."""
    d = grounder.segment_duration
    h = grounder.hysteresis
    return [
        ("observations", grounder.source),
        ("D", dependency_label(config)),
        ("threshold", f"{h.threshold:g}"),
        ("patience", _segments(h.patience, d)),
        ("smoothing lag", _segments(config.lag_segments, d)),
        ("stay", _stay(config.stay)),
    ]


def settings_line(fields: Sequence[tuple[str, str]]) -> str:
    """The fields as one terminal line: ``settings: name: value; name: value; ...``."""
    from baglm_nb.analyses.display import MISSING

    return "settings: " + "; ".join(f"{name}: {value or MISSING}" for name, value in fields)
