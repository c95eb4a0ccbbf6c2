"""Stable import path: :mod:`baglm_nb.core.filtering` (the Bayesian filter)."""

from baglm_nb.core.filtering import run_filter

__all__ = ["run_filter"]
