"""Ray Core workers: score videos (or dependency groups) on a cluster, the driver writing alone.

A :class:`RayPool` starts N Ray actors. Each builds its object **once** from a small factory
(a :class:`~baglm_nb.models.scoring.ScorerSpec` loads the LMM; a dependency back-end's factory
loads the LLM) and then runs whole work items on it: a video is decoded, preprocessed and scored
inside the worker, which returns the arrays and timings. Only the driver writes (the cache,
``failures.json``, the summary), through the same code as the local engine.

Faults:

* an error the task itself reports (a :class:`~baglm_nb.inputs.video.VideoError`) comes back as
  a result and is recorded by the driver, never retried;
* a worker that **dies** (killed, out of memory, its node lost) is replaced by a new actor, not
  reused: actors are created with ``max_restarts=0`` and ``max_task_retries=0``, so Ray never
  restarts or retries anything behind the driver's back (a restarting actor would fail its
  calls at once). Its item is retried on a fresh worker until it has been tried
  ``max_attempts`` times, then recorded as ``"worker died 3 times (...)"``: a poison item never
  loops. A dead worker is replaced only while more items wait than workers are idle or
  starting (none is started just to load its model and be released);
* a worker whose factory raises (weights missing, ...) stops the run with
  :class:`WorkerStartError`, and so do ``max_attempts`` workers in a row that die while starting;
* any other exception raised by a task stops the run, as it would in the local engine.

Workers are placed with ``num_gpus`` per worker (default: 1 when the cluster has GPUs, else CPU
workers of ``num_cpus_per_worker`` cores, which is also their torch and numba thread count). They
read the videos from paths the driver resolved, so every node must see the same files (a shared
filesystem, or an object store mounted at the same path) and have the workbench installed.

Exports :class:`RayOptions`, :class:`RayPool` (the ``"ray"``
:class:`~baglm_nb.models.dispatch.Engine` of both drivers, built by
:func:`~baglm_nb.models.dispatch.make_engine`), :class:`Outcome` and :class:`WorkerStartError`.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from baglm_nb.models.ray_connect import CONNECT_TIMEOUT_S, connect

__all__ = ["Outcome", "RayOptions", "RayPool", "WorkerStartError"]

INSTALL_HINT = "Ray is not installed: pip install -e '.[ray]' (or make setup)"


@dataclass(frozen=True)
class RayOptions:
    """Where and how to run on Ray.

    Parameters
    ----------
    address
        ``None``: Ray's default (``RAY_ADDRESS``, else a local instance for this run);
        ``"auto"``: the cluster started on this machine with ``ray start``; or ``HOST:PORT`` of
        the head node. Ignored when this process is already connected (``ray.init`` was called).
    workers
        Actors to start; default as many as fit on the cluster's GPUs (CPUs for CPU workers).
    num_gpus_per_worker
        GPUs per actor; default 1 when the cluster has GPUs, else 0 (CPU workers).
    num_cpus_per_worker
        CPU cores per actor, and its torch thread count.
    max_attempts
        Workers that may try one item before it is recorded as failed (a worker that dies).
    wait_for_workers
        Start handing out work only once every worker has loaded its model (for timing
        comparisons; by default work starts as soon as the first worker is ready).
    connect_timeout
        Seconds to reach and join the cluster at ``address``
        (:func:`~baglm_nb.models.ray_connect.connect`).
    """

    address: str | None = None
    workers: int | None = None
    num_gpus_per_worker: float | None = None
    num_cpus_per_worker: float = 1.0
    max_attempts: int = 3
    wait_for_workers: bool = False
    connect_timeout: float = CONNECT_TIMEOUT_S

    def __post_init__(self) -> None:
        if not self.connect_timeout > 0:
            raise ValueError(f"--connect-timeout must be > 0 seconds, got {self.connect_timeout}")
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")
        if self.num_cpus_per_worker <= 0:
            raise ValueError(f"num_cpus_per_worker must be > 0, got {self.num_cpus_per_worker}")
        if self.num_gpus_per_worker is not None and self.num_gpus_per_worker < 0:
            raise ValueError(f"num_gpus_per_worker must be >= 0, got {self.num_gpus_per_worker}")


class WorkerStartError(RuntimeError):
    """A worker could not build its object (load the model), or workers keep dying at start."""


@dataclass
class Outcome:
    """One item's end: the task's return value, or why the workers could not finish it."""

    key: str
    result: Any
    error: str | None
    attempts: int


class _Worker:
    """The actor: builds its object once (loads the model), then runs calls on it."""

    def __init__(self, factory: Callable[[], Any], threads: int, describe: Callable | None):
        _limit_threads(threads)  # each worker uses its own cores, and no others
        self.obj = factory()
        _limit_threads(threads)  # the libraries the factory imported, whatever they read
        self.identity = None if describe is None else describe(self.obj)

    def ready(self) -> Any:
        """The object's identity (e.g. the model id), once it is built."""
        return self.identity

    def call(self, fn: Callable[[Any, Any], Any], payload: Any) -> Any:
        """``fn(obj, payload)`` on this worker's object."""
        return fn(self.obj, payload)

    def pid(self) -> int:
        """This worker's process id."""
        return os.getpid()


#: The compute libraries' thread-count variables, read when each library is first loaded.
_THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMBA_NUM_THREADS",
)


def _limit_threads(threads: int) -> None:
    """Make this worker's compute use ``threads`` threads, without importing anything.

    The libraries not loaded yet (torch, numba, BLAS) read the environment variables when the
    worker's object first needs them (a worker that scores with the simulated scorer never
    loads torch); those loaded already are set directly. numba's threads serve the frame
    resizing."""
    for name in _THREAD_VARIABLES:
        if name == "NUMBA_NUM_THREADS" and "numba" in sys.modules:
            continue  # a loaded numba refuses a changed variable at its next compile; set below
        os.environ[name] = str(threads)
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "set_num_threads"):
        torch.set_num_threads(threads)
    numba = sys.modules.get("numba")
    if numba is not None and hasattr(numba, "set_num_threads"):
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ImportError(INSTALL_HINT) from None
    return ray


def _deaths(ray: Any) -> tuple[type[BaseException], ...]:
    """The errors that mean the worker (not the task) failed."""
    e = ray.exceptions
    return (
        e.RayActorError,
        e.WorkerCrashedError,
        e.NodeDiedError,
        e.OutOfMemoryError,
        e.ObjectLostError,
    )


def _reason(exc: BaseException) -> str:
    """The first meaningful line of a Ray error, for a failure record."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return (lines[0] if lines else type(exc).__name__)[:300]


class RayPool:
    """N Ray actors, each holding one object built by ``factory``; items run on free actors.

    Parameters
    ----------
    factory
        A picklable zero-argument callable that builds the object (runs once per worker).
    options
        :class:`RayOptions`.
    describe
        A picklable ``describe(obj)``: the identity every worker reports once ready (they must
        all agree; e.g. the model id of the cache key).

    Use it as a context manager: entering connects to (or starts) Ray and starts the actors,
    leaving kills them (and shuts down a Ray instance the pool started itself).
    """

    name = "ray"
    in_process = False

    def __init__(
        self, factory: Callable[[], Any], options: RayOptions, describe: Callable | None = None
    ) -> None:
        self.factory, self.options, self.describe = factory, options, describe
        self._starting: dict[Any, Any] = {}  # ready() ref -> actor
        self._idle: list[Any] = []
        self._running: dict[Any, tuple[Any, str, Any]] = {}  # call ref -> (actor, key, payload)
        self._identity: Any = None
        self._has_identity = False
        self._start_deaths = 0
        self._own_ray = False
        self.workers = 0

    # -- life cycle -------------------------------------------------------------------------
    def __enter__(self) -> RayPool:
        ray = _ray()
        self._own_ray = connect(self.options.address, self.options.connect_timeout)
        try:
            self.workers, self._resources = self._plan(ray.cluster_resources())
            self._cls = ray.remote(_Worker)
            for _ in range(self.workers):
                self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        ray = _ray()
        actors = [*self._starting.values(), *self._idle, *(a for a, _, _ in self._running.values())]
        for actor in actors:
            try:
                ray.kill(actor, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self._starting.clear()
        self._idle.clear()
        self._running.clear()
        if self._own_ray:
            ray.shutdown()
            self._own_ray = False

    def _plan(self, resources: dict[str, float]) -> tuple[int, dict[str, float]]:
        """(number of workers, resources of one) from the cluster's resources."""
        o = self.options
        gpus, cpus = float(resources.get("GPU", 0)), float(resources.get("CPU", 0))
        per_gpu = o.num_gpus_per_worker
        if per_gpu is None:
            per_gpu = 1.0 if gpus >= 1 else 0.0
        if per_gpu > gpus:
            raise ValueError(
                f"{per_gpu:g} GPU(s) per worker asked for, but the Ray cluster has {gpus:g} "
                "GPUs (--num-gpus-per-worker 0 runs CPU workers)"
            )
        if o.num_cpus_per_worker > cpus:
            raise ValueError(
                f"{o.num_cpus_per_worker:g} CPUs per worker asked for, but the Ray cluster has "
                f"{cpus:g}"
            )
        fit = int(gpus // per_gpu) if per_gpu > 0 else int(cpus // o.num_cpus_per_worker)
        n = o.workers or max(1, fit)
        if n > fit:
            warnings.warn(
                f"{n} Ray workers asked for, {fit} fit on the cluster now; the others wait for "
                "free resources",
                stacklevel=3,
            )
        return n, {"num_gpus": per_gpu, "num_cpus": o.num_cpus_per_worker}

    def _start(self) -> None:
        """Start one actor; it joins the idle workers once its object is built."""
        threads = max(1, int(self.options.num_cpus_per_worker))
        actor = self._cls.options(**self._resources, max_restarts=0, max_task_retries=0).remote(
            self.factory, threads, self.describe
        )
        self._starting[actor.ready.remote()] = actor

    def _replace(self, actor: Any, needed: bool = True) -> None:
        """Kill a dead (or doomed) actor for good and start a fresh one in its place, unless
        ``needed`` is false (the waiting items have workers already: a new one would only load
        its model to be released)."""
        try:
            _ray().kill(actor, no_restart=True)
        except Exception:  # noqa: BLE001 - already gone
            pass
        if needed:
            self._start()

    # -- readiness --------------------------------------------------------------------------
    def _on_ready(self, ref: Any) -> None:
        """A starting actor answered: it is idle now, or it failed to start."""
        ray = _ray()
        actor = self._starting.pop(ref)
        try:
            identity = ray.get(ref)
        except ray.exceptions.RayActorError as exc:
            if exc.actor_init_failed:
                raise WorkerStartError(
                    f"a Ray worker could not build its scorer: {_init_error(exc)}"
                ) from None
            self._start_deaths += 1
            if self._start_deaths >= self.options.max_attempts:
                raise WorkerStartError(
                    f"{self._start_deaths} Ray workers in a row died while starting "
                    f"(last: {_reason(exc)})"
                ) from None
            self._replace(actor)
            return
        self._start_deaths = 0
        if not self._has_identity:
            self._identity, self._has_identity = identity, True
        elif identity != self._identity:
            raise WorkerStartError(
                f"Ray workers disagree on what they loaded: {identity!r} vs {self._identity!r}"
            )
        self._idle.append(actor)

    def identity(self) -> Any:
        """What the workers report once ready (waits for the first one, or for all with
        ``wait_for_workers``)."""
        ray = _ray()
        while not self._has_identity or (self.options.wait_for_workers and self._starting):
            if not self._starting:
                raise WorkerStartError("no Ray worker is starting")
            done, _ = ray.wait(list(self._starting), num_returns=1)
            self._on_ready(done[0])
        return self._identity

    @property
    def in_flight(self) -> int:
        """Items being worked on now."""
        return len(self._running)

    # -- work -------------------------------------------------------------------------------
    def imap(
        self, fn: Callable[[Any, Any], Any], items: Sequence[tuple[str, Any]], tick: float = 0.5
    ) -> Iterator[Outcome | None]:
        """``fn(obj, payload)`` for each ``(key, payload)`` on a free worker, as they finish.

        Yields an :class:`Outcome` per item in completion order, and ``None`` every ``tick``
        seconds without one (for progress displays). Idle workers with nothing left to do are
        released.
        """
        ray = _ray()
        deaths = _deaths(ray)
        pending = deque(items)
        attempts: dict[str, int] = {}
        while pending or self._running:
            while self._idle and pending:
                actor = self._idle.pop()
                key, payload = pending.popleft()
                attempts[key] = attempts.get(key, 0) + 1
                self._running[actor.call.remote(fn, payload)] = (actor, key, payload)
            if not pending:
                self._release_idle()
            refs = [*self._running, *self._starting]
            done, _ = ray.wait(refs, num_returns=1, timeout=tick)
            if not done:
                yield None
                continue
            ref = done[0]
            if ref in self._starting:
                self._on_ready(ref)
                continue
            actor, key, payload = self._running.pop(ref)
            try:
                result = ray.get(ref)
            except deaths as exc:
                retry = attempts[key] < self.options.max_attempts
                if retry:
                    pending.appendleft((key, payload))
                self._replace(actor, needed=len(pending) > len(self._starting) + len(self._idle))
                if retry:
                    continue
                n = attempts[key]
                yield Outcome(key, None, f"worker died {n} times (last: {_reason(exc)})", n)
                continue
            self._idle.append(actor)
            yield Outcome(key, result, None, attempts[key])

    def _release_idle(self) -> None:
        """Kill the workers that have nothing left to do (frees their GPUs for others)."""
        ray = _ray()
        while self._idle:
            ray.kill(self._idle.pop(), no_restart=True)


def _init_error(exc: BaseException) -> str:
    """The exception line of an actor's failed ``__init__`` (the last line of its traceback)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    tail = [ln for ln in lines if not ln.startswith(("File ", "^", "~"))]
    return (tail[-1] if tail else _reason(exc))[:500]
