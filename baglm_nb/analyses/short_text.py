"""Text cut to a width: :func:`short_label`, the one rule for a shortened step text (the belief
views' axis labels) and a shortened terminal line (``follow``'s). Standard library only, so
that ``follow``'s terminal imports it without matplotlib.
"""

from __future__ import annotations

__all__ = ["short_label"]


def short_label(text: str, width: int) -> str:
    """``text`` cut at a word boundary to at most ``width`` characters, with an ellipsis."""
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    if " " in cut[width // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,.;:") + "\u2026"
