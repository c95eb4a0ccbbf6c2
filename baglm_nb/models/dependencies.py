"""Step dependency (prerequisite) matrices from an LLM back-end, one per task group (§4).

Orientation (§4.2), for every source of D::

    D[i, j] = P("Yes" | target = step i, prerequisite candidate = step j)

read as "step j is a prerequisite of step i" (row = target, column = prerequisite). The K*K ordered
pairs come from ``itertools.product(range(K), repeat=2)`` (outer loop = target, inner loop =
prerequisite candidate), diagonal included, exactly as the published batch is built; the step
order is the group's step list (the VSG column order).

A :class:`Backend` scores pairs: :class:`~baglm_nb.models.llm_local.TransformersBackend` (a local
transformers LM) or :class:`~baglm_nb.models.llm_openai.OpenAIBackend` (an OpenAI-compatible
server); both send the §4.1 prompts of :func:`pair_messages`. The other sources of D are
:mod:`baglm_nb.core.sources`' (``"oracle"``, ``"imported"``, ``"none"``).

Matrices are built once per group (:attr:`baglm_nb.inputs.datasets.Video.group`, §4.2) by
:func:`build_dependencies` and stored in a :class:`~baglm_nb.stores.dependencies.DependencyCache`;
every video of the group reuses its group's matrix. The groups run on an engine
(:mod:`baglm_nb.models.dispatch`, the same as the scoring driver's: in this process or on Ray
actors), one whole group per item; the driver alone writes the matrices. A run that stops (error,
kill) resumes: finished groups are in the cache, and, on the local engine, the finished pairs of
an unfinished group are kept in a per-group partial file (``partial/<group>.parquet`` beside the
cache's ``groups/``, written atomically after every chunk of pairs), so they are not asked again.
Failed pairs are appended to ``errors.jsonl`` in the cache folder. The violation analysis of the
matrices is :mod:`baglm_nb.analyses.violations`.

Exports the :class:`Backend` protocol, :class:`PairFailure`, :class:`DependencyError`,
:func:`pair_messages`, :func:`pair_prompt_version`, :func:`dependency_matrix`,
:func:`group_steps` and :func:`build_dependencies` (with :class:`GroupTask` and
:func:`group_task`, what an engine runs per group).
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pyarrow as pa

from baglm_nb.inputs.datasets import Video, annotation_path, load_dataset
from baglm_nb.inputs.progress import bar_options
from baglm_nb.models.dispatch import Engine, EngineSetting, make_engine
from baglm_nb.models.prompts import get_prompt
from baglm_nb.stores.caches import create_cache
from baglm_nb.stores.dependencies import DependencyCache
from baglm_nb.stores.keys import DependencyKey
from baglm_nb.stores.parquet import MissingEntryError, entry_file, read_parquet, write_parquet
from baglm_nb.stores.provenance import file_sha256

__all__ = [
    "Backend",
    "DependencyError",
    "PairFailure",
    "build_dependencies",
    "dependency_matrix",
    "group_steps",
    "pair_messages",
    "pair_prompt_version",
]


# --------------------------------------------------------------------------------------------
# errors


class PairFailure(Exception):
    """Raised by a back-end when one pair of a batch cannot be scored.

    Parameters
    ----------
    index
        Position of the failed pair in the batch given to :meth:`Backend.score`.
    reason
        What went wrong (must never contain a secret).
    completed
        Batch position -> P("Yes") of the pairs that were scored before the failure; the
        caller keeps them.
    """

    def __init__(self, index: int, reason: str, completed: Mapping[int, float] | None = None):
        super().__init__(reason)
        self.index = index
        self.reason = reason
        self.completed = dict(completed or {})


class DependencyError(RuntimeError):
    """A dependency pair could not be scored; the message names the group (task) and the pair.

    Attributes ``group``, ``target_index``, ``prereq_index``, ``target`` and ``prereq`` hold the
    same facts for programs. ``target_index`` is ``None`` when the whole group failed (its Ray
    worker died ``max_attempts`` times).
    """

    def __init__(
        self,
        group: str,
        target_index: int | None,
        prereq_index: int | None,
        target: str,
        prereq: str,
        reason: str,
    ) -> None:
        self.group = group
        self.target_index = target_index
        self.prereq_index = prereq_index
        self.target = target
        self.prereq = prereq
        self.reason = reason
        if target_index is None:
            super().__init__(f"task group {group!r} failed: {reason}")
            return
        super().__init__(
            f"task group {group!r}: pair D[{target_index}, {prereq_index}] (target step "
            f"{target_index} {_short(target)!r}, prerequisite candidate {prereq_index} "
            f"{_short(prereq)!r}) failed: {reason}"
        )


def _short(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


# --------------------------------------------------------------------------------------------
# prompts and pair order


def _pair_order(k: int) -> list[tuple[int, int]]:
    """The K*K (target i, prerequisite candidate j) pairs in the published order (§4.2)."""
    return list(itertools.product(range(k), repeat=2))


def _prereq_prompts() -> tuple[Any, Any]:
    return get_prompt("prereq_sys"), get_prompt("prereq")


def pair_prompt_version(system_prompt: bool) -> str:
    """The prompt part of a back-end's cache key, with or without the §4.1 system message."""
    sys_p, q = _prereq_prompts()
    return f"{q.version}+{sys_p.version}" if system_prompt else f"{q.version}+nosys"


def pair_messages(goal: str, target: str, prereq: str, system_prompt: bool) -> list[dict[str, str]]:
    """The chat messages of one (target step, prerequisite candidate) question (§4.1)."""
    sys_p, q = _prereq_prompts()
    user = {"role": "user", "content": q.format(goal=goal, step_a=target, step_b=prereq)}
    if not system_prompt:
        return [user]
    return [{"role": "system", "content": sys_p.text}, user]


# --------------------------------------------------------------------------------------------
# back-ends


@runtime_checkable
class Backend(Protocol):
    """What :func:`dependency_matrix` needs from a scorer of prerequisite pairs."""

    #: Model part of the cache key (scoring variants included).
    name: str
    #: Prompt part of the cache key.
    prompt_version: str
    #: Pairs per call of :meth:`score` (and per checkpoint of a partial group).
    chunk_size: int

    def score(self, goal: str, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """P("Yes") for each (target step, prerequisite candidate) pair, shape (len(pairs),).

        Raises :class:`PairFailure` for a pair that cannot be scored.
        """
        ...


# --------------------------------------------------------------------------------------------
# one matrix, resumable


@dataclass
class _Partial:
    """Finished pairs of one group, kept in an atomically rewritten Parquet file."""

    path: Path | None
    meta: dict[str, Any]
    values: dict[int, float]

    @classmethod
    def open(cls, path: Path | None, meta: dict[str, Any]) -> _Partial:
        values: dict[int, float] = {}
        if path is not None and path.is_file():
            try:
                table = read_parquet(path)
                stored = json.loads(table.schema.metadata[b"baglm.partial"].decode())
            except (ValueError, KeyError, TypeError, json.JSONDecodeError):
                stored = None  # unreadable: start the group again
            if stored == meta:
                k = len(meta["steps"])
                for i, j, p in zip(
                    table.column("target_index").to_pylist(),
                    table.column("prereq_index").to_pylist(),
                    table.column("p_yes").to_pylist(),
                    strict=True,
                ):
                    values[i * k + j] = float(p)
        return cls(path, meta, values)

    def save(self) -> None:
        if self.path is None or not self.values:
            return
        k = len(self.meta["steps"])
        flat = sorted(self.values)
        table = pa.table(
            {
                "target_index": pa.array([f // k for f in flat], type=pa.int32()),
                "prereq_index": pa.array([f % k for f in flat], type=pa.int32()),
                "p_yes": pa.array([self.values[f] for f in flat], type=pa.float64()),
            }
        )
        meta = {b"baglm.partial": json.dumps(self.meta).encode()}
        table = table.replace_schema_metadata(meta)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_parquet(self.path, table, [])


def dependency_matrix(
    goal: str,
    steps: Sequence[str],
    backend: Backend,
    *,
    group: str | None = None,
    partial: str | os.PathLike | None = None,
    show_progress: bool = False,
) -> np.ndarray:
    """D (K, K) with ``D[i, j] = P("Yes" | target = steps[i], prerequisite = steps[j])``.

    All K*K ordered pairs (diagonal included) are asked in the published order (§4.2), in
    chunks of ``backend.chunk_size`` (one :meth:`Backend.score` call and one checkpoint each).

    Parameters
    ----------
    goal
        The goal text given to the LLM (:attr:`~baglm_nb.inputs.datasets.Video.llm_goal`: for
        CrossTask the published quirk, the numeric task id).
    steps
        The K step texts in VSG column order.
    backend
        A :class:`Backend` (:class:`~baglm_nb.models.llm_local.TransformersBackend`,
        :class:`~baglm_nb.models.llm_openai.OpenAIBackend`, ...).
    group
        Group key, for error messages.
    partial
        Optional Parquet file that keeps the finished pairs (rewritten atomically after every
        batch): a run that stops resumes from it without asking those pairs again. It is
        ignored (and overwritten) when it was made for another goal, step list or back-end.
    show_progress
        A tqdm bar over the pairs.

    Returns
    -------
    numpy.ndarray
        float64 (K, K), values in [0, 1].

    Raises
    ------
    DependencyError
        When a pair fails; the message names the group and the pair. Pairs finished before it
        stay in ``partial``.
    """
    from tqdm.auto import tqdm

    steps = list(steps)
    k = len(steps)
    if k == 0:
        raise ValueError(f"group {group!r}: the step list is empty")
    meta = {
        "group": group,
        "goal": goal,
        "steps": steps,
        "backend": backend.name,
        "prompt_version": backend.prompt_version,
    }
    state = _Partial.open(None if partial is None else Path(partial), meta)
    todo = [i * k + j for i, j in _pair_order(k) if i * k + j not in state.values]
    bar = tqdm(
        total=k * k,
        initial=k * k - len(todo),
        desc=f"{group or 'pairs'}",
        unit="pair",
        leave=False,
        disable=not show_progress,
        **bar_options(),
    )
    try:
        for start in range(0, len(todo), backend.chunk_size):
            chunk = todo[start : start + backend.chunk_size]
            _ask(goal, steps, backend, chunk, state, group)
            bar.update(len(chunk))
    finally:
        bar.close()
    d = np.empty(k * k)
    for f, p in state.values.items():
        d[f] = p
    return d.reshape(k, k)


def _ask(
    goal: str,
    steps: list[str],
    backend: Backend,
    chunk: list[int],
    state: _Partial,
    group: str | None,
) -> None:
    """Score the flat pairs ``chunk`` (``f = i * K + j``) into ``state`` and save it.

    On a :class:`PairFailure` the pairs finished before it are kept and saved, then a
    :class:`DependencyError` names the failed pair.
    """
    k = len(steps)
    texts = [(steps[f // k], steps[f % k]) for f in chunk]
    try:
        probs = backend.score(goal, texts)
    except PairFailure as fail:
        for n, p in fail.completed.items():
            state.values[chunk[n]] = _check_p(p, group, chunk[n], k, steps)
        state.save()
        f = chunk[fail.index]
        raise DependencyError(
            str(group), f // k, f % k, steps[f // k], steps[f % k], fail.reason
        ) from None
    for f, p in zip(chunk, probs, strict=True):
        state.values[f] = _check_p(p, group, f, k, steps)
    state.save()


def _check_p(p: float, group: str | None, f: int, k: int, steps: list[str]) -> float:
    p = float(p)
    if not (0.0 <= p <= 1.0):  # NaN fails too
        i, j = divmod(f, k)
        raise DependencyError(
            str(group), i, j, steps[i], steps[j], f"back-end returned {p!r}, not a probability"
        )
    return p


# --------------------------------------------------------------------------------------------
# a whole dataset, one matrix per group, resumable


def group_steps(videos: Sequence[Video], goal: str = "llm") -> dict[str, tuple[str, list[str]]]:
    """Group key -> (goal text, step list), in order of first appearance.

    Parameters
    ----------
    videos
        Annotation records.
    goal
        ``"llm"`` (default): :attr:`Video.llm_goal`, the goal the published prerequisite
        scripts gave the LLM (CrossTask: the numeric task id). ``"name"``: :attr:`Video.goal`.

    Raises
    ------
    ValueError
        When two videos of one group disagree on the steps or the goal.
    """
    if goal not in ("llm", "name"):
        raise ValueError(f"goal must be 'llm' or 'name', got {goal!r}")
    out: dict[str, tuple[str, list[str]]] = {}
    for v in videos:
        g = v.llm_goal if goal == "llm" else v.goal
        entry = (g, list(v.steps))
        if out.setdefault(v.group, entry) != entry:
            raise ValueError(
                f"group {v.group!r}: video {v.uid!r} has a different goal or step list than "
                "the group's first video; one dependency matrix cannot serve both"
            )
    return out


def _record_error(cache: DependencyCache, err: DependencyError) -> None:
    rec = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "group": err.group,
        "target_index": err.target_index,
        "prereq_index": err.prereq_index,
        "target_step": err.target,
        "prereq_step": err.prereq,
        "reason": err.reason,
    }
    with open(cache.path / "errors.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(rec) + "\n")


def build_dependencies(
    dataset: str,
    backend: Backend | Callable[[], Backend],
    root: str | os.PathLike,
    *,
    videos: Sequence[Video] | None = None,
    groups: Sequence[str] | None = None,
    group_limit: int | None = None,
    goal: str = "llm",
    on_error: str = "raise",
    show_progress: bool = True,
    engine: EngineSetting = "local",
) -> dict[str, Any]:
    """Build (or reuse) one matrix per group of ``dataset`` into a :class:`DependencyCache`.

    The cache key is ``DependencyKey(dataset, backend.name, backend.prompt_version)``. Groups
    already stored are reused, never asked again; a group interrupted earlier resumes from its
    partial file (local engine).

    Parameters
    ----------
    dataset
        Dataset name (cache key; also loads ``videos`` when not given).
    backend
        The pair scorer, or a picklable zero-argument factory that builds one (what the
        ``"ray"`` engine needs: each worker loads the model itself).
    root
        Cache root.
    videos
        Annotation records (default ``load_dataset(dataset)``).
    groups
        Only these group keys (default: every group of ``videos``).
    group_limit
        Only the first ``group_limit`` task groups (after ``groups``).
    goal
        See :func:`group_steps`.
    on_error
        ``"raise"``: stop at the first failed pair with its :class:`DependencyError`.
        ``"continue"``: go on with the next group and report the failures in the summary.
        Either way the failure is appended to ``errors.jsonl`` in the cache folder.
    show_progress
        tqdm bars over groups and pairs.
    engine
        ``"local"`` (default), ``"ray"`` or a :class:`~baglm_nb.models.ray_pool.RayOptions`
        (:func:`~baglm_nb.models.dispatch.make_engine`): on Ray the groups fan out over actors,
        one whole group per call; the driver alone writes the matrices (a group is then the
        unit of resume), and a group whose worker died ``max_attempts`` times is reported as
        failed.

    Returns
    -------
    dict
        ``path`` (the cache folder), ``computed``, ``reused`` (group lists), ``failed``
        (group -> message), ``groups`` (the number of groups asked for) and
        ``rescored_stale`` (groups stored for other steps than the annotation's: computed
        again, :mod:`baglm_nb.stores.provenance`).
    """
    if on_error not in ("raise", "continue"):
        raise ValueError(f"on_error must be 'raise' or 'continue', got {on_error!r}")
    annotation = file_sha256(annotation_path(dataset)) if videos is None else None
    videos = load_dataset(dataset) if videos is None else videos
    table = group_steps(videos, goal)
    keys = _group_keys(table, groups, group_limit, dataset)
    if isinstance(backend, Backend):
        eng = make_engine(
            engine, _backend_identity, loaded=backend, what="a factory, not a loaded back-end"
        )
    else:
        eng = make_engine(engine, _backend_identity, build=backend)
    with eng:
        return _build_on(eng, dataset, root, table, keys, on_error, show_progress, annotation)


def _summary(
    cache: DependencyCache, keys: list[str], table: Mapping[str, Any], annotation: str | None
) -> dict[str, Any]:
    """The summary to fill, with ``rescored_stale``: the groups stored for other steps than
    the annotation's (computed again); the cache records ``annotation`` (a SHA-256)."""
    cache.annotation_sha256 = annotation
    stale = [g for g in keys if cache.has(g) and cache.steps(g) != table[g][1]]
    return {
        "path": str(cache.path),
        "groups": len(keys),
        "computed": [],
        "reused": [],
        "failed": {},
        "rescored_stale": stale,
    }


def _backend_identity(backend: Backend) -> tuple[str, str]:
    """The cache-key parts of a back-end: ``(name, prompt_version)``."""
    return backend.name, backend.prompt_version


@dataclass(frozen=True)
class GroupTask:
    """One group to build: what a worker needs, and nothing it would have to look up."""

    group: str
    goal: str
    steps: tuple[str, ...]
    partial: str | None = None  # the partial file (engines in the driver's process only)
    show_progress: bool = False  # a bar over the pairs


def group_task(backend: Backend, task: GroupTask) -> dict[str, Any]:
    """One group's matrix on an engine: ``{"matrix": D}``, or the failed pair's facts."""
    try:
        d = dependency_matrix(
            task.goal,
            task.steps,
            backend,
            group=task.group,
            partial=task.partial,
            show_progress=task.show_progress,
        )
        return {"matrix": d}
    except DependencyError as err:
        return {
            "error": [
                err.group,
                err.target_index,
                err.prereq_index,
                err.target,
                err.prereq,
                err.reason,
            ]
        }


def _build_on(
    eng: Engine,
    dataset: str,
    root: Any,
    table: Mapping[str, tuple[str, list[str]]],
    keys: list[str],
    on_error: str,
    show_progress: bool,
    annotation: str | None = None,
) -> dict[str, Any]:
    """:func:`build_dependencies` on an engine: the groups not in the cache go to it, and each
    matrix is stored as it comes back (its partial file, if any, removed)."""
    from tqdm.auto import tqdm

    cache = create_cache(root, DependencyKey(dataset, *eng.identity()))
    summary = _summary(cache, keys, table, annotation)
    todo = []
    for g in keys:
        if cache.has(g) and cache.steps(g) == table[g][1]:
            summary["reused"].append(g)
            continue
        part = str(entry_file(cache.path / "partial", g)) if eng.in_process else None
        goal, steps = table[g]
        todo.append((g, GroupTask(g, goal, tuple(steps), part, show_progress and eng.in_process)))
    with tqdm(
        total=len(keys),
        initial=len(keys) - len(todo),
        desc=f"deps {dataset}",
        unit="group",
        disable=not show_progress,
        **bar_options(),
    ) as bar:
        for out in eng.imap(group_task, todo):
            if out is None:
                continue
            bar.update(1)
            if out.error is None and "matrix" in out.result:
                cache.write(out.key, table[out.key][1], out.result["matrix"])
                entry_file(cache.path / "partial", out.key).unlink(missing_ok=True)
                summary["computed"].append(out.key)
                continue
            fields = (
                out.result["error"]
                if out.error is None
                else [out.key, None, None, "", "", out.error]
            )
            err = DependencyError(*fields)
            _record_error(cache, err)
            if on_error == "raise":
                raise err
            summary["failed"][out.key] = str(err)
    return summary


def _group_keys(
    table: Mapping[str, Any], groups: Sequence[str] | None, group_limit: int | None, dataset: str
) -> list[str]:
    """The group keys asked for: ``groups`` (all of ``table`` by default), then the first
    ``group_limit``."""
    keys = list(table)
    if groups is not None:
        missing = [g for g in groups if g not in table]
        if missing:
            raise MissingEntryError(
                f"group(s) {missing} not in the {dataset} annotation ({annotation_path(dataset)})"
            )
        keys = list(groups)
    return keys if group_limit is None else keys[:group_limit]
