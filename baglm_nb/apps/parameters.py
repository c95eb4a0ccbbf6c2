"""Notebook parameters checked before any work: a value of the wrong type names the parameter.

Every notebook's cell after ``parameters`` (where papermill puts its injected values) calls
``check_parameters(globals())``. The rules go by name, so one table serves every notebook: a
name that ends in ``limit`` is ``None`` or a whole number >= 1, ``dataset`` is a dataset name,
``datasets`` and ``*_datasets`` lists of them, and so on (:data:`RULES`); names without a rule
are not checked. A text value of ``scores``, ``deps``, ``video_dir``, ``annotations`` or
``timings`` that is no named setting must be a folder or file that exists. It returns the
parameters (:func:`notebook_parameters`), which the notebook passes on to the tables it writes
(``summary.json`` records them).

Exports :data:`RULES`, :func:`notebook_parameters` and :func:`check_parameters`.
"""

from __future__ import annotations

import numbers
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from baglm_nb.inputs.datasets import DATASETS

__all__ = ["RULES", "check_parameters", "notebook_parameters"]


def _whole(value: Any, low: int) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= low


def _number(value: Any, low: float | None = None, high: float | None = None) -> bool:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value != value:
        return False
    return (low is None or value >= low) and (high is None or value <= high)


def _list_of(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, (list, tuple)) and all(check(x) for x in v)


def _path_or_none(value: Any) -> bool:
    return value is None or isinstance(value, (str, os.PathLike))


def _setting(value: Any) -> bool:
    """A scores or deps setting: a name or folder, or a per-dataset mapping of them."""
    if isinstance(value, Mapping):
        return all(k in DATASETS for k in value)
    return isinstance(value, (str, os.PathLike))


_DATASET_NAMES = f"one of {sorted(DATASETS)}"

#: ``(name pattern, check, what is expected)``; the first pattern that matches a name applies.
RULES: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    (r"(\w+_)?limit", lambda v: v is None or _whole(v, 1), "a whole number >= 1, or None"),
    (r"dataset", lambda v: v in DATASETS, _DATASET_NAMES),
    (r"(\w+_)?datasets", _list_of(lambda x: x in DATASETS), f"a list, each {_DATASET_NAMES}"),
    (r"segment_duration|bins|keyframes|max_videos", lambda v: _whole(v, 1), "a whole number >= 1"),
    (
        r"workers|num_gpus_per_worker",
        lambda v: v is None or _number(v, 0),
        "a number >= 0, or None",
    ),
    (r"durations", _list_of(lambda x: _whole(x, 1)), "a list of whole numbers >= 1"),
    (
        r"(\w+_)?thresholds|noise_levels",
        _list_of(lambda x: _number(x, 0, 1)),
        "a list of numbers in [0, 1]",
    ),
    (r"threshold", lambda v: v is None or _number(v, 0, 1), "a number in [0, 1], or None"),
    (r"stays", _list_of(lambda x: _number(x, 0) and x < 1), "a list of numbers in [0, 1)"),
    (r"twins", _list_of(_setting), "a list of scores settings ('simulated', a folder ...)"),
    (r"signals", _list_of(lambda x: _number(x, 0)), "a list of numbers >= 0"),
    (r"video_dir|annotations|cache_root|timings", _path_or_none, "a folder path, or None"),
    (
        r"(\w+_)?scores",
        lambda v: _setting(v) or _list_of(_setting)(v),
        "'simulated', a folder, {dataset: one of those} or a list of folders",
    ),
    (
        r"(\w+_)?deps",
        lambda v: _setting(v) or _list_of(_setting)(v),
        "a deps setting ('oracle', 'simulated-llm:llama', a folder ...) or {dataset: ...}",
    ),
    (r"trust_remote_code|match_labels", lambda v: isinstance(v, bool), "True or False"),
)


#: ``(name pattern, whether a name is a setting)``: parameters whose text values, unless named
#: settings (``simulated``, ``oracle``, ``simulated-llm:gpt`` ...), are folders that must exist.
_FOLDERS: tuple[tuple[str, Callable[[str], bool]], ...] = (
    (r"(\w+_)?scores", lambda text: _named(text, "OBSERVATION_RESOLVERS")),
    (r"(\w+_)?deps", lambda text: _named(text, "DEPENDENCY_RESOLVERS")),
    (r"video_dir|annotations|timings", lambda text: False),
)


def _named(text: str, table: str) -> bool:
    from baglm_nb.core import sources

    return text.split(":", 1)[0] in getattr(sources, table)


def _texts(value: Any) -> list[str]:
    """The text values in a setting: itself, a mapping's values, a list's items."""
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(value)]
    if isinstance(value, Mapping):
        return [t for v in value.values() for t in _texts(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _texts(v)]
    return []


def _missing_folder(name: str, value: Any) -> str | None:
    """The first folder ``value`` names that does not exist (``None`` when all do)."""
    for pattern, named in _FOLDERS:
        if re.fullmatch(pattern, name):
            return next((t for t in _texts(value) if not named(t) and not os.path.exists(t)), None)
    return None


#: Names in a notebook's namespace that IPython puts there (not parameters).
_IPYTHON_NAMES = ("In", "Out")

#: The types of a parameter's value (what papermill can inject).
_VALUE_TYPES = (str, numbers.Number, bool, list, tuple, dict, type(None))


def notebook_parameters(namespace: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters in ``namespace`` (a notebook's ``globals()`` right after its parameters).

    Every lower-case name that IPython did not put there (``In``, ``Out``, names starting
    with ``_``) and that holds data (text, a number, None, a list, tuple or dict), in their
    order; functions, modules and constants a parameters cell imports (``DATASETS``) are left
    out.
    """
    return {
        name: value
        for name, value in namespace.items()
        if not name.startswith("_")
        and name == name.lower()
        and name not in _IPYTHON_NAMES
        and isinstance(value, _VALUE_TYPES)
    }


def check_parameters(namespace: Mapping[str, Any]) -> dict[str, Any]:
    """Check the notebook parameters found in ``namespace`` (a notebook's ``globals()``).

    Returns
    -------
    dict
        The parameters (:func:`notebook_parameters`), for the summaries of the tables.

    Raises
    ------
    ValueError
        ``notebook parameter limit='five': expected a whole number >= 1, or None``: the first
        parameter that breaks its rule, or names a folder that does not exist.
    """
    for name, value in namespace.items():
        if name.startswith("_"):
            continue
        for pattern, check, expected in RULES:
            if re.fullmatch(pattern, name):
                if not check(value):
                    raise ValueError(f"notebook parameter {name}={value!r}: expected {expected}")
                break
        missing = _missing_folder(name, value)
        if missing is not None:
            raise ValueError(
                f"notebook parameter {name}={value!r}: no such folder {missing!r} (nor a named "
                "setting such as 'simulated' or 'oracle')"
            )
    return notebook_parameters(namespace)
