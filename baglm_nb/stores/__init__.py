"""Stage 2, stores: what is computed once and read many times.

- :mod:`.atomic`: the one atomic file writer (temp file, fsync, rename);
- :mod:`.keys`: :class:`~.keys.ScoreKey` and :class:`~.keys.DependencyKey`, the identity and
  folder of a stored set;
- :mod:`.parquet`: what both caches share (``config.json``, one Parquet file per entry,
  BaGLM metadata);
- :mod:`.scores`: the score cache (VSG and progress per video);
- :mod:`.dependencies`: the dependency cache (one matrix per task group);
- :mod:`.caches`: :func:`~.caches.create_cache`, the one factory of cache folders (every
  writer's);
- :mod:`.importer`: the authors' published ``.pt`` files into both caches.
"""
