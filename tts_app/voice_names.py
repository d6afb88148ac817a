"""Names of the voices a request may ask for: the built-in clips in assets/voices, plus saved ones."""

from __future__ import annotations

import logging
from pathlib import Path

logger = logging.getLogger(__name__)

VOICES_DIR = Path(__file__).resolve().parent.parent / "assets" / "voices"
AUDIO_SUFFIXES = (".wav", ".flac", ".mp3", ".ogg")
DEFAULT_VOICE = "default"  # the model's own voice, no reference clip


def builtin_voices() -> dict[str, Path]:
    """Built-in voice name (file stem) to clip path, sorted by name."""
    if not VOICES_DIR.is_dir():
        return {}
    clips = [p for p in VOICES_DIR.iterdir() if p.suffix.lower() in AUDIO_SUFFIXES and p.is_file()]
    return {p.stem: p for p in sorted(clips, key=lambda p: p.stem)}


def builtin_voice_path(name: str) -> Path:
    """The clip of a built-in voice; ValueError with a one-line message for an unknown name."""
    voices = builtin_voices()
    if name not in voices:
        raise ValueError(f"unknown built-in voice {name!r}; choose one of: {', '.join(voices)}")
    return voices[name]


def voice_names() -> list[str]:
    """Every name ``Engine.submit(voice=...)`` accepts: built-in voices first, then saved ones."""
    names = list(builtin_voices())
    for name in _saved_voice_names():
        if name not in names:
            names.append(name)
    return names


def _saved_voice_names() -> list[str]:
    try:
        from tts_app.voice import VoiceLibrary
    except ImportError:
        return []
    try:
        library = VoiceLibrary()
        return [str(name) for name in library.names()]
    except (AttributeError, OSError, ValueError, TypeError) as exc:
        logger.warning("could not list saved voices: %s", exc)
        return []
