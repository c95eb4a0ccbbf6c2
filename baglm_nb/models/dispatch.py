"""Engines: where a driver's work items run, in this process or on a Ray cluster.

Both drivers, :func:`~baglm_nb.models.scoring.score_dataset` (videos into the score cache) and
:func:`~baglm_nb.models.dependencies.build_dependencies` (one matrix per task group into the
dependency cache), hand their items to an :class:`Engine` built by :func:`make_engine` from the
setting: ``"local"``, ``"ray"`` or a :class:`~baglm_nb.models.ray_pool.RayOptions`. Only the
driver writes (the cache, ``failures.json``, the summary); an engine just runs the items.

An engine holds one object (a scorer, an LLM back-end) per worker, built once from a small
picklable factory, and :meth:`Engine.imap` runs ``fn(obj, payload)`` for each ``(key, payload)``,
yielding an :class:`~baglm_nb.models.ray_pool.Outcome` per item **as it finishes** (so the driver
writes each one at once, and a killed run resumes from what is written), and ``None`` now and
then while none finishes (for progress displays):

* :class:`LocalEngine` (``"local"``): in this process, one item after the other, on an object
  it builds itself or one already built (``loaded``); an exception of ``fn`` propagates;
* :class:`~baglm_nb.models.ray_pool.RayPool` (``"ray"``): Ray actors, each building its own
  object (so it needs the factory, never a loaded object); a worker that dies is replaced and its
  item retried ``max_attempts`` times, then reported as the outcome's ``error``.

:attr:`Engine.in_process` tells the driver whether ``fn`` runs in its own process (its
per-item progress bars and partial files are then the driver's).

Exports :data:`ENGINES`, :data:`EngineSetting`, the :class:`Engine` protocol,
:class:`LocalEngine` and :func:`make_engine`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, Protocol

from baglm_nb.models.ray_pool import Outcome, RayOptions, RayPool

__all__ = ["ENGINES", "Engine", "EngineSetting", "LocalEngine", "make_engine"]

ENGINES = ("local", "ray")
"""The engine names a setting may give (``"ray"``: :class:`RayOptions` defaults)."""

EngineSetting = Literal["local", "ray"] | RayOptions
"""What a driver's ``engine`` argument takes."""


class Engine(Protocol):
    """Where a driver's items run (see the module docs)."""

    #: ``"local"`` or ``"ray"`` (the summaries record it).
    name: str
    #: True when ``fn`` runs in the driver's process.
    in_process: bool

    @property
    def in_flight(self) -> int:
        """Items being worked on now."""
        ...

    def __enter__(self) -> Engine: ...

    def __exit__(self, *exc: object) -> None: ...

    def identity(self) -> Any:
        """``describe(obj)`` of the object the workers built (e.g. the cache key's model)."""
        ...

    def imap(
        self, fn: Callable[[Any, Any], Any], items: Sequence[tuple[str, Any]]
    ) -> Iterator[Outcome | None]:
        """An :class:`~baglm_nb.models.ray_pool.Outcome` of ``fn(obj, payload)`` per
        ``(key, payload)``, as they finish (``None`` while none does)."""
        ...


class LocalEngine:
    """The ``"local"`` engine: in this process, one item after the other.

    Parameters
    ----------
    build
        A zero-argument callable that builds the object, called on entering.
    describe
        ``describe(obj)``: what :meth:`identity` returns.
    """

    name = "local"
    in_process = True

    def __init__(self, build: Callable[[], Any], describe: Callable[[Any], Any]) -> None:
        self.build, self.describe = build, describe
        self.obj: Any = None
        self.in_flight = 0

    def __enter__(self) -> LocalEngine:
        self.obj = self.build()
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def identity(self) -> Any:
        """``describe(obj)``."""
        return self.describe(self.obj)

    def imap(
        self, fn: Callable[[Any, Any], Any], items: Sequence[tuple[str, Any]]
    ) -> Iterator[Outcome]:
        """``fn(obj, payload)`` of each item, in order (one attempt each)."""
        for key, payload in items:
            self.in_flight = 1
            try:
                result = fn(self.obj, payload)
            finally:
                self.in_flight = 0
            yield Outcome(key, result, None, 1)


def make_engine(
    setting: EngineSetting,
    describe: Callable[[Any], Any],
    *,
    build: Callable[[], Any] | None = None,
    loaded: Any = None,
    what: str = "a factory",
) -> Engine:
    """The engine of ``setting``, holding the object ``build`` makes (or ``loaded``).

    Parameters
    ----------
    setting
        ``"local"``, ``"ray"`` (default :class:`RayOptions`) or a :class:`RayOptions`.
    describe
        A picklable ``describe(obj)``: the identity the engine reports (e.g. the model id).
    build
        A picklable zero-argument factory of the object (each Ray worker calls it once).
    loaded
        An object already built in this process, instead of ``build`` (local engine only).
    what
        What the caller should pass instead of a loaded object, for the Ray engine's error.

    Raises
    ------
    ValueError
        An unknown setting, or a loaded object for the Ray engine.
    """
    if (build is None) == (loaded is None):
        raise ValueError("give either build or loaded")
    if setting == "local":
        return LocalEngine(build or (lambda: loaded), describe)
    options = RayOptions() if setting == "ray" else setting
    if not isinstance(options, RayOptions):
        raise ValueError(f"engine must be one of {ENGINES} or a RayOptions, got {setting!r}")
    if build is None:
        raise ValueError(f"the ray engine loads the model in each worker: pass {what}")
    return RayPool(build, options, describe=describe)
