"""The probe and the canary of a served scorer: the requests that check a server's logprobs.

:func:`check_logprobs` asks the unbiased top logprobs of the probe's text and image prompts
(:func:`probe_prompts`) and refuses numbers that are no log-softmax
(:func:`~baglm_nb.models.served_checks.listed_refusal`), whatever the strategy;
:func:`labels_refusal` says why the ``labels`` strategy is not exact on a server (a forced
high-ranked token must come back with its unbiased logprob) and refuses forced low-ranked
tokens at a floor (:func:`~baglm_nb.models.served_checks.lows_refusal`); :func:`canary` is the
model's answers to the fixed canary request, stored beside the scores. Each takes a
:class:`~baglm_nb.models.served.ServedScorer` (its requests, token ids and messages).

A refusal is a :class:`~baglm_nb.models.served_checks.ServerRefused`;
:func:`refused_or_raise` is the rule for a request the server refused while probing, and
:class:`MalformedResponse` an answer that is no chat completion.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from baglm_nb.models.openai_client import ServerError
from baglm_nb.models.questions import Question, ScoringError
from baglm_nb.models.served_checks import (
    CANARY_ANSWERS,
    LOW_TOKENS,
    PROBE_QUESTION,
    PROBE_TOP,
    ServerRefused,
    canary_image,
    listed_refusal,
    lows_refusal,
)
from baglm_nb.models.served_labels import check_forced, forced_logprob, forced_options, single_token
from baglm_nb.models.served_messages import encode_png, served_frames
from baglm_nb.models.served_responses import _check_logprob, _top_logprobs, token_bytes

__all__ = [
    "MalformedResponse",
    "ProbedScorer",
    "canary",
    "check_logprobs",
    "forced_value",
    "labels_refusal",
    "probe_images",
    "probe_prompts",
    "refused_or_raise",
    "unbiased_top",
    "untrustworthy",
    "whole",
]


class ProbedScorer(Protocol):
    """What the probe uses of a served scorer (:class:`~baglm_nb.models.served.ServedScorer`)."""

    family: str
    pixels: tuple[int, int] | None
    _listed_memo: dict[str, tuple[list[dict], list[tuple[str, float]]]]
    _conn: Any

    @property
    def strategy(self) -> str: ...

    def messages(self, question: str, images: Sequence[str] = ()) -> list[dict]: ...

    def _post(self, messages: list[dict], **options: Any) -> dict: ...

    def token_id(self, answer: str) -> int: ...

    def question_probs(self, question: Question, images: Sequence[str] = ()) -> np.ndarray: ...


def probe_images(scorer: ProbedScorer) -> dict[str, list[str]]:
    """The images of the probe's and the canary's two prompts: none, and the canary image
    (at the family's processor size, as frames are sent)."""
    image = served_frames(scorer.family, canary_image()[None, None], scorer.pixels)[0, 0]
    return {"text": [], "image": [encode_png(image)]}


def probe_prompts(scorer: ProbedScorer) -> list[tuple[str, list[dict]]]:
    """The probe's two prompts: ``(what, messages)``, text then image."""
    return [
        (f"the {kind} prompt", scorer.messages(PROBE_QUESTION, images))
        for kind, images in probe_images(scorer).items()
    ]


def unbiased_top(
    scorer: ProbedScorer, what: str, msgs: list[dict]
) -> tuple[list[dict], list[tuple[str, float]]]:
    """The unbiased top :data:`PROBE_TOP` of a probe prompt, best first (the entries and
    their ``(token, logprob)``, asked once); :class:`ServerError` when they are no
    log-softmax."""
    if what in scorer._listed_memo:
        return scorer._listed_memo[what]
    top = _top_logprobs(scorer._post(msgs, logprobs=True, top_logprobs=PROBE_TOP))
    entries = [e for e in top if isinstance(e, dict) and isinstance(e.get("token"), str)]
    values = [_check_logprob(e.get("logprob"), e["token"], floor=False) for e in entries]
    order = sorted(range(len(entries)), key=lambda i: -values[i])
    entries = [entries[i] for i in order]
    listed = [(entries[i]["token"], values[order[i]]) for i in range(len(entries))]
    untrustworthy(scorer, listed_refusal(listed, what))
    scorer._listed_memo[what] = entries, listed
    return entries, listed


def untrustworthy(scorer: ProbedScorer, why: str | None) -> None:
    """:class:`ServerError` (nothing is scored) when the probe found the logprobs false."""
    if why:
        raise ServerRefused(
            f"{scorer._conn.where} fails the logprob probe: {why}; its probabilities cannot "
            "be trusted, so nothing is scored"
        )


def check_logprobs(scorer: ProbedScorer) -> None:
    """The probe's checks of the unbiased logprobs on both prompts (any strategy)."""
    for what, msgs in probe_prompts(scorer):
        try:
            unbiased_top(scorer, what, msgs)
        except (ServerError, ScoringError) as exc:
            refused_or_raise(exc, scorer._conn.where)


def forced_value(scorer: ProbedScorer, msgs: list[dict], token: str, tid: Any = None) -> Any:
    """The logprob the server reports for ``token`` forced on ``msgs`` (unchecked)."""
    if not isinstance(tid, int):
        tid = single_token(token, [scorer.token_id(token)])
    return forced_logprob(scorer._post(msgs, **forced_options(tid)), token)


def labels_refusal(scorer: ProbedScorer) -> str | None:
    """Why ``labels`` is not exact on this server (``None`` when it is), on a text and an
    image prompt: the runner-up token of an unbiased request, forced, must come back with
    the same logprob; low-ranked tokens (:data:`LOW_TOKENS` outside the top list), forced,
    must not be a floor or break the distribution (:class:`ServerRefused` then: the server's
    numbers are false, whatever the strategy)."""
    for what, msgs in probe_prompts(scorer):
        try:
            entries, listed = unbiased_top(scorer, what, msgs)
            if len(listed) < 2:
                n = len(listed)
                return f"it returned {n} top logprob(s) where {PROBE_TOP} were asked for"
            high = next((i for i in range(1, len(entries)) if whole(entries[i])), None)
            if high is None:
                return f"on {what} it listed no whole UTF-8 token below its top one to force"
            token, unbiased = listed[high]
            forced = forced_value(scorer, msgs, token, entries[high].get("id"))
            why = check_forced(unbiased, forced, token)
            if why:
                return f"{why} (on {what})"
            shown = {t for t, _ in listed}
            lows = [
                (low, _check_logprob(forced_value(scorer, msgs, low), low, floor=False))
                for low in LOW_TOKENS
                if low not in shown
            ]
            complete = len(listed) == PROBE_TOP
            untrustworthy(scorer, lows_refusal(lows, listed, complete, what))
        except (ServerError, ScoringError) as exc:
            refused_or_raise(exc, scorer._conn.where)
            return str(exc)
    return None


# -- the canary ---------------------------------------------------------------------


def canary(scorer: ProbedScorer) -> dict[str, Any]:
    """The model's answers to the fixed canary request (:mod:`baglm_nb.models.served_checks`):
    the logprobs of :data:`CANARY_ANSWERS` after the probe question, as text and with the
    canary image, read with the strategy in use."""
    question = Question("vsg", PROBE_QUESTION, CANARY_ANSWERS)
    logprobs = {
        kind: [round(math.log(p), 6) for p in scorer.question_probs(question, images)]
        for kind, images in probe_images(scorer).items()
    }
    return {
        "question": PROBE_QUESTION,
        "answers": list(CANARY_ANSWERS),
        "strategy": scorer.strategy,
        "logprobs": logprobs,
    }


class MalformedResponse(ScoringError):
    """An answer that is no chat completion at all (not JSON, or not a JSON object)."""


def whole(entry: dict) -> bool:
    """Whether a listed token is whole UTF-8 text (a server sends no logprobs for a token that
    is part of a character, so the probe forces only whole ones)."""
    raw = token_bytes(entry)
    try:
        return bool(raw) and bool(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return False


def refused_or_raise(exc: Exception, where: str) -> None:
    """Go on probing when the server refused a request (HTTP 400/404/422) or answered without
    the field asked for; raise anything else (server down, wrong key, an answer that is no
    chat completion: a :class:`ServerError` naming the server ``where``)."""
    if isinstance(exc, ServerError) and exc.status not in (400, 404, 422):
        raise exc
    if isinstance(exc, MalformedResponse):
        raise ServerError(
            f"{where} answered the probe with a {exc.message}; is it an "
            "OpenAI-compatible server (check --base-url)?"
        ) from None
