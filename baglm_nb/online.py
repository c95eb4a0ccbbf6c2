"""Stable import path: :mod:`baglm_nb.core.online` (online grounding)."""

from baglm_nb.core.online import OnlineGrounder

__all__ = ["OnlineGrounder"]
