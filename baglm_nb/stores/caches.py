"""The one factory of cache folders: every writer gets its cache from :func:`create_cache`.

A writer (the simulation, the scoring and dependency drivers, the importer) names a key; the
key's type picks the cache (a :class:`~baglm_nb.stores.keys.ScoreKey` a
:class:`~baglm_nb.stores.scores.ScoreCache`, a :class:`~baglm_nb.stores.keys.DependencyKey` a
:class:`~baglm_nb.stores.dependencies.DependencyCache`). The folder and its ``config.json``
are created, or an existing one is checked to hold the same key (``ValueError`` otherwise).
Readers open existing folders through :mod:`baglm_nb.core.sources` instead. No other product
module constructs a cache (``tests/test_architecture.py`` checks it).

Exports :func:`create_cache`.
"""

from __future__ import annotations

import os
from typing import overload

from baglm_nb.stores.dependencies import DependencyCache
from baglm_nb.stores.keys import DependencyKey, ScoreKey
from baglm_nb.stores.scores import ScoreCache

__all__ = ["create_cache"]


@overload
def create_cache(
    root: str | os.PathLike, key: ScoreKey, *, annotation_sha256: str | None = None
) -> ScoreCache: ...


@overload
def create_cache(
    root: str | os.PathLike, key: DependencyKey, *, annotation_sha256: str | None = None
) -> DependencyCache: ...


def create_cache(
    root: str | os.PathLike,
    key: ScoreKey | DependencyKey,
    *,
    annotation_sha256: str | None = None,
) -> ScoreCache | DependencyCache:
    """The cache of ``key`` under ``root`` for writing, created if it does not exist.

    Parameters
    ----------
    root : path
        The cache root; the folder is ``root / key.relpath()``.
    key : ScoreKey or DependencyKey
        What the entries are computed for; its type picks the cache.
    annotation_sha256 : str, optional
        SHA-256 of the annotation file the entries' steps come from, recorded in every entry
        written (:mod:`baglm_nb.stores.provenance`).
    """
    if isinstance(key, ScoreKey):
        cache: ScoreCache | DependencyCache = ScoreCache(root, key)
    elif isinstance(key, DependencyKey):
        cache = DependencyCache(root, key)
    else:
        raise TypeError(f"key must be a ScoreKey or a DependencyKey, got {type(key).__name__}")
    cache.annotation_sha256 = annotation_sha256
    return cache
