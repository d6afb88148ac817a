"""Word timings by forced alignment, for models that give none (Qwen3-TTS): see ``stream.WordAligner``."""

from __future__ import annotations

from tts_app import settings

from tts_app.captions.stream import WordAligner

__all__ = ["WordAligner", "enabled"]


def enabled() -> bool:
    """$TTS_APP_ALIGN_WORDS (default 1): 0 turns alignment off, and such models give no words."""
    return settings.value("TTS_APP_ALIGN_WORDS")
