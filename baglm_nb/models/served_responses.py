"""Reading a served model's answers: log-probabilities out of chat-completion responses.

The one place where a response's ``top_logprobs`` (:func:`answer_probs`) or vLLM's
``prompt_logprobs`` of a prefilled answer (:func:`prompt_logprob`) become numbers; every value
goes through :func:`baglm_nb.models.logprobs.checked_logprob` (finite, <= 0) and must be above
:data:`FLOOR_LOGPROB` (a server's "not computed" floor), and a missing or malformed field is a
:class:`~baglm_nb.models.questions.ScoringError`, never a 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from baglm_nb.models.logprobs import InvalidLogprob, checked_logprob
from baglm_nb.models.questions import ScoringError

__all__ = ["FLOOR_LOGPROB", "answer_probs", "prompt_logprob", "token_bytes"]

FLOOR_LOGPROB = -1000.0
"""A served logprob below this is a floor value standing for "not computed" (such as -9999),
never a log-softmax (``exp`` of it is 0.0 in float64 below about -745): refused."""


def _check_logprob(value: Any, answer: str, *, floor: bool = True) -> float:
    """A logprob as a float; ``ScoringError`` when it is not a finite number <= 0
    (:func:`baglm_nb.models.logprobs.checked_logprob`, the one rule), or (with ``floor``) when
    it is below :data:`FLOOR_LOGPROB`."""
    try:
        logprob = checked_logprob(value, what=f"the server's logprob of answer {answer!r}")
    except InvalidLogprob as exc:
        raise ScoringError(str(exc)) from None
    if floor and logprob < FLOOR_LOGPROB:
        raise ScoringError(
            f"the server's logprob of answer {answer!r} is {logprob:g}, below {FLOOR_LOGPROB:g}: "
            "a floor value, not a log-softmax; it is never read as 0"
        )
    return logprob


def _top_logprobs(response: dict) -> list[dict]:
    """The first generated token's ``top_logprobs`` list; ``ScoringError`` when absent."""
    try:
        top = response["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    except (KeyError, IndexError, TypeError):
        top = None
    if not isinstance(top, list) or not top:
        raise ScoringError(
            "malformed response: no choices[0].logprobs.content[0].top_logprobs (does the "
            "server return logprobs?)"
        )
    return top


def token_bytes(entry: Any) -> bytes | None:
    """The exact bytes of a ``top_logprobs`` entry's token (``bytes``, else ``token``)."""
    if not isinstance(entry, dict):
        return None
    raw = entry.get("bytes")
    if isinstance(raw, list):
        try:
            return bytes(raw)
        except (TypeError, ValueError):
            return None
    token = entry.get("token")
    return token.encode("utf-8") if isinstance(token, str) else None


def answer_probs(response: dict, answers: Sequence[str], *, approx: bool = False) -> np.ndarray:
    """P(answer) for each answer from a chat response's first-token ``top_logprobs``.

    An answer matches the entry whose token bytes equal the answer's UTF-8 bytes (exactly one).
    Without ``approx`` a missing answer raises :class:`ScoringError`; with it, a missing answer
    gets ``min(smallest listed p, leftover mass / number missing)``.
    """
    top = _top_logprobs(response)
    wanted = {a.encode("utf-8"): a for a in answers}
    found: dict[str, float] = {}
    listed: list[float] = []
    for entry in top:
        key = token_bytes(entry)
        if key is None:
            raise ScoringError(f"malformed top_logprobs entry {str(entry)[:80]!r}")
        if approx:
            listed.append(
                math.exp(_check_logprob(entry.get("logprob"), key.decode(errors="replace")))
            )
        if key in wanted:
            a = wanted[key]
            if a in found:
                raise ScoringError(f"answer {a!r} matches two entries of the server's logprobs")
            found[a] = math.exp(_check_logprob(entry.get("logprob"), a))
    missing = [a for a in answers if a not in found]
    if missing and not approx:
        raise ScoringError(
            f"answer {missing[0]!r} is not among the {len(top)} logprobs the server returned "
            f"(missing: {missing}); it is never read as 0"
        )
    if missing:
        leftover = max(0.0, 1.0 - sum(listed)) / len(missing)
        fill = min(min(listed), leftover)
        found.update(dict.fromkeys(missing, fill))
    return np.array([found[a] for a in answers], dtype=np.float64)


def prompt_logprob(response: dict, answer: str) -> float:
    """The logprob of the prefilled ``answer``: the last ``prompt_logprobs`` position (vLLM)."""
    plp = response.get("prompt_logprobs") if isinstance(response, dict) else None
    last = plp[-1] if isinstance(plp, list) and plp else None
    if not isinstance(last, dict) or not last:
        raise ScoringError("malformed response: no prompt_logprobs for the last prompt token")
    entries = [e for e in last.values() if isinstance(e, dict)]
    hits = [e for e in entries if e.get("decoded_token") == answer]
    if len(hits) != 1:
        seen = [e.get("decoded_token") for e in entries]
        raise ScoringError(
            f"the last prompt token is not the prefilled answer {answer!r} alone (got {seen!r});"
            " the chat template merged it with the text before it: use --strategy full-vocab"
        )
    return _check_logprob(hits[0].get("logprob"), answer)
