"""The authors' published ``.pt`` files, one at a time: find, load safely, check.

The rule: accept exactly what the published code runs on, and refuse what is impossible as a
probability. Each decision is one line naming the file (and the row and value where there is
one).

Accepted, with a one-line warning of a kind (:data:`WARNING_KINDS`):

- ``own_rows``: T differs from the row count derived from the video's frames; the published
  evaluation builds its ground truth on the file's own T, and so does the importer;
- ``clipped``: probabilities at most :data:`TOLERANCE` outside [0, 1] (float rounding, e.g. a
  prerequisite of 1.0000001); clipped, the largest deviation reported;
- ``dtype``: a float tensor that is not float32 (e.g. float64); its values are kept, and the
  ``float32-published`` precision rounds them to float32 as the published files are;
- ``near_repeat``: the rows of one segment differ within ``np.isclose``; the first is kept.

Refused (:class:`Refused`): not a single float tensor; NaN or inf; a probability outside [0, 1]
by more than :data:`TOLERANCE`; a VSG row or a progress row of the 10 digits summing above
``1 +`` :data:`ROW_SUM_TOLERANCE` (full-vocabulary probabilities sum to at most 1); K that
disagrees with the annotation; a file present both flat and in the model sub-folder with
different contents (both named: never one picked silently).

Exports :data:`TOLERANCE`, :data:`ROW_SUM_TOLERANCE`, :data:`WARNING_KINDS`, :class:`Refused`,
:class:`Notes`, :func:`find_and_load`, :func:`check_vsg`, :func:`check_progress`,
:func:`check_prerequisites` and :func:`per_segment`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from baglm_nb.inputs import grid

__all__ = [
    "ROW_SUM_TOLERANCE",
    "TOLERANCE",
    "WARNING_KINDS",
    "Notes",
    "Refused",
    "check_prerequisites",
    "check_progress",
    "check_vsg",
    "find_and_load",
    "per_segment",
]

TOLERANCE = 1e-5
"""How far outside [0, 1] a probability may be (float rounding) and still be clipped."""
ROW_SUM_TOLERANCE = 1e-3
"""How far above 1 a row of full-vocabulary probabilities may sum."""

WARNING_KINDS: dict[str, str] = {
    "own_rows": "T differs from the frame-derived row count (evaluated on the file's own T)",
    "clipped": f"probabilities within {TOLERANCE:g} outside [0, 1], clipped",
    "dtype": "not float32 (rounded to float32 in the float32-published precision)",
    "near_repeat": "rows of a segment differ slightly (the first row of each segment kept)",
}


class Refused(ValueError):
    """A file the importer refuses: ``line`` names the file, ``path`` is that file."""

    def __init__(self, line: str, path: Path | str) -> None:
        super().__init__(line)
        self.path = str(path)


@dataclass
class Notes:
    """The warnings of one import, one line each, counted by kind; ``log`` prints each line."""

    log: Callable[[str], None] = field(default=lambda line: print(line, file=sys.stderr))
    lines: dict[str, list[str]] = field(default_factory=dict)
    max_clipped: float = 0.0

    def warn(self, kind: str, line: str) -> None:
        """Record (and log) a warning of ``kind`` (a key of :data:`WARNING_KINDS`)."""
        self.lines.setdefault(kind, []).append(line)
        self.log(f"warning: {line}")

    def counts(self) -> dict[str, int]:
        """Warnings per kind (every kind listed, zeros included)."""
        return {kind: len(self.lines.get(kind, [])) for kind in WARNING_KINDS}


def _load(path: Path) -> tuple[np.ndarray, str]:
    """One float tensor as float64 (exact) and its dtype name; :class:`Refused` otherwise."""
    import torch

    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # unpickling errors come in many types
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
        raise Refused(
            f"{path}: cannot load as a single tensor with torch.load(weights_only=True) "
            f"({type(exc).__name__}: {first[:200]})",
            path,
        ) from None
    if not isinstance(obj, torch.Tensor):
        raise Refused(f"{path}: expected a single tensor, got {type(obj).__name__}", path)
    if not obj.is_floating_point():
        raise Refused(f"{path}: expected a float tensor, got dtype {obj.dtype}", path)
    return obj.detach().to(torch.float64).numpy(), str(obj.dtype).removeprefix("torch.")


def find_and_load(
    base: Path, sub: str, name: str, notes: Notes
) -> tuple[Path, np.ndarray] | tuple[None, list[Path]]:
    """Find ``base/sub/name.pt`` or ``base/name.pt`` and load it.

    Returns ``(path, array)``, or ``(None, candidates)`` when neither exists. Both existing is
    fine when they hold the same tensor; when they differ, :class:`Refused` names both.
    """
    candidates = [base / sub / f"{name}.pt", base / f"{name}.pt"]
    found = [c for c in candidates if c.is_file()]
    if not found:
        return None, candidates
    loaded = [_load(c) for c in found]
    if len(loaded) == 2:
        (a, a_dtype), (b, b_dtype) = loaded
        if a.shape != b.shape or a_dtype != b_dtype or not np.array_equal(a, b, equal_nan=True):
            raise Refused(
                f"{found[0]}: differs from {found[1]}; both exist, remove the one that is not "
                "meant (the importer never picks one silently)",
                found[0],
            )
    array, dtype = loaded[0]
    if dtype != "float32":
        notes.warn("dtype", f"{found[0]}: {dtype} tensor (the published files are float32)")
    return found[0], array


def _where(index: Sequence[int], axes: Sequence[str]) -> str:
    return ", ".join(f"{a} {int(i)}" for a, i in zip(axes, index, strict=True))


def _probabilities(a: np.ndarray, path: Path, axes: Sequence[str], notes: Notes) -> np.ndarray:
    """NaN/inf and out-of-range checks; values within :data:`TOLERANCE` of [0, 1] clipped."""
    bad = ~np.isfinite(a)
    if bad.any():
        i = np.unravel_index(np.argmax(bad), a.shape)
        raise Refused(f"{path}: {_where(i, axes)}: value {a[i]} (NaN or inf)", path)
    deviation = np.maximum(-a, a - 1.0)
    worst = float(deviation.max(initial=0.0))
    if worst > TOLERANCE:
        i = np.unravel_index(np.argmax(deviation), a.shape)
        raise Refused(
            f"{path}: {_where(i, axes)}: value {a[i]:.9g} is outside [0, 1] by more than "
            f"{TOLERANCE:g}; not a probability",
            path,
        )
    if worst > 0:
        n = int((deviation > 0).sum())
        notes.max_clipped = max(notes.max_clipped, worst)
        notes.warn(
            "clipped",
            f"{path}: {n} value(s) outside [0, 1] by at most {worst:.3g} "
            f"(within {TOLERANCE:g}) clipped",
        )
        a = np.clip(a, 0.0, 1.0)
    return a


def _row_sums(a: np.ndarray, path: Path, axes: Sequence[str], what: str) -> None:
    sums = a.sum(axis=-1)
    if sums.size and sums.max() > 1.0 + ROW_SUM_TOLERANCE:
        i = np.unravel_index(np.argmax(sums), sums.shape)
        raise Refused(
            f"{path}: {_where(i, axes)}: {what} sum to {sums[i]:.6g} > 1 + {ROW_SUM_TOLERANCE:g}; "
            "probabilities of one softmax sum to at most 1",
            path,
        )


def _shape(a: np.ndarray, path: Path, tail: tuple[int, ...], names: str, whose: str) -> int:
    """T of a (T, *tail) array; :class:`Refused` naming the mismatching dimension."""
    if a.ndim != len(tail) + 1:
        raise Refused(f"{path}: expected a {names} tensor, got shape {a.shape}", path)
    if a.shape[1:] != tail:
        raise Refused(
            f"{path}: shape {a.shape} disagrees with the annotation of {whose}: expected "
            f"{names} = (T, {', '.join(map(str, tail))})",
            path,
        )
    if a.shape[0] == 0:
        raise Refused(f"{path}: no rows (shape {a.shape})", path)
    return a.shape[0]


def check_vsg(a: np.ndarray, path: Path, k: int, video: str, notes: Notes) -> np.ndarray:
    """A (T, K+1) VSG array, checked and clipped; ``video`` names the annotation."""
    _shape(a, path, (k + 1,), "(T, K+1)", f"video {video!r} (K={k} steps + none)")
    a = _probabilities(a, path, ("row", "column"), notes)
    _row_sums(a, path, ("row",), "the K+1 option probabilities")
    return a


def check_progress(a: np.ndarray, path: Path, k: int, video: str, notes: Notes) -> np.ndarray:
    """A (T, K, 10) progress array, checked and clipped."""
    _shape(a, path, (k, 10), "(T, K, 10)", f"video {video!r} (K={k} steps)")
    a = _probabilities(a, path, ("row", "step", "digit"), notes)
    _row_sums(a, path, ("row", "step"), "the 10 digit probabilities")
    return a


def check_prerequisites(a: np.ndarray, path: Path, k: int, group: str, notes: Notes) -> np.ndarray:
    """A (K, K) prerequisite matrix, checked and clipped."""
    if a.shape != (k, k):
        raise Refused(
            f"{path}: shape {a.shape} disagrees with the annotation of group {group!r}: "
            f"expected (K, K) = ({k}, {k})",
            path,
        )
    return _probabilities(a, path, ("row", "column"), notes)


def per_segment(
    a: np.ndarray, path: Path, d: int, expected_rows: int, notes: Notes, *, warn_rows: bool
) -> np.ndarray:
    """Every ``d``-th row of a per-second array (each segment's row repeated ``d`` times).

    A last group of fewer than ``d`` rows (T not a multiple of ``d``) is a segment of its own.
    T differing from ``expected_rows`` is an ``own_rows`` warning when ``warn_rows``. Rows of a
    segment that differ beyond ``np.isclose`` are refused.
    """
    t = a.shape[0]
    if t != expected_rows and warn_rows:
        notes.warn(
            "own_rows",
            f"{path}: T = {t} rows, the video's frames give {expected_rows}; evaluated on its "
            f"own {t} rows as the published code does",
        )
    starts = np.arange(0, t, d)
    first = grid.per_second(a[starts], d)[:t]
    same = np.isclose(a, first).reshape(t, -1).all(axis=1)
    if not same.all():
        bad = int(np.argmin(same))
        raise Refused(
            f"{path}: shape {a.shape}, but row {bad} differs from row {bad - bad % d}, the first "
            f"of its segment {bad // d}; expected each segment row repeated {d} times",
            path,
        )
    if not np.array_equal(a, first):
        gap = float(np.abs(a - first).max())
        notes.warn("near_repeat", f"{path}: rows of a segment differ by up to {gap:.3g}")
    return np.ascontiguousarray(a[starts])
