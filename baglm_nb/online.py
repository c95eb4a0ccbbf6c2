"""Stable import path: :mod:`baglm_nb.apps.online` (online grounding)."""

from baglm_nb.apps.online import OnlineGrounder

__all__ = ["OnlineGrounder"]
