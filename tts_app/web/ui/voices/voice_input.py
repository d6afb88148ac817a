"""The page's voice choice turned into an engine ``voice`` argument, and the reference report."""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Any

from tts_app.web.ui.session.visitor_voices import VISITOR_VOICES
from tts_app.catalog.voices import builtin_voice_path, builtin_voices, voice_names

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


def voice_choice(mode: str | None, builtin: str | None, upload: str | None, owner: str | None = None) -> tuple[Any, str]:
    """What the page's controls name as the voice (``SpeechParams.voice``, resolved later), and a short label for history.

    Built-in and operator voices go to the engine by name (the engine's voice library caches
    their profiles); ``owner``'s own saved voices as their profile; an uploaded or recorded
    clip by path.
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
    mine = VISITOR_VOICES.get(owner, builtin)
    if mine is not None:
        return mine, builtin
    if builtin not in voice_names():  # built-in and saved voices go by name
        raise VoiceChoiceError(f"unknown voice {builtin!r}; it may have been deleted: pick another")
    return builtin, builtin


def is_saved_voice(name: str | None, owner: str | None = None) -> bool:
    """True for a saved voice's name (``owner``'s own, or the operator's; not a built-in one)."""
    if VISITOR_VOICES.get(owner, name) is not None:
        return True
    return bool(name) and name not in builtin_voices() and name in voice_names()


def is_own_voice(name: str | None, owner: str | None) -> bool:
    """True for a voice ``owner`` saved (the only ones the page may delete)."""
    return VISITOR_VOICES.get(owner, name) is not None


def voice_choices(owner: str | None = None) -> list[str]:
    """Built-in voices, the operator's saved ones, then ``owner``'s own: what the voice lists offer."""
    names = voice_names()
    return names + [n for n in VISITOR_VOICES.names(owner) if n not in names]


def clip_for_report(mode: str | None, builtin: str | None, upload: str | None) -> str | None:
    """The clip the reference report describes, or None for the model's own voice."""
    if mode == MODE_UPLOAD:
        return upload or None
    if mode == MODE_BUILTIN and builtin:
        return str(builtin_voice_path(builtin))
    return None


def saved_profile(name: str, owner: str | None = None) -> Any:
    """``owner``'s saved voice ``name``, else the operator's (VoiceError for an unknown name)."""
    from tts_app.voice import default_library  # start-up: the voice package loads its DSP stack on first use

    mine = VISITOR_VOICES.get(owner, name)
    return mine if mine is not None else default_library().load(name)


def saved_voice_report(name: str, owner: str | None = None) -> str:
    """Markdown describing a saved voice (its profile keeps the report of the clip it came from)."""
    report = saved_profile(name, owner).report
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
