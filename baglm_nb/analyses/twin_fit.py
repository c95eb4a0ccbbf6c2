"""The simulated LMM's twins fitted to the paper's off-the-shelf numbers (``calibrate``).

The pinned twin's persistence (``noise_corr``) is fitted jointly with each dataset's ``signal``
on numbers that BaGLM's rows do not use (:mod:`baglm_nb.core.simulate`, "The two twins"):

- the off-the-shelf R@1 of each dataset, within :data:`RECALL_TOLERANCE` of the paper;
- the off-the-shelf HT-Step localization mAP at tIoU 0.3 / 0.5 / 0.7, within
  :data:`MAP_TOLERANCE` of the paper's InternVL2.5-8B row
  (:data:`~baglm_nb.inputs.paper.PAPER_LOCALIZATION`).

:func:`off_the_shelf_map` is the mAP of one parameter set (the same LoG detection and official
matcher as ``python -m baglm_nb localize``, on the raw VSG scores); :func:`fit_persistence`
walks a grid of ``noise_corr`` (coarse, then finer around the best), bisecting HT-Step's
``signal`` at each point, and keeps the point with the smallest :func:`map_miss`;
:func:`fit_table` reports a twin's values against the paper and the tolerances. The fitted
values are stored as constants in :mod:`baglm_nb.core.simulate` and the dataset specs, which
import nothing from here.

Exports :data:`MAP_TOLERANCE`, :data:`RECALL_TOLERANCE`, :data:`PAPER_LMM`,
:class:`PersistencePoint`, :class:`PersistenceFit`, :func:`paper_map`, :func:`map_miss`,
:func:`off_the_shelf_map`, :func:`fit_persistence` and :func:`fit_table`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from baglm_nb.analyses.localization import article_grounding_map, localize
from baglm_nb.core import simulate
from baglm_nb.core.evaluation import evaluate
from baglm_nb.inputs import grid
from baglm_nb.inputs.datasets import DATASETS, Video, load_dataset
from baglm_nb.inputs.paper import PAPER_LOCALIZATION, PAPER_LOCALIZATION_DATASET, paper_value

__all__ = [
    "MAP_TOLERANCE",
    "PAPER_LMM",
    "RECALL_TOLERANCE",
    "PersistenceFit",
    "PersistencePoint",
    "fit_persistence",
    "fit_table",
    "map_miss",
    "off_the_shelf_map",
    "paper_map",
]

#: How far (points) each fitted off-the-shelf mAP may be from the paper's, per tIoU.
MAP_TOLERANCE: dict[str, float] = {"@0.3": 1.0, "@0.5": 0.5, "@0.7": 0.3}

#: How far (points) each fitted off-the-shelf R@1 may be from the paper's.
RECALL_TOLERANCE = 0.3

#: The LMM the simulation stands for (its off-the-shelf row is the target).
PAPER_LMM = "internvl2.5-8b"

#: The coarse grid of ``noise_corr``, then the step of the finer one around its best point.
COARSE_GRID: tuple[float, ...] = tuple(round(0.1 * i, 1) for i in range(10))
FINE_STEP = 0.02


def paper_map() -> dict[str, float]:
    """The paper's off-the-shelf HT-Step mAP of :data:`PAPER_LMM` at the fitted tIoUs."""
    row = PAPER_LOCALIZATION[PAPER_LMM]["off_the_shelf"]
    return {k: float(row[k]) for k in MAP_TOLERANCE}


def map_miss(values: dict[str, float]) -> float:
    """The largest ``|mAP - paper| / tolerance`` over the fitted tIoUs (<= 1: all within)."""
    paper = paper_map()
    return max(abs(values[k] - paper[k]) / tol for k, tol in MAP_TOLERANCE.items())


def off_the_shelf_map(
    params: simulate.SimulationParams, videos: Sequence[Video] | None = None
) -> dict[str, float]:
    """Off-the-shelf HT-Step mAP (%) of the simulated raw VSG scores of ``params``.

    The rows without the none column go through the default LoG detection
    (:func:`~baglm_nb.analyses.localization.localize`) and the official label-agnostic matcher
    (:func:`~baglm_nb.analyses.localization.article_grounding_map`), as ``localize`` does for
    its off-the-shelf row; ``videos`` (default: the whole dataset) are the evaluated videos.
    """
    dataset = PAPER_LOCALIZATION_DATASET
    videos = list(load_dataset(dataset) if videos is None else videos)
    return _map_of_rows(_raw_rows(params, videos), videos)


def _raw_rows(params: simulate.SimulationParams, videos: Sequence[Video]) -> dict[str, np.ndarray]:
    """The per-second simulated raw VSG rows of ``videos``, as
    :func:`~baglm_nb.core.simulate.offline_recall` evaluates them."""
    d = int(params.segment_duration)
    return {v.uid: grid.per_second(simulate.simulate_vsg(v, params), d) for v in videos}


def _map_of_rows(raw: dict[str, np.ndarray], videos: list[Video]) -> dict[str, float]:
    """:func:`off_the_shelf_map` of HT-Step's raw rows ``raw``."""
    dataset = PAPER_LOCALIZATION_DATASET
    return article_grounding_map(localize(raw, dataset, videos), dataset, videos=videos)


@dataclass(frozen=True)
class PersistencePoint:
    """One ``noise_corr`` of the fit: HT-Step's bisected ``signal``, its R@1 and mAP."""

    noise_corr: float
    signal: float
    recall: float
    map: dict[str, float]

    @property
    def miss(self) -> float:
        """:func:`map_miss` of this point's mAP."""
        return map_miss(self.map)


@dataclass(frozen=True)
class PersistenceFit:
    """Result of :func:`fit_persistence`: every evaluated point and the best one."""

    points: tuple[PersistencePoint, ...]

    @property
    def best(self) -> PersistencePoint:
        """The point with the smallest miss (the lower ``noise_corr`` on ties)."""
        return min(self.points, key=lambda p: (p.miss, p.noise_corr))

    def frame(self) -> pd.DataFrame:
        """One row per point, in ``noise_corr`` order, the paper's values in the header."""
        rows = [
            {
                "noise_corr": p.noise_corr,
                "signal": round(p.signal, 4),
                "R@1": round(p.recall, 2),
                **{f"mAP {k}": round(p.map[k], 2) for k in MAP_TOLERANCE},
                "miss": round(p.miss, 2),
            }
            for p in sorted(self.points, key=lambda p: p.noise_corr)
        ]
        return pd.DataFrame(rows)


def fit_persistence(
    corrs: Iterable[float] | None = None,
    *,
    fine_step: float | None = FINE_STEP,
    videos: Sequence[Video] | None = None,
    base: simulate.SimulationParams | None = None,
    tol: float = 0.05,
) -> PersistenceFit:
    """Fit ``noise_corr`` to the paper's off-the-shelf HT-Step R@1 and mAP (module docstring).

    At each ``noise_corr`` of ``corrs`` (default :data:`COARSE_GRID`), HT-Step's ``signal`` is
    bisected to the paper's off-the-shelf R@1 (:func:`~baglm_nb.core.simulate.calibrate`,
    ``tol`` points) and the off-the-shelf mAP measured; with ``fine_step`` the points
    ``best ± k fine_step`` (k = 1..4, inside [0, 0.95]) are added around the best coarse point.
    ``videos`` (default: all of HT-Step) bound the work; ``base`` gives every other parameter.
    """
    dataset = PAPER_LOCALIZATION_DATASET
    videos = list(load_dataset(dataset) if videos is None else videos)
    base = simulate.SimulationParams() if base is None else base
    done: dict[float, PersistencePoint] = {}

    def point(corr: float) -> None:
        corr = round(float(corr), 4)
        if corr in done:
            return
        start = replace(base, noise_corr=corr)
        cal = simulate.calibrate(dataset, params=start, tol=tol, videos=videos)
        done[corr] = PersistencePoint(
            corr, cal.signal, cal.achieved, off_the_shelf_map(cal.params, videos)
        )

    for corr in COARSE_GRID if corrs is None else corrs:
        point(corr)
    if fine_step:
        centre = PersistenceFit(tuple(done.values())).best.noise_corr
        for k in (-4, -3, -2, -1, 1, 2, 3, 4):
            corr = round(centre + k * fine_step, 4)
            if 0.0 <= corr <= 0.95:
                point(corr)
    return PersistenceFit(tuple(done.values()))


def fit_table(
    twin: str, datasets: Iterable[str] = tuple(DATASETS), *, limit: int | None = None
) -> pd.DataFrame:
    """A twin's stored fit against the paper and the tolerances.

    One row per number: the off-the-shelf R@1 of each of ``datasets`` and, where HT-Step is
    among them, its off-the-shelf mAP at each fitted tIoU. Columns ``twin, dataset, number,
    simulated, paper, difference, tolerance, within`` (R@1 and mAP in percent; ``limit``: the
    first N videos of each dataset, a subset is no longer the fitted setting).
    """
    rows = []
    for name in datasets:
        params = simulate.twin_params(name, twin)
        videos = load_dataset(name)[:limit] if limit else load_dataset(name)
        raw = _raw_rows(params, videos)  # simulated once for the R@1 and the mAP
        value = evaluate(name, raw, videos)  # simulate.offline_recall, on the same rows
        rows.append(
            _row(twin, name, "off-the-shelf R@1", value, paper_value("off_the_shelf", name))
        )
        rows[-1]["tolerance"] = RECALL_TOLERANCE
        if name == PAPER_LOCALIZATION_DATASET:
            values, targets = _map_of_rows(raw, videos), paper_map()
            for k, tol in MAP_TOLERANCE.items():
                rows.append(_row(twin, name, f"off-the-shelf mAP {k}", values[k], targets[k]))
                rows[-1]["tolerance"] = tol
    frame = pd.DataFrame(rows)
    frame["within"] = np.abs(frame["difference"]) <= frame["tolerance"] + 1e-9
    return frame


def _row(twin: str, dataset: str, number: str, value: float, paper: float) -> dict:
    return {
        "twin": twin,
        "dataset": dataset,
        "number": number,
        "simulated": round(value, 2),
        "paper": paper,
        "difference": round(value - paper, 2) + 0.0,  # no "-0.0"
    }
