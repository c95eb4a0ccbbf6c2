"""Stable import path: :mod:`baglm_nb.core.evaluation` (R@1 protocols)."""

from baglm_nb.core.evaluation import evaluate

__all__ = ["evaluate"]
