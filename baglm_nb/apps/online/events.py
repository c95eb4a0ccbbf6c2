"""What a followed run leaves besides the report: the JSONL event log, and latency summaries."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from baglm_nb.inputs.urls import redact_urls

__all__ = ["EventLog", "median_p99"]


class EventLog:
    """A JSONL event log: one line per segment, flushed at once, so it stays complete."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def write(self, event: dict[str, Any]) -> None:
        """Append one event and flush it to disk."""
        self._file.write(redact_urls(json.dumps(event)) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        """Close the file."""
        if not self._file.closed:
            self._file.close()

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def median_p99(values: Sequence[float]) -> tuple[float, float]:
    """Median and 99th percentile of ``values`` (NaN when empty)."""
    if not len(values):
        return math.nan, math.nan
    arr = np.asarray(values, dtype=np.float64)
    return float(np.median(arr)), float(np.percentile(arr, 99))
