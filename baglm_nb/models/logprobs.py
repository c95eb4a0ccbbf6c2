"""Log-probabilities from a model or a server, turned into probabilities under one rule.

A log-probability must be finite and at most 0 (beyond float rounding, ``tol``); anything
else (NaN, ``inf``, a positive value from a broken server) is an error naming what it
belongs to, never a probability of 1.0. Every place that reads logprobs or logits goes
through :func:`checked_logprob` / :func:`probability` or :func:`check_logits`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["LOGPROB_TOL", "InvalidLogprob", "check_logits", "checked_logprob", "probability"]

#: How far above 0 a log-probability may be from float rounding.
LOGPROB_TOL = 1e-6


class InvalidLogprob(RuntimeError):
    """A model or server returned a log-probability or logit that is not one (a failed run)."""


def checked_logprob(logprob: Any, *, what: str, tol: float = LOGPROB_TOL) -> float:
    """``logprob`` as a float when it is a valid log-probability; :class:`InvalidLogprob`
    naming ``what`` and the raw value otherwise.

    Parameters
    ----------
    logprob : float
        The log-probability, as a number (a string, a bool or None is an error too).
    what : str
        What it is the log-probability of, for the message (e.g. "the logprob of 'Yes'").
    tol : float, default LOGPROB_TOL
        Values in ``(0, tol]`` are float rounding and count as 0.
    """
    if isinstance(logprob, bool):
        raise InvalidLogprob(f"{what}: the log-probability {logprob!r} is not a number")
    try:
        value = float(logprob)
    except (TypeError, ValueError):
        raise InvalidLogprob(f"{what}: the log-probability {logprob!r} is not a number") from None
    if not math.isfinite(value) or value > tol:
        raise InvalidLogprob(f"{what}: invalid log-probability {value!r} (must be finite and <= 0)")
    return min(value, 0.0)


def probability(logprob: Any, *, what: str, tol: float = LOGPROB_TOL) -> float:
    """``exp(logprob)`` of a valid log-probability (:func:`checked_logprob`)."""
    return math.exp(checked_logprob(logprob, what=what, tol=tol))


def check_logits(logits: Any, *, what: str) -> None:
    """Raise :class:`InvalidLogprob` naming ``what`` when ``logits`` hold NaN or ``+inf``.

    ``logits`` is a numpy array or a torch tensor (checked on its device, one sync). ``-inf``
    is allowed (a masked token has probability 0); NaN and ``+inf`` are not.
    """
    if hasattr(logits, "isnan") and hasattr(logits, "detach"):  # a torch tensor
        import torch

        flags = torch.isnan(logits) | torch.isposinf(logits)
        if not bool(flags.any()):
            return
        bad = flags.detach().cpu().numpy()
    else:
        values = np.asarray(logits)
        bad = np.isnan(values) | np.isposinf(values)
        if not bad.any():
            return
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    raise InvalidLogprob(
        f"{what}: the model returned {int(bad.sum())} NaN or +inf logits "
        f"(first at index {where}); its weights or inputs are broken"
    )
