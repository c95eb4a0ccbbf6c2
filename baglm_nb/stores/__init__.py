"""Stage 3, stores: what is computed once and read many times.

- :mod:`.atomic`: the one atomic file writer (temp file, fsync, rename);
- :mod:`.cache`: Parquet score and dependency caches, and the authors'-files importer.
"""
