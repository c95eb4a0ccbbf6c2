"""Stable import path: :mod:`baglm_nb.core.simulate` (the simulated CPU default)."""

from baglm_nb.core.simulate import per_second, simulate_dataset

__all__ = ["per_second", "simulate_dataset"]
