"""What a served model's logprobs must satisfy, and its canary: a fingerprint by behaviour.

**The probe's checks.** Before a served model scores anything, :class:`~baglm_nb.models.served.
ServedScorer` asks the server for the unbiased top logprobs of a text prompt and of an image
prompt (:data:`PROBE_QUESTION`, :func:`canary_image`) and, for the ``labels`` strategy, forces
a high-ranked token and several low-ranked ones (:data:`LOW_TOKENS`). A server whose numbers are
not a log-softmax is refused, whatever the strategy:

* :func:`listed_refusal`: a listed logprob below :data:`FLOOR_LOGPROB` (a floor such as −9999
  stands for "not computed", and ``exp`` of it is 0.0), or listed probabilities that sum above
  1 (:data:`SUM_TOL`);
* :func:`lows_refusal`: forced low-ranked tokens at a floor, all at one constant value, above
  the last listed logprob (a token outside the top ``k`` cannot be likelier than the ``k``-th),
  or with the listed ones summing above 1.

**The canary.** Weights behind a server cannot be hashed from the client, and a server can
swap them under the same name and the same ``/v1/models`` description (a GGUF replaced at the
same path, another GGUF under the same alias). The canary is what the model answers to a fixed
request: the log-probabilities of :data:`CANARY_ANSWERS` after :data:`PROBE_QUESTION`, as text
and with one tiny image, read with the run's strategy. The score driver stores it beside the
scores (``weights.json``) and re-asks it on every resume: :func:`canary_refusal` says when the
two differ by more than :data:`CANARY_TOL`, naming both.

Both refusals are a :class:`ServerRefused`. Exports :data:`PROBE_QUESTION`, :data:`PROBE_TOP`,
:data:`LOW_TOKENS`, :data:`FLOOR_LOGPROB`, :data:`SUM_TOL`, :data:`CANARY_ANSWERS`,
:data:`CANARY_TOL`, :func:`canary_image`,
:func:`listed_refusal`, :func:`lows_refusal` and :func:`canary_refusal`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from baglm_nb.models.openai_client import ServerError
from baglm_nb.models.served_responses import FLOOR_LOGPROB

__all__ = [
    "CANARY_ANSWERS",
    "CANARY_TOL",
    "FLOOR_LOGPROB",
    "LOW_TOKENS",
    "PROBE_QUESTION",
    "PROBE_TOP",
    "SUM_TOL",
    "ServerRefused",
    "canary_image",
    "canary_refusal",
    "listed_refusal",
    "lows_refusal",
]

PROBE_QUESTION = "Answer with the letter A.\n"
"""The probe's and the canary's question (with and without :func:`canary_image`)."""
PROBE_TOP = 20
"""Top logprobs asked of an unbiased probe request (the OpenAI API's cap)."""
LOW_TOKENS = ("9", "7", "Z", "Q")
"""Answer tokens forced by the ``labels`` probe as low-ranked ones (those not in the top list)."""
SUM_TOL = 0.01
"""How far above 1 listed probabilities may sum (rounding of bf16 servers) before refusal."""
CANARY_ANSWERS = ("A", "B", "0", "9")
"""The canary's answers: two option letters and two digits, as the scores read them."""
CANARY_TOL = 0.1
"""Largest difference, in log-probability, between a stored and a new canary that is still the
same model (llama.cpp's prompt cache alone moves a logprob by up to about 0.02; other weights
move them by whole units)."""
CANARY_SIDE = 56
"""Side of the canary image in pixels (two 28-pixel patches)."""


class ServerRefused(ServerError):
    """A server that answers, but whose answers are refused: its logprobs fail the probe, or it
    serves another model than the one a cache was scored with (running again does not help)."""


def canary_image() -> np.ndarray:
    """The canary's image: ``(3, 56, 56)`` uint8, a fixed colour pattern (no randomness)."""
    rows, cols = np.indices((CANARY_SIDE, CANARY_SIDE))
    return np.stack([rows * 4 % 256, cols * 4 % 256, (rows + cols) * 2 % 256]).astype(np.uint8)


def _tokens(entries: Sequence[tuple[str, float]]) -> str:
    return ", ".join(f"{t!r}: {v:.5g}" for t, v in entries[:6])


def listed_refusal(listed: Sequence[tuple[str, float]], what: str) -> str | None:
    """Why an unbiased response's top logprobs ``(token, logprob)`` are no log-softmax
    (``None`` when nothing is wrong); ``what`` names the prompt."""
    floor = [(t, v) for t, v in listed if v < FLOOR_LOGPROB]
    if floor:
        return (
            f"on {what} it listed {len(floor)} logprob(s) below {FLOOR_LOGPROB:g} "
            f"({_tokens(floor)}): a floor value, not a log-softmax"
        )
    total = math.fsum(math.exp(v) for _, v in listed)
    if total > 1 + SUM_TOL:
        return (
            f"on {what} its top {len(listed)} probabilities sum to {total:.4g} > 1 "
            f"({_tokens(listed)}): not a distribution"
        )
    return None


def lows_refusal(
    lows: Sequence[tuple[str, float]],
    listed: Sequence[tuple[str, float]],
    complete: bool,
    what: str,
) -> str | None:
    """Why the forced logprobs of low-ranked tokens ``lows`` (tokens not in ``listed``, the
    unbiased top list; ``complete`` when it had every entry asked for) are no log-softmax."""
    if not lows:
        return None
    floor = [(t, v) for t, v in lows if v < FLOOR_LOGPROB]
    if floor:
        return (
            f"on {what} it reported {_tokens(floor)} for low-ranked forced token(s): a floor "
            "value, not a log-softmax (their probabilities would be read as 0)"
        )
    if len(lows) >= len(LOW_TOKENS) and len({v for _, v in lows}) == 1:
        return (
            f"on {what} it reported one constant logprob {lows[0][1]:.5g} for the low-ranked "
            f"forced tokens {[t for t, _ in lows]}: a floor, not a log-softmax"
        )
    if complete and listed:
        last = min(v for _, v in listed)
        above = [(t, v) for t, v in lows if v > last + 1e-3]
        if above:
            return (
                f"on {what} it reported {_tokens(above)} for token(s) outside its top "
                f"{len(listed)}, whose last logprob is {last:.5g}: not a distribution"
            )
    total = math.fsum(math.exp(v) for _, v in [*listed, *lows])
    if total > 1 + SUM_TOL:
        return (
            f"on {what} its listed and forced probabilities sum to {total:.4g} > 1: not a "
            "distribution"
        )
    return None


def canary_refusal(
    stored: Mapping[str, Any], now: Mapping[str, Any], tol: float = CANARY_TOL
) -> str | None:
    """Why the canary ``now`` is not the one ``stored`` (``None``: the same model within
    ``tol``), naming both; ``""`` when the two were asked differently and cannot be compared."""
    same_request = all(stored.get(k) == now.get(k) for k in ("question", "answers", "strategy"))
    if not same_request:
        return ""
    worst, shown = 0.0, []
    for prompt in ("text", "image"):
        a, b = stored.get("logprobs", {}).get(prompt), now.get("logprobs", {}).get(prompt)
        if not isinstance(a, list) or not isinstance(b, list) or len(a) != len(b):
            return ""
        diff = max((abs(float(x) - float(y)) for x, y in zip(a, b, strict=True)), default=0.0)
        worst = max(worst, diff)
        shown.append(f"{prompt} {_values(a)} then, {_values(b)} now")
    if worst <= tol:
        return None
    return (
        f"its canary answers differ by {worst:.3g} in log-probability (more than {tol:g}) from "
        f"the ones stored with the scores ({'; '.join(shown)}; answers "
        f"{list(now.get('answers', []))})"
    )


def _values(values: Sequence[float]) -> str:
    return "[" + ", ".join(f"{float(v):.3f}" for v in values) + "]"
