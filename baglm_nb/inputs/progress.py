"""How the workbench's tqdm progress bars draw: live on a terminal, sparse in a log.

On a terminal a bar redraws in place (tqdm's default). Written to a file or a pipe (``make
data > log``, a CI log) every redraw is one more carriage return on the same line, so there a
bar draws at most once every :data:`LOG_INTERVAL_S` seconds: its start, a line every so often
on a long job, and its end. :func:`bar_options` gives the tqdm keyword arguments of the
stream a bar writes to; every bar of the package takes them. Stdlib only.
"""

from __future__ import annotations

import sys
from typing import IO, Any

__all__ = ["LOG_INTERVAL_S", "bar_options"]

#: Least seconds between two redraws of a bar that does not write to a terminal.
LOG_INTERVAL_S = 10.0


def bar_options(stream: IO[str] | None = None) -> dict[str, Any]:
    """tqdm's keyword arguments for a bar on ``stream`` (default: ``sys.stderr``, tqdm's):
    none on a terminal, ``mininterval`` :data:`LOG_INTERVAL_S` and ``maxinterval`` twice that
    otherwise."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    try:
        terminal = bool(isatty and isatty())
    except ValueError:  # a closed stream
        terminal = False
    if terminal:
        return {}
    return {"mininterval": LOG_INTERVAL_S, "maxinterval": 2 * LOG_INTERVAL_S}
