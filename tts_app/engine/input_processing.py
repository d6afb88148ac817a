"""Input processing, before a request reaches the engine core: the voice looked up and analysed once,
and what the model does not honour found (vLLM v1 keeps these outside its engine core too)."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any, Sequence

from tts_app.models.capabilities import Capabilities, Refusal
from tts_app.voice import ClipVoice, resolve_voice
from tts_app.backends.params import SpeechParams


def resolve_params(params: SpeechParams, backend: Any = None) -> SpeechParams:
    """``params`` with its voice resolved to a VoiceProfile (or None for the model's own voice), the clip's
    transcript folded in. Slow the first time for a clip (its analysis); the library caches named voices.
    ``backend``: the one that will speak it. One that clones from the clip itself (``voice_filter`` False: Pocket
    TTS, Qwen3-TTS, Chatterbox) gets a ClipVoice: the clip checked and cleaned (the same one-line reasons), not
    analysed for the embedded voice's filter, which it never uses. None: analysed, as the filter needs.
    Idempotent for the same backend: resolved params come back as they are. Raises VoiceError (a ValueError) for
    a voice that cannot be used."""
    analysed = backend is None or bool(getattr(backend, "voice_filter", False))
    if params.voice_resolved and not (analysed and isinstance(params.voice, ClipVoice)):
        return params
    return replace(params, voice=resolve_voice(params.voice, text=params.voice_text, analysed=analysed), voice_text=None)


def without_refused(params: SpeechParams, texts: Sequence[str], capabilities: Capabilities) -> tuple[SpeechParams, list[Refusal]]:
    """The page's way: ``params`` minus what the model does not honour (each back to its default), and
    what was dropped, so the run is spoken without it and says so. SSML input cannot be dropped here: the
    text itself would have to change, so the engine still refuses it."""
    refused = capabilities.refusals(params, texts)
    defaults = {field.name: field.default for field in fields(SpeechParams)}
    changes = {refusal.param: defaults[refusal.param] for refusal in refused if refusal.param != "input"}
    return replace(params, **changes), refused
