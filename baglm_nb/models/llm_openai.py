"""The OpenAI-compatible LLM back-end: P("Yes") of prerequisite pairs from a server's logprobs.

:class:`OpenAIBackend` scores (target step, prerequisite candidate) pairs for
:func:`baglm_nb.models.dependencies.dependency_matrix` through the ``openai`` client, against
any OpenAI-compatible chat-completions server (GPT-4.1-mini, vLLM, llama.cpp's server). P("Yes")
comes from the first token's top logprobs with §4.3's fallbacks. A pair that cannot be scored is
a :class:`~baglm_nb.models.dependencies.PairFailure` (an error naming the group and the pair in
the end), never a silent 0.0 (the published code's choice). The API key, retries and error
messages follow :class:`~baglm_nb.models.openai_client.Connection`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from baglm_nb.models.dependencies import PairFailure, pair_messages, pair_prompt_version
from baglm_nb.models.logprobs import probability
from baglm_nb.models.openai_client import ConnectionOptions, ModelNotFound, ServerError

__all__ = ["CONNECTION", "NO_WORDS", "YES_WORDS", "OpenAIBackend"]

CONNECTION = ConnectionOptions()
"""The default connection: the OpenAI API, 30 s per request, 3 attempts."""

YES_WORDS = ("Yes", "yes")
"""First tokens read as "Yes" (§4.3)."""
NO_WORDS = ("No", "no")
"""First tokens read as "No" (§4.3)."""


class OpenAIBackend:
    """P("Yes") from an OpenAI-compatible chat-completions server's first-token logprobs.

    Each pair is one request with ``logprobs=True, top_logprobs=top_logprobs,
    max_tokens=max_tokens, temperature=temperature``. The first output token's top logprobs
    are scanned in rank order (§4.3): the first entry equal to "Yes"/"yes" gives
    ``exp(logprob)``, the first equal to "No"/"no" gives ``1 - exp(logprob)``. If neither is
    among them, the pair **fails** (the published code returned 0.0).

    Parameters
    ----------
    model
        Model name sent to the server (also the cache key's model).
    connection
        The server (``base_url``; ``None`` = the ``openai`` default), the NAME of the
        environment variable holding its key (``api_key_env``: read once, given to the client
        and never stored, logged or put in an error message; messages are redacted), the
        seconds per request and the retry rules
        (:class:`~baglm_nb.models.openai_client.ConnectionOptions`; default
        :data:`CONNECTION`). Authentication and other client errors fail at once.
    top_logprobs
        How many alternatives to ask for (published: 2).
    system_prompt
        Send the §4.1 system message. Default ``False`` reproduces the published GPT code,
        which silently dropped it (only the user message is sent); ``True`` sends it as the
        local back-end does. Part of the cache key (``prompt_version``).
    temperature, max_tokens
        Sent with every request. The published call used the API defaults; logprobs do not
        depend on the temperature, and ``temperature=0, max_tokens=1`` keeps requests cheap
        and deterministic.
    concurrency
        Requests in flight at once within a batch.
    chunk_size
        Pairs per :meth:`score` call (a checkpoint of the partial group file).
    client
        An ``openai.OpenAI``-like client to use instead (tests); the connection's URL, key and
        timeout are then ignored.
    """

    def __init__(
        self,
        model: str,
        *,
        connection: ConnectionOptions = CONNECTION,
        top_logprobs: int = 2,
        system_prompt: bool = False,
        temperature: float | None = 0.0,
        max_tokens: int | None = 1,
        concurrency: int = 1,
        chunk_size: int = 8,
        client: Any = None,
    ) -> None:
        if concurrency < 1 or chunk_size < 1 or top_logprobs < 1:
            raise ValueError("concurrency, chunk_size and top_logprobs must be >= 1")
        self.model = model
        self.name = model
        self.base_url = connection.base_url
        self.api_key_env = connection.api_key_env
        self.top_logprobs = int(top_logprobs)
        self.system_prompt = bool(system_prompt)
        self.prompt_version = pair_prompt_version(self.system_prompt)
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.concurrency = int(concurrency)
        self.chunk_size = int(chunk_size)
        self._conn = connection.connect(client)
        self._client = self._conn.client

    def __repr__(self) -> str:
        return (
            f"OpenAIBackend(model={self.model!r}, base_url={self.base_url!r}, "
            f"api_key_env={self.api_key_env!r}, system_prompt={self.system_prompt})"
        )

    def _redact(self, text: str) -> str:
        """``text`` with the API key (held only by the client) replaced by ``***``."""
        return self._conn.redact(text)

    def _request(self, goal: str, target: str, prereq: str) -> Any:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": pair_messages(goal, target, prereq, self.system_prompt),
            "logprobs": True,
            "top_logprobs": self.top_logprobs,
        }
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        return self._client.chat.completions.create(**kwargs)

    def _one(self, goal: str, target: str, prereq: str) -> float:
        """P(Yes) of one pair with retries; raises ``RuntimeError`` with a redacted reason."""
        try:
            response = self._conn.call(lambda _: self._request(goal, target, prereq))
        except ServerError as exc:
            if exc.status == 404:  # the chat route exists on every server: the model does not
                raise self._conn.model_not_found(self.model, exc) from None
            raise
        except ValueError as exc:  # a body that is not JSON (truncated, garbage)
            raise RuntimeError(
                self._redact(
                    f"{self._conn.where} answered with a malformed body "
                    f"({type(exc).__name__}: {exc})"
                )
            ) from None
        return self._yes_probability(response)

    def _yes_probability(self, response: Any) -> float:
        try:
            first = response.choices[0].logprobs.content[0]
            top = list(first.top_logprobs or [])
        except (AttributeError, IndexError, TypeError):
            raise RuntimeError(
                "the response has no logprobs for the first token (does the server support "
                "logprobs/top_logprobs?)"
            ) from None
        for entry in top:
            if entry.token in YES_WORDS:
                return probability(entry.logprob, what=f"the logprob of {entry.token!r}")
            if entry.token in NO_WORDS:
                return 1.0 - probability(entry.logprob, what=f"the logprob of {entry.token!r}")
        seen = [entry.token for entry in top]
        raise RuntimeError(
            f"neither Yes/yes nor No/no among the top {len(top)} first tokens {seen!r}"
        )

    def score(self, goal: str, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """P("Yes") per pair; a :class:`~baglm_nb.models.dependencies.PairFailure` (with the
        finished pairs) on a failure."""
        out = np.empty(len(pairs))
        if self.concurrency == 1:
            for n, (a, b) in enumerate(pairs):
                try:
                    out[n] = self._one(goal, a, b)
                except ModelNotFound:  # bad input, the same for every pair: stop the run
                    raise
                except RuntimeError as exc:
                    raise PairFailure(n, str(exc), dict(enumerate(out[:n].tolist()))) from None
            return out
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(self.concurrency) as pool:
            futures = [pool.submit(self._one, goal, a, b) for a, b in pairs]
        done: dict[int, float] = {}
        failed: tuple[int, str] | None = None
        for n, f in enumerate(futures):
            exc = f.exception()
            if isinstance(exc, ModelNotFound):
                raise exc
            if exc is None:
                done[n] = out[n] = f.result()
            elif failed is None:
                failed = (n, str(exc))
        if failed is not None:
            raise PairFailure(failed[0], failed[1], done)
        return out
