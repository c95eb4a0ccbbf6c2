"""Settings -> observations and dependency sources: the one place that resolves them.

The CLI (``--scores`` / ``--deps``), the notebooks' ``scores`` / ``deps`` parameters, the
widgets and the result tables all hand their settings to this module.

A **scores setting** is ``"simulated"`` (the labelled CPU default: the default twin,
:data:`~baglm_nb.core.simulate.DEFAULT_TWIN`), ``"simulated:iid"`` or ``"simulated:pinned"``
(either twin by name, :mod:`baglm_nb.core.simulate`), a score-cache folder, an already built
:class:`~baglm_nb.core.observations.Observations`, or a mapping ``{dataset: one of those}`` (a
dataset missing from it is simulated).

A **deps setting** is ``"oracle"`` (each video's ground-truth chain), ``"none"`` (D = 0: BaGLM
reduces to the normalised scores), ``"simulated-llm"`` or ``"simulated-llm:<preset>"`` (the
labelled CPU default: a simulated LLM's matrices, presets ``llama`` (the default) and ``gpt``,
:mod:`baglm_nb.core.simulate_deps`; ``"simulated-llm:<preset>:held-out"``: the diagnostic
variant whose evidence leaves out the evaluated video), ``"noisy-oracle:<level>"`` (each
video's oracle chain with a fraction ``level`` of its entries replaced by noise: the
dependency-quality sweep),
``"imported"`` (the authors' matrices, imported earlier with ``python -m baglm_nb import``), a
dependency-cache folder (e.g. an LLM's, built with ``python -m baglm_nb deps``), an opened
:class:`~baglm_nb.stores.dependencies.DependencyCache`, a mapping ``{uid or group: (K, K)}``,
or a mapping ``{dataset: one of those}`` (a dataset missing from it has no source: ``None``).
Each resolved source has a ``label`` (what tables print in their ``D`` column) and a ``kind``:
``oracle``, ``none``, ``llm`` (an LLM's matrices, real or simulated), ``noisy-oracle`` or
``matrices`` (a mapping the caller built).

``limit`` always means the first ``limit`` videos in annotation-file order (of those a cache
holds). ``precision`` picks the filter's arithmetic (``None``: ``float32-published`` on the
authors' imported files, ``float64`` otherwise; see :mod:`baglm_nb.core.observations`).

A score-cache folder may also be given by a folder above it that holds exactly one score cache
(e.g. ``data/cache/scores/htstep/simulated``): :func:`score_cache_folder`.

**The registry.** A named setting is ``<prefix>`` or ``<prefix>:<argument>``; its prefix picks
its resolver in :data:`OBSERVATION_RESOLVERS` (``simulated[:<twin>]``) or
:data:`DEPENDENCY_RESOLVERS` (``oracle``, ``none``, ``simulated-llm``, ``noisy-oracle``,
``imported``); a new named setting is one resolver function and one row there. Every other
setting (a folder, an opened cache, built observations or matrices) is resolved by its type.
Both public resolvers take ``(dataset, setting, ...)``; the types of what a setting can be are
:data:`ObservationSource` and :data:`DependencySource`. Resolving never runs a model nor writes
a cache: an LLM's matrices are built by ``python -m baglm_nb deps`` (or notebook
``02_dependencies``) and then named by their cache folder. Existing score and dependency
caches are opened for reading here (and in :mod:`baglm_nb.core.observations`) only; writers
create theirs through :func:`baglm_nb.stores.caches.create_cache`. :func:`open_score_cache`,
:func:`score_cache_contents` and :func:`vsg_rows` serve the callers that need a cache's key, its
videos or its VSG rows alone.

Exports :data:`SIMULATED`, :data:`SIMULATED_LLM`, :data:`ObservationSource`,
:data:`DependencySource`, :data:`OBSERVATION_RESOLVERS`, :data:`DEPENDENCY_RESOLVERS`,
:class:`Dependencies`, :func:`select_videos`, :func:`observations`, :func:`observations_for`,
:func:`score_cache_folder`, :func:`open_score_cache`, :func:`score_cache_contents`,
:func:`vsg_rows`, :func:`simulated_twin`, :func:`dependencies` and :func:`label_of`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeAlias

import numpy as np

from baglm_nb.core import simulate_deps
from baglm_nb.core.observations import Observations, from_cache, from_simulation, vsg_from_cache
from baglm_nb.core.oracles import oracle_dependency
from baglm_nb.inputs.datasets import DATASETS, Video, annotation_path, data_dir, load_dataset
from baglm_nb.stores.dependencies import DependencyCache
from baglm_nb.stores.keys import PUBLISHED_LLM, DependencyKey
from baglm_nb.stores.parquet import MissingEntryError
from baglm_nb.stores.scores import ScoreCache

if TYPE_CHECKING:
    from baglm_nb.core.simulate import SimulationParams

__all__ = [
    "DEPENDENCY_RESOLVERS",
    "OBSERVATION_RESOLVERS",
    "SIMULATED",
    "SIMULATED_LLM",
    "Dependencies",
    "DependencySource",
    "ObservationSource",
    "dependencies",
    "label_of",
    "observations",
    "observations_for",
    "open_score_cache",
    "score_cache_contents",
    "score_cache_folder",
    "select_videos",
    "simulated_twin",
    "vsg_rows",
]

SIMULATED = "simulated"

#: The default deps setting on the CPU: the simulated LLaMA-3.3-70B preset (the paper's LLM).
SIMULATED_LLM = simulate_deps.SIMULATED_LLM

PREFIX, NOISY = simulate_deps.PREFIX, simulate_deps.NOISY_ORACLE

#: One dataset's scores setting: ``"simulated"``, a score-cache folder or built observations.
ScoreSetting: TypeAlias = str | os.PathLike | Observations

#: A scores setting: one dataset's, or ``{dataset: one dataset's}`` (missing: simulated).
ObservationSource: TypeAlias = ScoreSetting | Mapping[str, ScoreSetting]

#: Dependency matrices a caller built: ``{uid or group: D (K, K)}``.
Matrices: TypeAlias = Mapping[str, np.ndarray]

#: Binary-prompt VSG rows: a score-cache folder or ``{uid: per-second (T, K+1) rows}``.
VsgSetting: TypeAlias = str | os.PathLike | Mapping[str, np.ndarray]


def select_videos(
    dataset: str,
    limit: int | None = None,
    *,
    among: Iterable[str] | None = None,
    videos: Sequence[Video] | None = None,
) -> list[Video]:
    """The first ``limit`` videos of ``dataset`` in annotation order (of ``among`` when given).

    ``videos`` is the dataset's annotation list when the caller already has it.
    """
    _check_limit(limit)
    chosen = list(load_dataset(dataset) if videos is None else videos)
    if among is not None:
        keep = set(among)
        chosen = [v for v in chosen if v.uid in keep]
    return chosen[:limit] if limit else chosen


def _check_limit(limit: int | None) -> None:
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be a positive number of videos, got {limit}")


def _is_score_cache(config: Path) -> bool:
    try:
        return json.loads(config.read_text(encoding="utf-8")).get("kind") == "scores"
    except (OSError, ValueError):
        return False


def score_cache_folder(path: str | os.PathLike, depth: int = 6) -> Path:
    """The score-cache folder ``path`` names: itself, or the one score cache below it.

    Looks ``depth`` folder levels down for ``config.json`` files of score caches. Raises
    FileNotFoundError (no such folder) or ValueError (no score cache there, or several: the
    message lists them) with a hint on how to make one.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(
            f"{folder}: no such folder (a score cache; 'make data' or "
            "'python -m baglm_nb simulate --dataset NAME' writes simulated ones)"
        )
    if (folder / "config.json").is_file():
        return folder
    found = [
        config.parent
        for level in range(1, depth + 1)
        for config in sorted(folder.glob("/".join(["*"] * level) + "/config.json"))
        if _is_score_cache(config)
    ]
    if len(found) == 1:
        return found[0]
    if not found:
        raise ValueError(
            f"{folder}: no score cache in it or below it (no config.json); write simulated "
            "scores with 'make data' or 'python -m baglm_nb simulate --dataset NAME', or use "
            "the setting 'simulated' (simulated on demand)"
        )
    names = ", ".join(str(f) for f in found[:5]) + (", ..." if len(found) > 5 else "")
    raise ValueError(f"{folder} holds {len(found)} score caches; name one of them: {names}")


def open_score_cache(setting: str | os.PathLike) -> ScoreCache:
    """The score cache a folder setting names (:func:`score_cache_folder`), opened."""
    return ScoreCache.open(score_cache_folder(setting))


def score_cache_contents(setting: str | os.PathLike) -> tuple[str, list[str]]:
    """``(dataset, uids)`` of the score cache a folder setting names (:func:`open_score_cache`)."""
    cache = open_score_cache(setting)
    return cache.key.dataset, cache.uids()


def vsg_rows(dataset: str, setting: VsgSetting) -> tuple[str | None, dict[str, np.ndarray]]:
    """``(label, {uid: per-second VSG rows})`` of a VSG-only setting (the binary prompt's).

    A score-cache folder gives its source label and its rows (its progress is not needed:
    :func:`~baglm_nb.core.observations.vsg_from_cache`); it must hold ``dataset``'s videos. A
    mapping ``{uid: rows}`` is taken as it is, with no label (``None``).
    """
    if isinstance(setting, Mapping):
        return None, dict(setting)
    holds, label, rows = vsg_from_cache(score_cache_folder(setting))
    if holds != dataset:
        raise ValueError(f"{setting}: the score cache holds {holds!r}, not {dataset!r}")
    return label, rows


def _per_dataset(setting: Any) -> bool:
    return isinstance(setting, Mapping) and set(setting) <= set(DATASETS)


class _ObservationOptions(NamedTuple):
    """What :func:`observations` passes on to a resolver besides the dataset and setting."""

    limit: int | None
    params: SimulationParams | None
    videos: Sequence[Video] | None


class ObservationResolver(Protocol):
    """Resolves a named scores setting (``<prefix>[:<argument>]``) for one dataset."""

    def __call__(self, dataset: str, setting: str, options: _ObservationOptions) -> Observations:
        """The observations of ``dataset`` that ``setting`` names."""


def simulated_twin(setting: str) -> str:
    """The twin a ``simulated[:<twin>]`` setting names (``simulated``: the default twin)."""
    from baglm_nb.core.simulate import DEFAULT_TWIN, TWINS

    prefix, _, twin = setting.partition(":")
    if prefix != SIMULATED or (twin and twin not in TWINS) or setting.endswith(":"):
        forms = ", ".join(repr(f"{SIMULATED}:{t}") for t in TWINS)
        raise ValueError(f"scores {setting!r}: expected '{SIMULATED}' or one of {forms}")
    return twin or DEFAULT_TWIN


def _simulated_observations(
    dataset: str, setting: str, options: _ObservationOptions
) -> Observations:
    """``simulated[:<twin>]``: a twin's simulated scores (the labelled CPU default)."""
    from baglm_nb.core.simulate import twin_params

    twin = simulated_twin(setting)
    videos = select_videos(dataset, options.limit, videos=options.videos)
    params = twin_params(dataset, twin) if options.params is None else options.params
    return from_simulation(dataset, params, videos=videos)


#: The named scores settings: prefix -> (how it is written, its resolver).
OBSERVATION_RESOLVERS: dict[str, tuple[str, ObservationResolver]] = {
    SIMULATED: (f"{SIMULATED}[:iid|:pinned]", _simulated_observations),
}


def _named(setting: Any, table: Mapping[str, tuple[str, Any]]) -> Any:
    """The resolver of a named ``setting`` (its prefix is in ``table``), else ``None``."""
    if not isinstance(setting, str):
        return None
    row = table.get(setting.split(":", 1)[0])
    return row[1] if row else None


def _forms(table: Mapping[str, tuple[str, Any]]) -> str:
    """How the named settings of ``table`` are written, for messages."""
    return ", ".join(repr(form) for form, _ in table.values())


def observations(
    dataset: str,
    scores: ObservationSource = SIMULATED,
    *,
    limit: int | None = None,
    params: SimulationParams | None = None,
    videos: Sequence[Video] | None = None,
    length_mismatch: str = "error",
    precision: str | None = None,
) -> Observations:
    """The observations of ``dataset`` from a scores setting (module docstring).

    Parameters
    ----------
    dataset : str
        Dataset name.
    scores : str, path, Observations or mapping
        A named setting (:data:`OBSERVATION_RESOLVERS`: ``"simulated"``), a score-cache
        folder, observations, or ``{dataset: ...}``.
    limit : int, optional
        Keep the first ``limit`` videos in annotation order.
    params : SimulationParams, optional
        Parameters of the simulated source (default: the calibrated CPU default).
    videos : list of Video, optional
        The dataset's annotations, when the caller already loaded them.
    length_mismatch : {"error", "warn"}
        What a cached video whose length disagrees with its annotation gives
        (:func:`~baglm_nb.core.observations.from_cache`).
    precision : {"float64", "float32-published"}, optional
        The filter's arithmetic; ``None`` keeps the source's default (``float32-published`` on
        imported files, else ``float64``; already built observations keep theirs).
    """
    obs = _observations(dataset, scores, limit, params, videos, length_mismatch)
    return obs if precision is None else obs.with_precision(precision)


def _observations(
    dataset: str,
    scores: ObservationSource,
    limit: int | None,
    params: SimulationParams | None,
    videos: Sequence[Video] | None,
    length_mismatch: str,
) -> Observations:
    _check_limit(limit)
    if _per_dataset(scores):
        scores = scores.get(dataset, SIMULATED)
    resolver = _named(scores, OBSERVATION_RESOLVERS)
    if resolver is not None:
        return resolver(dataset, scores, _ObservationOptions(limit, params, videos))
    if isinstance(scores, Observations):
        obs = scores
    elif isinstance(scores, (str, os.PathLike)):
        if not Path(scores).exists():
            raise FileNotFoundError(
                f"scores {str(scores)!r}: no such folder; a scores setting is "
                f"{_forms(OBSERVATION_RESOLVERS)} or a score-cache folder ('make data' or "
                "'python -m baglm_nb simulate --dataset NAME' writes simulated ones)"
            )
        folder = score_cache_folder(scores)
        obs = from_cache(folder, videos=videos, length_mismatch=length_mismatch)
    else:
        raise TypeError(
            f"scores for {dataset}: expected {_forms(OBSERVATION_RESOLVERS)}, a "
            f"cache folder or Observations, got {type(scores).__name__}"
        )
    if obs.dataset != dataset:
        raise ValueError(f"{scores}: the score cache holds {obs.dataset!r}, not {dataset!r}")
    if limit:
        obs = obs.subset([v.uid for v in obs.videos[:limit]])
    return obs


def observations_for(
    datasets: Iterable[str],
    scores: ObservationSource | None = None,
    *,
    limit: int | None = None,
    params: SimulationParams | None = None,
    precision: str | None = None,
) -> list[Observations]:
    """:func:`observations` of each dataset, in the order of ``datasets``."""
    scores = {} if scores is None else scores
    return [
        observations(name, scores, limit=limit, params=params, precision=precision)
        for name in datasets
    ]


@dataclass(frozen=True)
class Dependencies:
    """A resolved dependency source: where each video's D (K, K) comes from, and its label.

    ``source`` is ``"oracle"``, ``"none"``, a :class:`~baglm_nb.stores.dependencies.DependencyCache`
    (looked up by uid, then group) or a mapping ``{uid or group: (K, K)}``. ``kind`` is
    ``oracle``, ``none``, ``llm`` (an LLM's matrices, real or simulated), ``noisy-oracle`` or
    ``matrices`` (module docstring).
    """

    label: str
    source: str | DependencyCache | Matrices
    kind: str = "llm"
    _read: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def simulated(self) -> bool:
        """Whether the matrices come from a simulation (their label says ``simulated``)."""
        return self.kind == "noisy-oracle" or self.label.startswith(simulate_deps.PREFIX)

    def matrix(self, video: Video) -> np.ndarray:
        """D (K, K) of ``video``; a missing or mis-shaped matrix raises naming the video.

        A cache's matrix is read once per uid or group (a copy is returned each time).
        """
        src = self.source
        if isinstance(src, str):
            if src == "oracle":
                return oracle_dependency(video)
            return np.zeros((video.num_steps, video.num_steps))
        has = (lambda k: k in src) if isinstance(src, Mapping) else src.has
        key = video.uid if has(video.uid) else video.group
        if not has(key):
            where = f" in {src.path}" if hasattr(src, "path") else ""
            raise MissingEntryError(
                f"no dependency matrix for video {video.uid!r} (group {video.group!r}){where}"
            )
        if isinstance(src, Mapping):
            d = np.asarray(src[key], dtype=np.float64)
        else:
            d = self._cached_matrix(key, video)
        if d.shape != (video.num_steps, video.num_steps):
            raise ValueError(
                f"dependency matrix for group {key!r} is {d.shape}, video {video.uid!r} has "
                f"K={video.num_steps} steps"
            )
        return d

    def _cached_matrix(self, key: str, video: Video) -> np.ndarray:
        """D of ``key`` from the dependency cache (read once), its stored steps checked against
        ``video``'s: a stale group is refused, naming the file and the first differing step."""
        from baglm_nb.stores.provenance import check_steps, first_difference

        if key not in self._read:
            self._read[key] = self.source.load(key)
        steps, matrix = self._read[key]
        if first_difference(steps, video.steps) is None:
            return np.asarray(matrix, dtype=np.float64).copy()
        try:
            annotation = str(annotation_path(video.dataset))
        except ValueError:  # videos of no known dataset (a caller's own records)
            annotation = f"the annotation of video {video.uid!r}"
        check_steps(
            steps,
            video.steps,
            file=self.source.file(key),
            annotation=annotation,
            what=f"group {key!r}",
            redo="build or import the matrices again under this annotation (python -m "
            "baglm_nb deps re-computes stale groups)",
        )
        return np.asarray(matrix, dtype=np.float64).copy()


#: One dataset's deps setting: a named one, a dependency-cache folder, an opened cache, a
#: resolved source or matrices.
DependencySetting: TypeAlias = str | os.PathLike | Dependencies | DependencyCache | Matrices

#: A deps setting: one dataset's, or ``{dataset: one dataset's}`` (missing: no source).
DependencySource: TypeAlias = DependencySetting | Mapping[str, DependencySetting]


def _same_dataset(cache: DependencyCache, dataset: str) -> DependencyCache:
    """``cache`` when it holds ``dataset``'s matrices; else ``ValueError`` naming its folder."""
    if cache.key.dataset != dataset:
        raise ValueError(
            f"{cache.path}: the dependency cache holds {cache.key.dataset!r} matrices, "
            f"not {dataset!r}"
        )
    return cache


def label_of(deps: DependencySource | None) -> str:
    """A short label for a dependency source: ``oracle``, ``none``, or the LLM's name."""
    if isinstance(deps, Dependencies):
        return deps.label
    if isinstance(deps, str):
        return deps
    key = getattr(deps, "key", None)
    return getattr(key, "model", None) or "LLM"


class _DependencyOptions(NamedTuple):
    """What :func:`dependencies` passes on to a resolver besides the dataset and setting."""

    root: Path
    llm: str


class DependencyResolver(Protocol):
    """Resolves a named deps setting (``<prefix>[:<argument>]``) for one dataset."""

    def __call__(self, dataset: str, setting: str, options: _DependencyOptions) -> Dependencies:
        """The dependency source of ``dataset`` that ``setting`` names."""


def _fixed(dataset: str, setting: str, options: _DependencyOptions) -> Dependencies:
    """``oracle`` (each video's ground-truth chain) or ``none`` (D = 0)."""
    if setting not in ("oracle", "none"):
        raise ValueError(f"deps {setting!r}: '{setting.split(':')[0]}' takes no argument")
    return Dependencies(setting, setting, setting)


def _simulated_llm(dataset: str, setting: str, options: _DependencyOptions) -> Dependencies:
    """``simulated-llm[:preset][:held-out]`` for ``dataset`` (all its videos)."""
    preset, _, variant = setting.partition(":")[2].partition(":")
    if variant not in ("", simulate_deps.HELD_OUT):
        raise ValueError(f"deps {setting!r}: expected simulated-llm[:preset][:held-out]")
    held_out = variant == simulate_deps.HELD_OUT
    preset = preset or "llama"
    matrices = simulate_deps.simulated_dependencies(dataset, preset, held_out=held_out)
    return Dependencies(simulate_deps.label(preset, held_out), matrices, "llm")


def _noisy_oracle(dataset: str, setting: str, options: _DependencyOptions) -> Dependencies:
    """``noisy-oracle:<level>`` for ``dataset`` (all its videos)."""
    try:
        level = float(setting.partition(":")[2])
    except ValueError:
        raise ValueError(f"deps {setting!r}: expected noisy-oracle:<level in [0, 1]>") from None
    videos = load_dataset(dataset)
    matrices = simulate_deps.noisy_oracle_dependencies(videos, level)
    return Dependencies(f"{NOISY}:{level:g}", matrices, "noisy-oracle")


def _imported(dataset: str, setting: str, options: _DependencyOptions) -> Dependencies:
    """``imported``: the authors' matrices of LLM ``options.llm``, imported earlier."""
    if setting != "imported":
        raise ValueError(f"deps {setting!r}: 'imported' takes no argument")
    folder = options.root / DependencyKey(dataset, options.llm, "published").relpath()
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(
            f"no imported matrices in {folder}; import the authors' files first "
            f"(python -m baglm_nb import --dataset {dataset} SRC)"
        )
    return Dependencies(options.llm, DependencyCache.open(folder))


#: The named deps settings: prefix -> (how it is written, its resolver).
DEPENDENCY_RESOLVERS: dict[str, tuple[str, DependencyResolver]] = {
    "oracle": ("oracle", _fixed),
    "none": ("none", _fixed),
    PREFIX: (f"{PREFIX}[:<preset>][:{simulate_deps.HELD_OUT}]", _simulated_llm),
    NOISY: (f"{NOISY}:<level>", _noisy_oracle),
    "imported": ("imported", _imported),
}


def dependencies(
    dataset: str,
    deps: DependencySource,
    *,
    root: str | os.PathLike | None = None,
    llm: str = PUBLISHED_LLM,
) -> Dependencies | None:
    """Resolve a deps setting (module docstring) for ``dataset``; ``None`` when it has none.

    Parameters
    ----------
    dataset : str
        Dataset name (selects the entry of a per-dataset mapping).
    deps
        The setting: a named one (:data:`DEPENDENCY_RESOLVERS`), a dependency-cache folder, an
        opened cache, matrices, or ``{dataset: one of those}``; an already resolved
        :class:`Dependencies` is returned as it is.
    root : path, optional
        Cache root for ``"imported"`` (default ``data/cache``).
    llm : str
        For ``"imported"``: the LLM key of the import.
    """
    if _per_dataset(deps):
        if dataset not in deps:
            return None
        deps = deps[dataset]
    if isinstance(deps, Dependencies):
        return deps
    if isinstance(deps, DependencyCache):
        return Dependencies(deps.key.model, _same_dataset(deps, dataset))
    if isinstance(deps, Mapping):
        return Dependencies("matrices", deps, "matrices")
    resolver = _named(deps, DEPENDENCY_RESOLVERS)
    if resolver is not None:
        root = Path(root) if root is not None else data_dir() / "cache"
        return resolver(dataset, deps, _DependencyOptions(root, llm))
    if isinstance(deps, str) and not Path(deps).exists():
        raise ValueError(
            f"deps {deps!r} is none of {_forms(DEPENDENCY_RESOLVERS)} and no existing "
            "dependency-cache folder (an LLM's matrices: build them with 'python -m baglm_nb "
            "deps', then name their folder)"
        )
    if isinstance(deps, (str, os.PathLike)):
        cache = _same_dataset(DependencyCache.open(deps), dataset)
        return Dependencies(cache.key.model, cache)
    raise TypeError(f"deps for {dataset}: unsupported setting of type {type(deps).__name__}")
