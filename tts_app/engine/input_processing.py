"""Input processing, before a request reaches the engine core: the voice looked up and analysed once,
and what the model does not honour found (vLLM v1 keeps these outside its engine core too)."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Sequence

from tts_app.models.capabilities import Capabilities, Refusal
from tts_app.voice import resolve_voice
from tts_app.backends.params import SpeechParams


def resolve_params(params: SpeechParams) -> SpeechParams:
    """``params`` with its voice resolved to a VoiceProfile (or None for the model's own voice), the clip's
    transcript folded in. Slow the first time for a clip (its analysis); the library caches named voices.
    Idempotent: resolved params come back as they are. Raises VoiceError (a ValueError) for a voice that
    cannot be used."""
    if params.voice_resolved:
        return params
    return replace(params, voice=resolve_voice(params.voice, text=params.voice_text), voice_text=None)


def without_refused(params: SpeechParams, texts: Sequence[str], capabilities: Capabilities) -> tuple[SpeechParams, list[Refusal]]:
    """The page's way: ``params`` minus what the model does not honour (each back to its default), and
    what was dropped, so the run is spoken without it and says so. SSML input cannot be dropped here: the
    text itself would have to change, so the engine still refuses it."""
    refused = capabilities.refusals(params, texts)
    defaults = {field.name: field.default for field in fields(SpeechParams)}
    changes = {refusal.param: defaults[refusal.param] for refusal in refused if refusal.param != "input"}
    return replace(params, **changes), refused
