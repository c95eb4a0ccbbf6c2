"""Stable import path: :mod:`baglm_nb.analyses.localization` (LoG step localization)."""

from baglm_nb.analyses.localization import article_grounding_map, detect_segments, localize

__all__ = ["article_grounding_map", "detect_segments", "localize"]
