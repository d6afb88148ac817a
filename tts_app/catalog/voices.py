"""Names of the voices a request may ask for: the voice library's built-in clips and saved voices."""

from __future__ import annotations

from pathlib import Path

DEFAULT_VOICE = "default"  # the model's own voice, no reference clip


def builtin_voices() -> dict[str, Path]:
    """Built-in voice name (the clip's file stem in assets/voices) to clip path, sorted by name."""
    from tts_app.voice import default_library  # start-up: the voice package loads its DSP stack on first use

    return {entry.name: entry.path for entry in default_library().entries() if entry.builtin}


def builtin_voice_path(name: str) -> Path:
    """The clip of a built-in voice; ValueError with a one-line message for an unknown name."""
    voices = builtin_voices()
    if name not in voices:
        from tts_app.voice.errors import shown_name  # start-up: the voice package loads its DSP stack on first use

        raise ValueError(f"unknown built-in voice {shown_name(name)}; choose one of: {', '.join(voices)}")
    return voices[name]


def voice_names() -> list[str]:
    """Every name ``SpeechParams.voice`` accepts: built-in voices first, then saved ones."""
    from tts_app.voice import default_library  # start-up: the voice package loads its DSP stack on first use

    return default_library().names()
