"""The page's side of the voice library: save the current reference clip under a name, delete, list."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import gradio as gr

from tts_app.voice_names import DEFAULT_VOICE, builtin_voices, voice_names

logger = logging.getLogger(__name__)

MAX_SAVED_VOICES = 200  # a public page must not let visitors fill the disk with profiles


def voice_choices() -> list[str]:
    """Built-in voices, then saved ones: what the Speak tab's voice list offers."""
    return voice_names()


def _choices_update(value: str | None) -> Any:
    return gr.update(choices=voice_choices(), value=value)


def save_voice(name: str | None, reference_clip: str | None, voice_text: str | None = None) -> tuple[str, Any, Any]:
    """Analyse the uploaded clip and store its profile as ``name``; returns status, mode and voice-list updates."""
    from tts_app.voice import default_library, resolve_voice
    from tts_app.voice.library import check_name
    from tts_app.ui.voice_input import MODE_BUILTIN

    name = (name or "").strip()
    try:
        check_name(name)
        if not reference_clip:
            raise ValueError("upload or record a reference clip first")
        library = default_library()
        if name in builtin_voices():
            raise ValueError(f"{name!r} is a built-in voice; choose another name")
        if name in library.saved_names():
            raise ValueError(f"a voice named {name!r} already exists; delete it first or choose another name")
        if len(library.saved_names()) >= MAX_SAVED_VOICES:
            raise ValueError(f"the library is full ({MAX_SAVED_VOICES} saved voices); delete one first")
        profile = resolve_voice(str(Path(reference_clip)), text=(voice_text or "").strip() or None)
        library.save(profile, name, overwrite=False)
    except ValueError as exc:  # VoiceError is one: a one-line reason for the page
        gr.Warning(f"Not saved: {exc}")
        return f"⚠ **Not saved:** {exc}", gr.skip(), gr.skip()
    logger.info("saved voice %r", name)
    return f"✓ **Saved** the voice as **{name}**: pick it in the voice list (and as `voice` in the API).", MODE_BUILTIN, _choices_update(name)


def delete_voice(name: str | None, save_as: str | None = None) -> tuple[str, Any, Any]:
    """Delete the saved voice ``name`` (built-in voices stay); returns status, voice-list and
    "Save this voice as…" box updates (the box is emptied when it holds the deleted name)."""
    from tts_app.voice import default_library
    from tts_app.ui.voice_input import default_builtin

    try:
        if not name:
            raise ValueError("pick a saved voice in the voice list first")
        if name in builtin_voices():
            raise ValueError(f"{name!r} is a built-in voice; only saved voices can be deleted")
        default_library().delete(name)
    except ValueError as exc:
        gr.Warning(f"Not deleted: {exc}")
        return f"⚠ **Not deleted:** {exc}", gr.skip(), gr.skip()
    box = "" if (save_as or "").strip() == name else gr.skip()
    return f"✓ **Deleted** the saved voice **{name}**.", _choices_update(default_builtin()), box


def refresh_choices(current: str | None, with_default: bool = False) -> Any:
    """The voice list as the library is now (another visitor may have saved or deleted one).

    ``with_default`` puts the model's own voice ("default") first, as the A/B tab lists it.
    """
    names = [DEFAULT_VOICE, *voice_choices()] if with_default else voice_choices()
    return gr.update(choices=names, value=current if current in names else (names[0] if names else None))
