"""The served ``labels`` strategy: each answer forced with ``logit_bias``, its raw logprob read.

The published quantity is a softmax over the whole vocabulary read at the answer tokens
(reference-protocol §3). A server that reports the logprob of the *generated* token from the raw
logits (before its samplers) gives it exactly for one answer per request: bias that answer's
token by +100 (``logit_bias``) so that it is generated, and read the ``logprob`` of
``choices[0].logprobs.content[0]``. Biasing all the answers at once does not work (the
reported top-n stay the raw distribution's, not the answers'), so a question of n answers is n
requests of the same prompt; the server's prompt cache (llama.cpp's ``cache_prompt``, on by
default; vLLM's prefix caching) makes the n - 1 repeats cost one token of prefill each. Each
response is under 1 KB.

On llama.cpp's server the forced logprob equals the full-vocabulary one when every prompt is
evaluated whole (``cache_prompt`` off; ``tests/test_served.py`` checks the bound); with the
prompt cache, a repeated prompt's last token is computed alone, which moves either strategy's
logprobs slightly (the README gives the measured size). Its ``post_sampling_probs`` would report
the biased distribution (p = 1), which is why the probe (:func:`check_forced`) compares a forced
logprob with the unbiased one.

Exports :data:`BIAS`, :func:`forced_options`, :func:`forced_logprob`, :func:`single_token` and
:func:`check_forced`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from baglm_nb.models.questions import ScoringError
from baglm_nb.models.served_responses import token_bytes

__all__ = ["BIAS", "EXACT_TOL", "check_forced", "forced_logprob", "forced_options", "single_token"]

BIAS = 100
"""``logit_bias`` that forces a token (OpenAI's maximum)."""
EXACT_TOL = 1e-3
"""Largest difference, in logprob, between a forced and an unbiased logprob that the probe
accepts as the same number (llama.cpp: about 1e-5)."""


def forced_options(token_id: int) -> dict[str, Any]:
    """The chat-completion options that force ``token_id`` and report its logprob."""
    return {"logprobs": True, "top_logprobs": 1, "logit_bias": {str(int(token_id)): BIAS}}


def _first_token(response: Any) -> dict:
    """``choices[0].logprobs.content[0]`` of a response; ``ScoringError`` when absent."""
    try:
        first = response["choices"][0]["logprobs"]["content"][0]
    except (KeyError, IndexError, TypeError):
        first = None
    if not isinstance(first, dict):
        raise ScoringError(
            "malformed response: no choices[0].logprobs.content[0] (does the server return "
            "logprobs?)"
        )
    return first


def forced_logprob(response: Any, answer: str) -> Any:
    """The reported logprob of the forced ``answer`` (unchecked: the caller checks the number).

    ``ScoringError`` when the generated token is not ``answer``: the server ignored
    ``logit_bias``, and the logprob is another token's.
    """
    first = _first_token(response)
    got = token_bytes(first)
    if got != answer.encode("utf-8"):
        shown = got.decode("utf-8", errors="replace") if got is not None else first.get("token")
        raise ScoringError(
            f"the server generated {shown!r} instead of the forced answer {answer!r}: it ignores "
            "logit_bias, so the labels strategy cannot read that answer"
        )
    return first.get("logprob")


def single_token(answer: str, ids: Sequence[int]) -> int:
    """The one token id of ``answer``; ``ScoringError`` with the ids when it is several tokens."""
    ids = [int(i) for i in ids]
    if len(ids) != 1:
        raise ScoringError(
            f"answer label {answer!r} is {len(ids)} tokens {ids} on the server, not one: its "
            "probability is not one token's (pass --tokenizer for tokenizer-aware labels)"
        )
    return ids[0]


def check_forced(unbiased: float, forced: Any, token: str) -> str | None:
    """Why a forced logprob is not the raw one (``None`` when it is, within :data:`EXACT_TOL`).

    ``unbiased`` is the raw logprob of ``token`` from an unbiased request of the same prompt;
    ``forced`` what the server reported when ``token`` was forced.
    """
    if isinstance(forced, bool) or not isinstance(forced, (int, float)):
        return f"it reported the logprob {forced!r} for the forced token {token!r}"
    if abs(float(forced) - unbiased) <= EXACT_TOL:
        return None
    post = " (the biased, post-sampling distribution)" if abs(float(forced)) < 1e-3 else ""
    return (
        f"it reported logprob {float(forced):.5g} for the forced token {token!r}{post}, whose "
        f"raw logprob is {unbiased:.5g}: its logprobs are not the raw logits'"
    )
