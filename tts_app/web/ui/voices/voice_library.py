"""The page's side of the voice library: save the current reference clip under a name, delete, list.

A voice saved here is the visitor's own (tts_app/web/ui/session/visitor_voices.py): listed and usable in
their session only. The server-wide library is the operator's, managed from the command line.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import gradio as gr

from tts_app.web.ui.session.owner import owner_of
from tts_app.web.ui.session.visitor_voices import VISITOR_VOICES
from tts_app.web.ui.voices.voice_input import MODE_BUILTIN, default_builtin, voice_choices
from tts_app.catalog.voices import DEFAULT_VOICE

logger = logging.getLogger(__name__)


def _choices_update(value: str | None, owner: str | None) -> Any:
    return gr.update(choices=voice_choices(owner), value=value)


def save_voice(
    name: str | None, reference_clip: str | None, voice_text: str | None = None, request: gr.Request = None  # type: ignore[assignment]
) -> tuple[str, Any, Any]:
    """Analyse the uploaded clip and keep its profile as this visitor's voice ``name``; returns status, mode and voice-list updates."""
    from tts_app.voice import resolve_voice  # heavy: imported on first use

    owner = owner_of(request)
    name = (name or "").strip()
    try:
        VISITOR_VOICES.check_new(owner, name)  # before the analysis: a refused name costs nothing
        if not reference_clip:
            raise ValueError("upload or record a reference clip first")
        profile = resolve_voice(str(Path(reference_clip)), text=(voice_text or "").strip() or None)
        VISITOR_VOICES.add(str(owner), name, profile.renamed(name) if profile.name != name else profile)
    except ValueError as exc:  # VoiceError is one: a one-line reason for the page
        gr.Warning(f"Not saved: {exc}")
        return f"⚠ **Not saved:** {exc}", gr.skip(), gr.skip()
    logger.debug("a visitor saved a voice")
    return (
        f"✓ **Saved** the voice as **{name}**: pick it in the voice list. It is yours alone and is forgotten "
        "when you close this page.", MODE_BUILTIN, _choices_update(name, owner),
    )


def delete_voice(name: str | None, save_as: str | None = None, request: gr.Request = None) -> tuple[str, Any, Any]:  # type: ignore[assignment]
    """Delete this visitor's saved voice ``name`` (no other voice); returns status, voice-list and
    "Save this voice as…" box updates (the box is emptied when it holds the deleted name)."""
    owner = owner_of(request)
    try:
        if not name:
            raise ValueError("pick one of your saved voices in the voice list first")
        VISITOR_VOICES.remove(owner, name)
    except ValueError as exc:
        gr.Warning(f"Not deleted: {exc}")
        return f"⚠ **Not deleted:** {exc}", gr.skip(), gr.skip()
    box = "" if (save_as or "").strip() == name else gr.skip()
    return f"✓ **Deleted** your saved voice **{name}**.", _choices_update(default_builtin(), owner), box


def refresh_choices(current: str | None, request: gr.Request = None, with_default: bool = False) -> Any:  # type: ignore[assignment]
    """The voice list as the library is now, with this visitor's own voices.

    ``with_default`` puts the model's own voice ("default") first, as the A/B tab lists it.
    """
    names = voice_choices(owner_of(request))
    names = [DEFAULT_VOICE, *names] if with_default else names
    return gr.update(choices=names, value=current if current in names else (names[0] if names else None))


def refresh_ab_choices(a: str | None, b: str | None, request: gr.Request = None) -> tuple[Any, Any]:  # type: ignore[assignment]
    """Both A/B voice lists, with the model's own voice first."""
    return refresh_choices(a, request, True), refresh_choices(b, request, True)
