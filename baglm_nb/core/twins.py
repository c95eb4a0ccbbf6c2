"""The simulated LMM's twins by name, and the parameters each was fitted to.

A twin is one parameter set of the simulation (:mod:`baglm_nb.core.simulate`), fitted only to
paper numbers that BaGLM's rows do not use:

- ``iid`` (:data:`IID`): independent noise per 2-s segment (``noise_corr`` 0), ``signal`` per
  dataset fitted to the paper's off-the-shelf R@1 (``DatasetSpec.calibrated_signal``,
  :data:`CALIBRATED_SIGNAL`). Nothing pins how long its errors last: its off-the-shelf HT-Step
  localization mAP is far below the paper's.
- ``pinned`` (:data:`PINNED`): the noise is an AR(1) process across segments with lag-1
  correlation :data:`PINNED_NOISE_CORR` (an error lasts about ``1 / (1 - r)`` segments), one
  value for every dataset, fitted jointly with each dataset's ``signal``
  (``DatasetSpec.pinned_signal``, :data:`PINNED_SIGNAL`) to the paper's off-the-shelf R@1 on
  all four datasets (within 0.3) and its off-the-shelf HT-Step mAP at tIoU 0.3 / 0.5 / 0.7
  (InternVL2.5-8B: 15.0 / 6.0 / 1.3, within 1.0 / 0.5 / 0.3):
  :func:`baglm_nb.analyses.twin_fit.fit_persistence`, ``python -m baglm_nb calibrate --twin
  pinned``.

:data:`DEFAULT_TWIN` is what ``"simulated"`` (:mod:`baglm_nb.core.sources`) and
:func:`~baglm_nb.core.simulate.default_params` give: the twin with the smaller out-of-sample
error on BaGLM's R@1 gains, the mean absolute error over the four datasets
(:func:`baglm_nb.analyses.simulation_check.default_twin_of`, ``python -m baglm_nb sim-check``;
the README gives the numbers).
Both stay available by name: ``"simulated:iid"``, ``"simulated:pinned"``.

Exports :data:`IID`, :data:`PINNED`, :data:`TWINS`, :data:`DEFAULT_TWIN`,
:data:`PINNED_NOISE_CORR`, :data:`CALIBRATED_SIGNAL`, :data:`PINNED_SIGNAL` and
:func:`twin_values`.
"""

from __future__ import annotations

from baglm_nb.inputs.datasets import DATASETS, dataset_spec

__all__ = [
    "CALIBRATED_SIGNAL",
    "DEFAULT_TWIN",
    "IID",
    "PINNED",
    "PINNED_NOISE_CORR",
    "PINNED_SIGNAL",
    "TWINS",
    "twin_values",
]

#: The twins by name: independent noise, or persistence pinned to the paper.
IID, PINNED = "iid", "pinned"
TWINS: tuple[str, ...] = (IID, PINNED)

#: The pinned twin's ``noise_corr``, fitted with :data:`PINNED_SIGNAL` to the paper's
#: off-the-shelf R@1 (four datasets) and HT-Step localization mAP (InternVL2.5-8B, tIoU 0.3 /
#: 0.5 / 0.7): ``python -m baglm_nb calibrate --twin pinned``.
PINNED_NOISE_CORR = 0.5

#: The twin of ``"simulated"``: the one with the smaller mean absolute error on BaGLM's R@1
#: gains, which neither twin was fitted on (:func:`baglm_nb.analyses.simulation_check.
#: default_twin_of`; ``python -m baglm_nb sim-check``; the README gives the numbers).
DEFAULT_TWIN = PINNED

#: The i.i.d. twin's ``signal`` per dataset (each ``DatasetSpec.calibrated_signal``):
#: ``python -m baglm_nb calibrate --twin iid`` prints these values and the off-the-shelf R@1
#: each gives (seed 0, other defaults, tol 0.05).
CALIBRATED_SIGNAL: dict[str, float] = {
    name: spec.calibrated_signal
    for name, spec in DATASETS.items()
    if spec.calibrated_signal is not None
}

#: The pinned twin's ``signal`` per dataset (each ``DatasetSpec.pinned_signal``), fitted at
#: ``noise_corr`` :data:`PINNED_NOISE_CORR`.
PINNED_SIGNAL: dict[str, float] = {
    name: spec.pinned_signal for name, spec in DATASETS.items() if spec.pinned_signal is not None
}


def twin_values(dataset: str, twin: str, signal_given: bool = False) -> dict[str, float]:
    """``{"signal": ..., "noise_corr": ...}`` of ``twin`` for ``dataset``.

    ``iid``: the spec's ``calibrated_signal`` and 0; ``pinned``: its ``pinned_signal`` and
    :data:`PINNED_NOISE_CORR`. Raises ValueError for an unknown twin, or a dataset without that
    twin's ``signal`` (unless ``signal_given``: the caller brings its own): its simulated
    scores would otherwise be another dataset's.
    """
    if twin not in TWINS:
        raise ValueError(f"unknown simulated twin {twin!r}; twins: {', '.join(TWINS)}")
    spec = dataset_spec(dataset)
    field = "calibrated_signal" if twin == IID else "pinned_signal"
    signal = getattr(spec, field)
    if signal is None and not signal_given:
        raise ValueError(
            f"dataset {dataset!r} has no {twin} twin signal: run `python -m baglm_nb calibrate "
            f"--twin {twin} --dataset {dataset}` and set {field} in its DatasetSpec "
            "(baglm_nb/inputs/datasets.py), or pass signal="
        )
    return {"signal": signal, "noise_corr": 0.0 if twin == IID else PINNED_NOISE_CORR}
