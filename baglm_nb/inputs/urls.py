"""Credentials in URLs, hidden wherever a URL is shown: :func:`redact_url`, :func:`redact_urls`.

A URL may carry a user and a password (``rtsp://user:secret@camera/stream``,
``http://user:secret@host:8000/v1``). The workbench needs them to connect, and never prints or
writes them: every printer (the ``error:`` line, warnings, the terminal of ``follow``, its event
log and report, a table's ``summary.json``) passes its text through :func:`redact_urls`.
"""

from __future__ import annotations

import re

__all__ = ["HIDDEN", "redact_url", "redact_urls"]

#: What replaces a password (or a user name given alone, which may be a token).
HIDDEN = "***"

# scheme://userinfo@ where userinfo has no '/', whitespace or quote (greedy up to the last '@'
# before the host: an unescaped '@' in a password stays hidden too)
_USERINFO = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/\s'\"<>@]+(?:@[^/\s'\"<>@]+)*)@"
)


def _hide(match: re.Match[str]) -> str:
    user, colon, _ = match["info"].partition(":")
    return f"{match['scheme']}{user}:{HIDDEN}@" if colon else f"{match['scheme']}{HIDDEN}@"


def redact_urls(text: str) -> str:
    """``text`` with the password of every URL in it replaced by :data:`HIDDEN`
    (``http://user:***@host/v1``); a user name given alone may be a token and is hidden too
    (``https://***@host``)."""
    return _USERINFO.sub(_hide, text) if "://" in text else text


def redact_url(url: str) -> str:
    """One URL (or path) as it may be shown: :func:`redact_urls` of it."""
    return redact_urls(str(url))
