"""Data files shipped inside the package: the built-in reference voices (voices/, attribution in voices/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

ASSETS_DIR = Path(__file__).resolve().parent
BUILTIN_VOICES_DIR = ASSETS_DIR / "voices"
