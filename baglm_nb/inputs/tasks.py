"""A procedure to follow online: :class:`Task` (goal, steps, optional D) and :func:`load_task`.

A task file is JSON (or YAML when it ends in .yaml/.yml); errors name the file and the field.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["Task", "load_task"]


@dataclass(frozen=True)
class Task:
    """A procedure to follow: a goal, its steps and (optionally) a dependency matrix.

    ``dependency`` is (K, K) with ``D[i, j] = P(step j is a prerequisite of step i)``; an
    ordered task without one gets the chain of its listed order, an unordered one all zeros
    (BaGLM then reduces to the normalised scores).
    """

    goal: str
    steps: tuple[str, ...]
    ordered: bool = True
    dependency: np.ndarray | None = field(default=None, compare=False)

    def dependency_matrix(self) -> np.ndarray:
        """D for this task: the given matrix, the chain of an ordered list, or zeros."""
        k = len(self.steps)
        if self.dependency is not None:
            return np.asarray(self.dependency, dtype=np.float64)
        d = np.zeros((k, k))
        if self.ordered:
            d[np.arange(1, k), np.arange(k - 1)] = 1.0
        return d


def _task_error(path: Path, field_name: str, message: str) -> ValueError:
    return ValueError(f"{path}: field {field_name!r} {message}")


def load_task(path: str | os.PathLike) -> Task:
    """Read and validate a task file (JSON, or YAML when it ends in .yaml/.yml).

    Fields: ``goal`` (str), ``steps`` (non-empty list of distinct str), ``ordered`` (bool,
    default true), ``dependency`` (optional K x K list of numbers in [0, 1]). Errors name the
    file and the field.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read task file ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 (byte {exc.start}); save it as UTF-8") from None
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    except Exception as exc:  # noqa: BLE001 - any parse error becomes one clear message
        kind = path.suffix.lstrip(".").upper() or "JSON"
        raise ValueError(f"{path}: not valid {kind} ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a task file holds one object with 'goal' and 'steps'")
    unknown = set(data) - {"goal", "steps", "ordered", "dependency"}
    if unknown:
        raise _task_error(path, sorted(unknown)[0], "is not a task field")
    goal = data.get("goal")
    if not isinstance(goal, str) or not goal.strip():
        raise _task_error(path, "goal", "must be a non-empty string")
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps:
        raise _task_error(path, "steps", "must be a non-empty list of strings")
    for i, s in enumerate(steps):
        if not isinstance(s, str) or not s.strip():
            raise _task_error(path, f"steps[{i}]", "must be a non-empty string")
    if len(set(steps)) != len(steps):
        raise _task_error(path, "steps", "has duplicate step texts")
    ordered = data.get("ordered", True)
    if not isinstance(ordered, bool):
        raise _task_error(path, "ordered", "must be true or false")
    dep = data.get("dependency")
    matrix = None
    if dep is not None:
        try:
            matrix = np.asarray(dep, dtype=np.float64)
        except (TypeError, ValueError):
            raise _task_error(path, "dependency", "must be a K x K list of numbers") from None
        k = len(steps)
        if matrix.shape != (k, k):
            raise _task_error(path, "dependency", f"must be {k} x {k}, got {matrix.shape}")
        bad = ~np.isfinite(matrix) | (matrix < 0) | (matrix > 1)
        if bad.any():
            i, j = (int(x) for x in np.argwhere(bad)[0])
            raise _task_error(
                path,
                "dependency",
                f"must hold probabilities in [0, 1]; row {i}, column {j} is {float(matrix[i, j])!r}"
                f" ({int(bad.sum())} such value(s))",
            )
    return Task(goal.strip(), tuple(steps), ordered, matrix)
