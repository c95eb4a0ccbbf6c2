"""The rules every OpenAI-compatible client of this package follows: key, errors, retries.

:class:`Connection` wraps an ``openai.OpenAI`` client for the dependency back-end
(:class:`baglm_nb.models.llm_openai.OpenAIBackend`) and the served LMM scorer
(:class:`baglm_nb.models.served.ServedScorer`), both given the server and its retry rules as one
:class:`ConnectionOptions`:

* the API key is read from the environment variable named by ``api_key_env`` only, given to the
  client and never stored elsewhere, logged or put in a message (:meth:`Connection.redact`);
* transient errors (connection errors, timeouts, HTTP 408/409/429 and 5xx) are retried with
  exponential backoff ``backoff * 2**n`` (at most ``max_backoff``) plus jitter; authentication
  and other client errors fail at once (:meth:`Connection.call`);
* a failure is a :class:`ServerError` with one redacted line that names the server;
* a base URL without an http(s) scheme is bad input (:func:`check_base_url`), and a request
  without an answer after :data:`WAIT_NOTICE_S` prints one waiting line.
"""

from __future__ import annotations

import os
import random
import re
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from baglm_nb.inputs.urls import redact_url, redact_urls

__all__ = [
    "WAIT_NOTICE_S",
    "Connection",
    "ConnectionOptions",
    "ModelNotFound",
    "ServerError",
    "check_base_url",
    "read_api_key",
]

#: Seconds without an answer after which a request prints one waiting line on stderr (once per
#: connection), so that a hanging server with the default timeout and attempts is not silent.
WAIT_NOTICE_S = 10.0

T = TypeVar("T")


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def read_api_key(api_key_env: str) -> str:
    """The API key held by the environment variable named ``api_key_env``.

    Raises ``ValueError`` when the name is not a valid variable name (a key pasted in its
    place is never printed) or the variable is unset or empty.
    """
    if not _ENV_NAME.fullmatch(api_key_env or ""):
        raise ValueError(
            "--api-key-env must be the NAME of an environment variable (letters, digits and _), "
            f"not the key itself; the value given ({len(api_key_env or '')} characters) is not "
            "shown. Put the key in a variable, e.g. export MY_KEY=..., and pass --api-key-env "
            "MY_KEY"
        )
    key = os.environ.get(api_key_env)
    if not key:
        # a long name may be a key pasted by mistake: do not echo it
        name = (
            api_key_env
            if len(api_key_env) <= 32
            else f"named by --api-key-env ({len(api_key_env)} characters)"
        )
        raise ValueError(
            f"environment variable {name} is not set or empty: it must hold the "
            "API key (for a local server without a key, set it to any placeholder)"
        )
    return key


def check_base_url(base_url: str | None) -> None:
    """Bad input (``ValueError`` naming the URL) unless ``base_url`` is ``None`` or an http(s)
    URL with a host: ``localhost:8000`` (no scheme) is refused, not read as a failed call."""
    if base_url is None:
        return
    parts = urllib.parse.urlsplit(str(base_url))
    if parts.scheme not in ("http", "https") or not parts.netloc:
        rest = str(base_url).split("://", 1)[-1].rstrip("/")
        example = f"http://{rest}" if rest.endswith("/v1") else f"http://{rest}/v1"
        raise ValueError(
            f"--base-url {redact_url(str(base_url))!r} is not an http(s) URL with a host; write "
            f"it with its scheme, e.g. {redact_url(example)}"
        )


class ServerError(RuntimeError):
    """A request that failed for good (after retries, or at once for a client error).

    ``retryable`` says whether the last error was a transient one (the server went away, ...);
    ``status`` is the HTTP status of the last answer, if any.
    """

    def __init__(self, message: str, retryable: bool = False, status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status


class ModelNotFound(ServerError, ValueError):
    """A chat request answered HTTP 404: the server has no model of that name (bad input)."""


@dataclass(frozen=True)
class ConnectionOptions:
    """Which server, and how it is asked: the fields of a :class:`Connection` (see there).

    Parameters
    ----------
    base_url
        Server URL (``http://127.0.0.1:8000/v1``); ``None`` = the ``openai`` default.
    api_key_env
        Name of the environment variable holding the key.
    timeout
        Seconds per request.
    max_attempts, backoff, max_backoff
        Attempts per request for transient errors, and the backoff between them.
    """

    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 30.0
    max_attempts: int = 3
    backoff: float = 1.0
    max_backoff: float = 20.0

    def connect(self, client: Any = None) -> Connection:
        """A :class:`Connection` with these options (``client``: a stand-in client, tests)."""
        return Connection(
            self.base_url,
            self.api_key_env,
            timeout=self.timeout,
            max_attempts=self.max_attempts,
            backoff=self.backoff,
            max_backoff=self.max_backoff,
            client=client,
        )


class Connection:
    """An OpenAI-compatible client with this package's key, retry and error rules.

    Parameters
    ----------
    base_url
        Server URL (``http://127.0.0.1:8000/v1``); ``None`` = the ``openai`` default.
    api_key_env
        Name of the environment variable holding the key (for a local server without a key, set
        it to any placeholder).
    timeout
        Seconds per request.
    max_attempts
        Attempts per request for transient errors.
    backoff, max_backoff
        Backoff before attempt n+1: ``min(max_backoff, backoff * 2**n)`` seconds, plus up to
        25 % jitter.
    client
        An ``openai.OpenAI``-like client to use instead (tests); the key and the timeout are
        then not read.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        *,
        timeout: float = 30.0,
        max_attempts: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 20.0,
        client: Any = None,
    ) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        check_base_url(base_url)
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.max_attempts = int(max_attempts)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self._told = False
        if client is None:
            import openai

            key = read_api_key(api_key_env)
            client = openai.OpenAI(
                base_url=base_url, api_key=key, timeout=self.timeout, max_retries=0
            )
        self.client = client

    def __repr__(self) -> str:
        url = None if self.base_url is None else redact_url(self.base_url)
        return f"Connection(base_url={url!r}, api_key_env={self.api_key_env!r})"

    @property
    def where(self) -> str:
        """The server, in words."""
        return f"the server at {redact_url(self.base_url or 'the OpenAI default URL')}"

    def redact(self, text: str) -> str:
        """``text`` with the API key (held only by the client) replaced by ``***``, and any
        password in a URL too (:func:`~baglm_nb.inputs.urls.redact_urls`)."""
        key = getattr(self.client, "api_key", None)
        if isinstance(key, str) and key:
            text = text.replace(key, "***")
        return redact_urls(text)

    def model_not_found(self, model: str, exc: ServerError) -> ModelNotFound:
        """The error of a chat request for ``model`` answered HTTP 404 (the chat route exists
        on every server: the model does not), naming the model, the URL and the models that
        ``/v1/models`` lists, when it answers."""
        import json

        try:
            raw = self.call(lambda c: c.models.with_raw_response.list())
            data = json.loads(raw.content).get("data") or []
            names = [str(e["id"]) for e in data if isinstance(e, dict) and "id" in e]
        except (ServerError, ValueError, TypeError, AttributeError, KeyError):
            names = []
        served = f"; it serves {', '.join(repr(n) for n in names[:5])}" if names else ""
        said = str(exc).split(": ", 1)[-1].removeprefix("Error code: 404 - ")
        url = redact_url(self.base_url or "the OpenAI default URL")
        return ModelNotFound(
            f"model {model!r} not found at {url} (HTTP 404: {said}){served}; check the model "
            "name and --base-url",
            False,
            None,
        )

    def describe(self, exc: BaseException) -> tuple[str, bool]:
        """(redacted message, retryable) for an exception from the client."""
        import openai

        where = self.where
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            msg = (
                f"{where} rejected the API key from ${self.api_key_env} "
                f"(HTTP {exc.status_code}); check that variable"
            )
            return msg, False
        if isinstance(exc, openai.APITimeoutError):
            return f"no answer from {where} within {self.timeout:g} s (timeout)", True
        if isinstance(exc, openai.APIConnectionError):
            return self.redact(f"cannot connect to {where} ({type(exc).__name__}: {exc})"), True
        if isinstance(exc, openai.APIStatusError):
            retry = exc.status_code in (408, 409, 429) or exc.status_code >= 500
            return self.redact(f"{where} answered HTTP {exc.status_code}: {exc.message}"), retry
        return self.redact(f"{type(exc).__name__}: {exc}"), False

    def call(self, request: Callable[[Any], T]) -> T:
        """``request(client)`` with retries; :class:`ServerError` (redacted) when it fails."""
        timer = threading.Timer(WAIT_NOTICE_S, self._waiting)
        timer.daemon = True
        timer.start()
        try:
            return self._call(request)
        finally:
            timer.cancel()

    def _waiting(self) -> None:
        """The waiting line (once per connection)."""
        if not self._told:
            self._told = True
            print(
                f"waiting for {self.where}: no answer after {WAIT_NOTICE_S:g} s (up to "
                f"{self.timeout:g} s per request, {self.max_attempts} attempts)",
                file=sys.stderr,
                flush=True,
            )

    def _call(self, request: Callable[[Any], T]) -> T:
        """:meth:`call` without the waiting line."""
        import openai

        last, status = "", None
        for attempt in range(self.max_attempts):
            try:
                return request(self.client)
            except openai.OpenAIError as exc:
                last, retry = self.describe(exc)
                status = getattr(exc, "status_code", None)
                if not retry:
                    raise ServerError(last, False, status) from None
                if attempt + 1 < self.max_attempts:
                    delay = min(self.max_backoff, self.backoff * 2**attempt)
                    time.sleep(delay * (1.0 + 0.25 * random.random()))
        raise ServerError(f"{last} (gave up after {self.max_attempts} attempts)", True, status)
