"""The dependency cache: one (K, K) prerequisite matrix per task group, one Parquet file each.

Layout under a cache ``root``::

    deps/<dataset>/<model>/<prompt_version>/
        config.json                       # the DependencyKey
        groups/<quote(group)>.parquet     # one file per group, one row per ordered step pair

Matrices keep the published orientation (reference-protocol §4.2):
``D[i, j] = P(step j is a prerequisite of step i)``, row = target.

Exports :class:`DependencyCache`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa

from baglm_nb.stores.keys import DependencyKey
from baglm_nb.stores.parquet import ParquetFolder
from baglm_nb.stores.provenance import steps_sha256

__all__ = ["DependencyCache"]

_DEP_COLUMNS = ("group", "target_index", "prereq_index", "target_step", "prereq_step", "p_yes")


def _checked_matrix(
    group: str, steps: Sequence[str], matrix: np.ndarray
) -> tuple[list, np.ndarray]:
    """The arguments of :meth:`DependencyCache.write` as a list and a float64 matrix, validated."""
    if not isinstance(group, str) or not group:
        raise ValueError(f"group must be a non-empty string, got {group!r}")
    if isinstance(steps, str) or not all(isinstance(s, str) for s in steps):
        raise ValueError(f"group {group!r}: steps must be a sequence of str")
    steps = list(steps)
    k = len(steps)
    if k < 1:
        raise ValueError(f"group {group!r}: steps is empty")
    try:
        m = np.asarray(matrix, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"group {group!r}: matrix is not numeric ({exc})") from None
    if m.shape != (k, k):
        raise ValueError(
            f"group {group!r}: matrix has shape {m.shape}, expected {(k, k)} from len(steps)={k}"
        )
    if np.isnan(m).any():
        raise ValueError(f"group {group!r}: matrix contains NaN")
    if (m < 0).any() or (m > 1).any():
        raise ValueError(f"group {group!r}: matrix has values outside [0, 1]")
    return steps, m


class DependencyCache(ParquetFolder):
    """Dependency matrices of one :class:`~baglm_nb.stores.keys.DependencyKey`, one file per group.

    Each file holds one row per ordered step pair (K*K rows, diagonal included) with columns
    ``group, target_index, prereq_index, target_step, prereq_step, p_yes``, where
    ``D[target_index, prereq_index] = p_yes = P(prereq step is a prerequisite of target step)``.
    """

    kind = "dependencies"
    key_type = DependencyKey
    entries = "groups"
    entry_word = "group"
    cache_word = "dependency"

    @property
    def groups_dir(self) -> Path:
        """The folder of the per-group files."""
        return self.entries_dir

    def groups(self) -> list[str]:
        """Sorted keys of the stored groups."""
        return self.names()

    def write(
        self,
        group: str,
        steps: Sequence[str],
        matrix: np.ndarray,
        *,
        annotation_sha256: str | None = None,
    ) -> Path:
        """Store (or atomically replace) the (K, K) matrix of ``group``.

        Parameters
        ----------
        group
            Group key (see :attr:`baglm_nb.inputs.datasets.Video.group`).
        steps
            The K step texts, in the matrix's (and the VSG columns') order.
        matrix
            ``D[i, j] = P(step j is a prerequisite of step i)``, values in [0, 1].
        annotation_sha256
            SHA-256 of the annotation file the steps come from (a record,
            :mod:`baglm_nb.stores.provenance`; default :attr:`annotation_sha256`).

        Raises
        ------
        ValueError
            Shape mismatch, NaN or values outside [0, 1]; the message names the group and the
            argument.
        """
        steps, m = _checked_matrix(group, steps, matrix)
        k = len(steps)
        ti, pi = np.divmod(np.arange(k * k, dtype=np.int32), np.int32(k))
        step_arr = np.array(steps, dtype=object)
        table = pa.table(
            {
                "group": pa.array([group] * (k * k), type=pa.string()),
                "target_index": pa.array(ti, type=pa.int32()),
                "prereq_index": pa.array(pi, type=pa.int32()),
                "target_step": pa.array(step_arr[ti], type=pa.string()),
                "prereq_step": pa.array(step_arr[pi], type=pa.string()),
                "p_yes": pa.array(m.reshape(-1), type=pa.float64()),
            }
        )
        meta = {
            "group": group,
            "num_steps": k,
            "steps": steps,
            "steps_sha256": steps_sha256(steps),
            "annotation_sha256": annotation_sha256 or self.annotation_sha256,
        }
        return self._write_entry(group, table, meta, ["group", "target_step", "prereq_step"])

    def _load(self, group: str) -> tuple[list[str], np.ndarray]:
        table, path = self._read_entry(group)
        meta = self._checked_meta(table, path, ("num_steps", "steps"), _DEP_COLUMNS)
        k = self._num_steps(meta, path)
        ti = table.column("target_index").to_numpy()
        pi = table.column("prereq_index").to_numpy()
        p = table.column("p_yes").to_numpy()
        if (
            table.num_rows != k * k
            or ti.size
            and (ti.min() < 0 or pi.min() < 0 or ti.max() >= k or pi.max() >= k)
        ):
            raise ValueError(f"{path}: expected {k * k} rows with indices in [0, {k})")
        m = np.full((k, k), np.nan)
        m[ti, pi] = p
        if np.isnan(m).any():
            raise ValueError(f"{path}: pairs are missing or p_yes has NaN")
        steps = meta.get("steps")
        if steps is None or len(steps) != k:
            names = [""] * k
            for i, s in zip(ti.tolist(), table.column("target_step").to_pylist(), strict=True):
                names[i] = s
            steps = names
        return list(steps), m

    def load(self, group: str) -> tuple[list[str], np.ndarray]:
        """``(steps, matrix)`` of ``group``: the step texts in matrix order and D (K, K)."""
        return self._load(group)

    def read(self, group: str) -> np.ndarray:
        """The (K, K) float64 matrix of ``group``; ``KeyError`` if missing."""
        return self._load(group)[1]

    def steps(self, group: str) -> list[str]:
        """The step texts of ``group``, in matrix order."""
        return self._load(group)[0]

    def read_all(self) -> dict[str, np.ndarray]:
        """All stored matrices, as group -> (K, K) float64."""
        return {g: self.read(g) for g in self.groups()}
