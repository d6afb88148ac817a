"""The page's voice choice turned into an engine ``voice`` argument, and the reference report."""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Any

from tts_app.voice_names import builtin_voice_path, builtin_voices, voice_names

logger = logging.getLogger(__name__)

MODE_BUILTIN = "Built-in voice"
MODE_UPLOAD = "Upload or record"
MODE_DEFAULT = "Model's own voice"
VOICE_MODES = [MODE_BUILTIN, MODE_UPLOAD, MODE_DEFAULT]
UPLOAD_SUFFIXES = (".wav", ".flac", ".mp3", ".ogg", ".webm")  # webm: some browsers' microphone recordings
DEFAULT_BUILTIN = "lj_female_us"


class VoiceChoiceError(ValueError):
    """The voice controls do not name a usable voice; the message is one line for the page."""


def default_builtin() -> str | None:
    """The built-in voice selected when the page opens."""
    names = list(builtin_voices())
    if DEFAULT_BUILTIN in names:
        return DEFAULT_BUILTIN
    return names[0] if names else None


def resolve_voice(mode: str | None, builtin: str | None, upload: str | None) -> tuple[Any, str]:
    """The engine's ``voice`` argument for the page's controls, and a short label for history.

    Built-in voices go to the engine by name (the engine's voice library caches their
    profiles); an uploaded or recorded clip goes by path.
    """
    if mode == MODE_DEFAULT:
        return None, "model's own voice"
    if mode == MODE_UPLOAD:
        if not upload:
            raise VoiceChoiceError("Upload or record a reference clip first, or pick a built-in voice.")
        path = Path(upload)
        if path.suffix.lower() not in UPLOAD_SUFFIXES:
            raise VoiceChoiceError(
                f"{path.suffix or 'that file'} is not a supported clip; use wav, flac, mp3 or ogg."
            )
        return str(path), f"upload: {path.name}"
    if not builtin:
        raise VoiceChoiceError("Pick a voice, or switch to the model's own voice.")
    if builtin not in voice_names():  # built-in and saved voices go by name
        raise VoiceChoiceError(f"unknown voice {builtin!r}; it may have been deleted: pick another")
    return builtin, builtin


def is_saved_voice(name: str | None) -> bool:
    """True for a saved voice's name (not a built-in one)."""
    return bool(name) and name not in builtin_voices() and name in voice_names()


def clip_for_report(mode: str | None, builtin: str | None, upload: str | None) -> str | None:
    """The clip the reference report describes, or None for the model's own voice."""
    if mode == MODE_UPLOAD:
        return upload or None
    if mode == MODE_BUILTIN and builtin:
        return str(builtin_voice_path(builtin))
    return None


def saved_voice_report(name: str) -> str:
    """Markdown describing a saved voice (its profile keeps the report of the clip it came from)."""
    from tts_app.voice import default_library

    report = default_library().load(name).report
    return f"{'✓' if report.ok else '⚠'} **Saved voice {name}:** {report.summary()}"


def reference_report(clip: str | None) -> str:
    """Markdown describing the reference clip (the voice library's report); raises ValueError for a bad clip."""
    if clip is None:
        return "Using the model's own voice: no reference clip."
    return _report_markdown(str(clip), Path(clip).stat().st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _report_markdown(clip: str, mtime_ns: int) -> str:  # mtime_ns: a changed file is a new cache key
    from tts_app.voice import load_reference  # heavy: imported on first use

    report = load_reference(clip).report
    icon = "✓" if report.ok else "⚠"
    return f"{icon} {report.summary()}"
