"""Stable import path: :mod:`baglm_nb.inputs.datasets` (annotations, videos, statistics)."""

from baglm_nb.inputs.datasets import DATASETS, Video, dataset_stats, load_dataset

__all__ = ["DATASETS", "Video", "dataset_stats", "load_dataset"]
