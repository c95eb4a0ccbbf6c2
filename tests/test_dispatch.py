"""The engine pattern of both drivers: make_engine's settings and refusals, the local engine.

The Ray engine (:class:`~baglm_nb.models.ray_pool.RayPool`) is exercised on a cluster in
``tests/test_ray.py``; here it is only built, never entered (no cluster is started).
"""

from __future__ import annotations

import os

import pytest

from baglm_nb.models.dispatch import ENGINES, LocalEngine, make_engine
from baglm_nb.models.ray_pool import Outcome, RayOptions, RayPool


class Counter:
    """A stand-in object: counts how often it is built and records what it was asked."""

    built = 0

    def __init__(self) -> None:
        Counter.built += 1
        self.seen: list[int] = []
        self.name = "counter"


def _square(obj: Counter, payload: int) -> int:
    obj.seen.append(payload)
    return payload * payload


def _describe(obj: Counter) -> tuple[str, int]:
    return obj.name, len(obj.seen)


def test_local_engine_builds_once_and_yields_each_outcome_in_order():
    Counter.built = 0
    engine = make_engine("local", _describe, build=Counter)
    assert isinstance(engine, LocalEngine) and engine.in_process and engine.name == "local"
    assert Counter.built == 0  # built on entering, not before
    with engine as eng:
        assert eng.identity() == ("counter", 0)
        outcomes = list(eng.imap(_square, [("a", 3), ("b", 4), ("c", 5)]))
    assert Counter.built == 1
    assert outcomes == [
        Outcome("a", 9, None, 1),
        Outcome("b", 16, None, 1),
        Outcome("c", 25, None, 1),
    ]
    assert eng.obj.seen == [3, 4, 5] and eng.identity() == ("counter", 3)


def test_local_engine_counts_the_item_in_flight_while_it_runs():
    seen = []
    with make_engine("local", _describe, loaded=Counter()) as eng:

        def probe(obj, payload):
            seen.append(eng.in_flight)
            return payload

        assert [o.result for o in eng.imap(probe, [("x", 1), ("y", 2)])] == [1, 2]
    assert seen == [1, 1] and eng.in_flight == 0


def test_an_exception_of_the_function_stops_the_local_engine():
    def boom(obj, payload):
        if payload == 2:
            raise KeyboardInterrupt
        return payload

    with make_engine("local", _describe, loaded=Counter()) as eng:
        results = eng.imap(boom, [("a", 1), ("b", 2), ("c", 3)])
        assert next(results).result == 1
        with pytest.raises(KeyboardInterrupt):
            next(results)
        assert eng.in_flight == 0


def test_a_loaded_object_is_kept_as_it_is_on_the_local_engine():
    obj = Counter()
    with make_engine("local", _describe, loaded=obj) as eng:
        assert eng.obj is obj


def test_ray_settings_build_a_ray_pool_without_starting_it():
    pool = make_engine("ray", _describe, build=Counter)
    assert isinstance(pool, RayPool) and pool.options == RayOptions()
    assert pool.name == "ray" and not pool.in_process and pool.workers == 0
    options = RayOptions(workers=3, max_attempts=2)
    pool = make_engine(options, _describe, build=Counter)
    assert pool.options is options and pool.factory is Counter and pool.describe is _describe


def test_a_loaded_object_cannot_go_to_ray_workers():
    for setting in ("ray", RayOptions(workers=1)):
        with pytest.raises(ValueError) as err:
            make_engine(setting, _describe, loaded=Counter(), what="a factory, not a counter")
        assert str(err.value) == (
            "the ray engine loads the model in each worker: pass a factory, not a counter"
        )


def test_an_unknown_setting_is_named():
    assert ENGINES == ("local", "ray")
    with pytest.raises(ValueError) as err:
        make_engine("spark", _describe, build=Counter)
    assert str(err.value) == "engine must be one of ('local', 'ray') or a RayOptions, got 'spark'"
    with pytest.raises(ValueError, match="either build or loaded"):
        make_engine("local", _describe, build=Counter, loaded=Counter())
    with pytest.raises(ValueError, match="either build or loaded"):
        make_engine("local", _describe)


def test_a_workers_thread_limit_leaves_a_loaded_numba_able_to_compile(monkeypatch):
    """A Ray worker whose object's module loaded numba (and started its threads) limits the
    threads without changing ``NUMBA_NUM_THREADS``: numba refuses to compile after that
    variable changed once its threads run."""
    import numba
    import torch

    from baglm_nb.models.ray_pool import _THREAD_VARIABLES, _limit_threads

    for name in _THREAD_VARIABLES:  # restored after the test
        monkeypatch.setenv(name, os.environ.get(name, str(numba.config.NUMBA_NUM_THREADS)))
    numba_threads, torch_threads = numba.get_num_threads(), torch.get_num_threads()
    numba.njit(lambda x: x + 1)(1)  # a compiled kernel: numba's threading is set up
    try:
        _limit_threads(1)
        assert numba.get_num_threads() == 1 and torch.get_num_threads() == 1
        assert os.environ["OMP_NUM_THREADS"] == "1"
        assert numba.njit(lambda x: x * 2)(3) == 6  # compiles after the limit
    finally:
        numba.set_num_threads(numba_threads)
        torch.set_num_threads(torch_threads)
