"""Whether a followed run raises alerts (``--alerts``, ``--alert-threshold``), and its monitor.

Alerts are read from the run's prerequisites D (:mod:`baglm_nb.core.alerts`): on by default when
the run has a D with a prerequisite, off (with the reason printed once) otherwise. Asking for
alerts on a run without a D, or a threshold outside [0, 1], is bad input (``ValueError``
naming the flag).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from baglm_nb.apps.follow_config import FollowConfig
    from baglm_nb.core.alerts import AlertMonitor
    from baglm_nb.core.online import OnlineGrounder

__all__ = ["alert_monitor", "alert_setting"]


def _no_dependency_reason(config: FollowConfig) -> str | None:
    """Why this run has no D (a task file without 'dependency' or with no prerequisite in it,
    or --deps none), else None."""
    from baglm_nb.core.alerts import has_dependencies
    from baglm_nb.inputs.tasks import load_task

    path = config.task_path
    if path:
        dependency = load_task(path).dependency
        if dependency is None:
            return f"the task file {path} has no 'dependency' field"
        if not has_dependencies(dependency):
            return f"the task file {path} has no prerequisite in 'dependency' " + _why(
                len(dependency)
            )
        return None
    return "--deps none gives no prerequisites" if config.deps == "none" else None


def _why(num_steps: int) -> str:
    """Why a D of ``num_steps`` steps holds no prerequisite, in parentheses."""
    if num_steps == 1:
        return "(a task of one step: no other step can come before it)"
    return "(all zero off the diagonal)"


def alert_setting(config: FollowConfig) -> tuple[bool, str]:
    """``(on, the line to print once)`` from ``--alerts`` and the run's D; checked before
    anything loads. ``--alert-threshold`` outside [0, 1], or ``--alerts`` without a D, is bad
    input (``ValueError`` naming the flag)."""
    from baglm_nb.core.alerts import check_level

    check_level("--alert-threshold", config.alert_threshold)
    missing = _no_dependency_reason(config)
    if missing and config.alerts:
        raise ValueError(f"--alerts needs a dependency matrix D, and {missing}")
    if missing:
        return False, f"alerts: off ({missing})"
    if config.alerts is False:
        return False, "alerts: off (--no-alerts)"
    return True, f"alerts: on (from D, --alert-threshold {config.alert_threshold:g})"


def alert_monitor(
    config: FollowConfig, grounder: OnlineGrounder, on: bool, line: str
) -> tuple[AlertMonitor | None, str]:
    """``(AlertMonitor or None, the line to print)``; a D with no prerequisite gives none."""
    from baglm_nb.core.alerts import AlertMonitor, has_dependencies

    if not on:
        return None, line
    dependency = grounder.state.dependency
    if not has_dependencies(dependency):
        why = _why(len(dependency))
        if config.alerts:
            raise ValueError(
                f"--alerts needs a dependency matrix D, and this run's D has no prerequisite {why}"
            )
        return None, f"alerts: off (the dependency matrix D has no prerequisite {why})"
    monitor = AlertMonitor(
        dependency,
        grounder.steps,
        threshold=config.alert_threshold,
        segment_duration=grounder.segment_duration,
    )
    return monitor, line
