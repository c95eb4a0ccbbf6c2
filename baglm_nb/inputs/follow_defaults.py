"""``follow``'s announcement defaults: threshold, patience and fixed-lag smoothing, once.

``follow`` announces a step after its belief stays at or above a threshold for ``patience``
segments (:class:`~baglm_nb.core.online.Hysteresis`), on beliefs smoothed over the next
``lag`` segments (:class:`~baglm_nb.core.online.FixedLagSmoother`). The defaults are chosen on
HT-Step alone, on the default simulated twin, as the setting with the best announcement F1
among those whose median delay is at most :data:`MAX_DELAY_S`
(:func:`baglm_nb.analyses.stay.choose_announcement` on
:func:`~baglm_nb.analyses.stay.announcement_grid`, notebook 09), then reported unchanged on the
other datasets beside :data:`PREVIOUS_ANNOUNCEMENT` (the README gives the numbers). The
library's own classes (:class:`~baglm_nb.core.online.Hysteresis`,
:class:`~baglm_nb.core.online.OnlineGrounder`) keep their neutral defaults. Standard library
only, so the command line reads it without loading anything heavy.

Exports :data:`FOLLOW_THRESHOLD`, :data:`FOLLOW_PATIENCE_SEGMENTS`, :data:`FOLLOW_LAG_SEGMENTS`,
:data:`FOLLOW_ANNOUNCEMENT`, :data:`PREVIOUS_ANNOUNCEMENT` and :data:`MAX_DELAY_S`.
"""

from __future__ import annotations

__all__ = [
    "FOLLOW_ANNOUNCEMENT",
    "FOLLOW_LAG_SEGMENTS",
    "FOLLOW_PATIENCE_SEGMENTS",
    "FOLLOW_THRESHOLD",
    "MAX_DELAY_S",
    "PREVIOUS_ANNOUNCEMENT",
]

#: The announcement confidence: a step's belief must be at least this (``--threshold``).
FOLLOW_THRESHOLD = 0.3
#: Consecutive confident segments before a step is announced (``--patience``).
FOLLOW_PATIENCE_SEGMENTS = 2
#: Fixed-lag smoothing in segments: each belief from the next N segments (``--lag-segments``).
FOLLOW_LAG_SEGMENTS = 1

#: ``(threshold, patience, lag in segments)``: ``follow``'s defaults as one setting.
FOLLOW_ANNOUNCEMENT: tuple[float, int, int] = (
    FOLLOW_THRESHOLD,
    FOLLOW_PATIENCE_SEGMENTS,
    FOLLOW_LAG_SEGMENTS,
)
#: The defaults before the choice on HT-Step, reported beside the chosen ones.
PREVIOUS_ANNOUNCEMENT: tuple[float, int, int] = (0.5, 2, 0)
#: The choice's bound on the median delay (annotated start to the first correct announcement).
MAX_DELAY_S = 10.0
