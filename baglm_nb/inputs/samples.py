"""The sample clips that ship with the repository: what notebooks 01 and 07 score by default.

Two short clips of the OpenCV project's sample data, ``tests/data/videos/cup.mp4`` (8 s) and
``box.mp4`` (15 s) (origin and licence: ``tests/data/videos/LICENSE.md``), with a hand-made
annotation file in the COIN layout (``tests/data/annotations``: a custom task "HandleObject"
with three steps). Not part of any dataset and no cooking task: with a tiny random model
(``random-init:<family>``) they exercise the scoring mechanics and its per-segment timings on
any machine, without the datasets' videos (which do not ship with the project). Their scores
live under their own cache root (:func:`cache_root`), apart from the datasets' caches.

Exports :data:`DATASET`, :data:`DEFAULT_MODEL`, :data:`NOTE`, :func:`videos`,
:func:`annotations` and :func:`cache_root`.
"""

from __future__ import annotations

from pathlib import Path

from baglm_nb.inputs.datasets import data_dir

__all__ = ["DATASET", "DEFAULT_MODEL", "NOTE", "annotations", "cache_root", "videos"]

#: The annotation layout of the sample clips' file (a dataset name of ``inputs.datasets``).
DATASET = "coin"

#: The model the notebooks score the sample clips with: tiny, random weights, CPU.
DEFAULT_MODEL = "random-init:internvl"

#: What a page says when it scores the sample clips.
NOTE = (
    "No video_dir given: scoring the sample clips that ship with the repository (tests/data: "
    "cup.mp4 and box.mp4, a hand-made 3-step task, not a dataset)."
)

_TESTS_DATA = Path(__file__).resolve().parents[2] / "tests" / "data"


def videos() -> Path:
    """The folder of the sample clips (``tests/data/videos``)."""
    return _TESTS_DATA / "videos"


def annotations() -> Path:
    """The folder of the sample clips' annotation file (``tests/data/annotations``)."""
    return _TESTS_DATA / "annotations"


def cache_root() -> Path:
    """Where the sample clips' scores are cached: ``data/cache/sample_clips``."""
    return data_dir() / "cache" / "sample_clips"
