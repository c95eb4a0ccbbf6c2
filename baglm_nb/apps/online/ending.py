"""How a followed run stops: why the source ended, and Ctrl-C / SIGTERM.

:class:`EndReason` is what :func:`~baglm_nb.apps.online.follow.follow` and
:func:`~baglm_nb.apps.online.live.follow_live` report when a source ends or breaks;
:func:`ctrl_c_sets` turns Ctrl-C and SIGTERM into a flag that the follow loops check with
:func:`raise_if_stopped` at every segment and poll; the run then ends with :class:`Interrupted`.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["EndReason", "Interrupted", "ctrl_c_sets", "raise_if_stopped"]


class EndReason(str):
    """Why a followed source stopped: a message, and ``failed`` when the source broke."""

    failed: bool

    def __new__(cls, text: str, failed: bool = False) -> EndReason:
        obj = super().__new__(cls, text)
        obj.failed = failed
        return obj


class Interrupted(KeyboardInterrupt):
    """A run stopped by a signal (Ctrl-C: SIGINT, or SIGTERM), raised once its event log and
    report are written and its end was printed. ``signum`` says which signal;
    :func:`baglm_nb.apps.cli.main.main` alone turns it into an exit status."""

    def __init__(self, signum: int) -> None:
        self.signum = int(signum)
        super().__init__(signal.Signals(self.signum).name)


def raise_if_stopped(stop: threading.Event | None) -> None:
    """``KeyboardInterrupt`` once ``stop`` is set: a Ctrl-C handler's flag, checked by the
    follow loops at every segment and poll, so that an interrupt Python dropped (one raised
    inside a finaliser or a C callback is only printed) still stops the run."""
    if stop is not None and stop.is_set():
        raise KeyboardInterrupt


@contextmanager
def ctrl_c_sets(pressed: threading.Event) -> Iterator[None]:
    """While following: Ctrl-C (SIGINT) and SIGTERM raise ``KeyboardInterrupt`` and set
    ``pressed`` (its ``signum`` says which), which the follow loops check at every segment and
    poll, so both end the run with the event log and the report written. Python drops an
    interrupt raised inside a finaliser or a C callback (it only prints it); the flag stays.
    Outside the main thread (no signal handlers there) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_signal(signum, frame):
        pressed.signum = signum
        pressed.set()
        raise KeyboardInterrupt

    previous = {n: signal.signal(n, on_signal) for n in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for n, handler in previous.items():
            signal.signal(n, handler)
