"""Step localization (the paper's appendix): LoG segments, HT-Step mAP, Ego4D windowed R@1.

- :mod:`.response`: the scale-normalised LoG response along time, and the scale grid;
- :mod:`.detection`: blobs -> per-step segments (:func:`~.detection.detect_segments`,
  :func:`~.detection.localize`), every choice in :data:`~.detection.DETECTION_CHOICES`;
- :mod:`.metrics`: HT-Step article-grounding mAP (official protocol), Ego4D windowed recall;
- :mod:`.tables`: the off-the-shelf LMM vs BaGLM tables beside the paper's values.

What was chosen and why, with the numbers measured: ``docs/design/localization.md``. Every
public name of the four modules is re-exported here.
"""

from baglm_nb.analyses.localization.detection import (
    DEFAULT_OVERLAP,
    DEFAULT_THRESHOLD,
    DETECTION_CHOICES,
    SIGMA_TO_HALF_WIDTH,
    column_step_ids,
    detect_segments,
    find_blobs,
    localize,
)
from baglm_nb.analyses.localization.metrics import (
    TIOU_THRESHOLDS,
    article_grounding_ap,
    article_grounding_map,
    interpolated_ap,
    windowed_recall,
)
from baglm_nb.analyses.localization.response import (
    DEFAULT_MODE,
    DEFAULT_SCALES,
    MODES,
    log_response,
    log_scales,
)
from baglm_nb.analyses.localization.tables import (
    METRIC_NAMES,
    localization_table,
    model_label,
    windowed_recall_table,
)

__all__ = [
    "DEFAULT_MODE",
    "DEFAULT_OVERLAP",
    "DEFAULT_SCALES",
    "DEFAULT_THRESHOLD",
    "DETECTION_CHOICES",
    "METRIC_NAMES",
    "MODES",
    "SIGMA_TO_HALF_WIDTH",
    "TIOU_THRESHOLDS",
    "article_grounding_ap",
    "article_grounding_map",
    "column_step_ids",
    "detect_segments",
    "find_blobs",
    "interpolated_ap",
    "localization_table",
    "localize",
    "log_response",
    "log_scales",
    "model_label",
    "windowed_recall",
    "windowed_recall_table",
]
