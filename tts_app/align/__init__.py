"""Word timings by forced alignment, for models that give none (Qwen3-TTS): see ``stream.WordAligner``."""

from __future__ import annotations

import os

from .stream import WordAligner

__all__ = ["WordAligner", "enabled"]


def enabled() -> bool:
    """$TTS_APP_ALIGN_WORDS (default 1): 0 turns alignment off, and such models give no words."""
    return os.environ.get("TTS_APP_ALIGN_WORDS", "1").strip().lower() not in ("0", "false", "no", "off")
