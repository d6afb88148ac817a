"""tts_app: batched, streaming text to speech.

The public API, imported on first use so that ``import tts_app`` loads no model code:

    from tts_app import Engine, SpeechParams, resolve_params
    engine = Engine()
    params = resolve_params(SpeechParams(voice="lj_female_us"))  # the voice analysed once
    audio = engine.submit("Hello.", params).result()
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Engine": "tts_app.engine",
    "EngineBusy": "tts_app.engine",
    "EngineClosed": "tts_app.engine",
    "RequestCancelled": "tts_app.engine",
    "RequestHandle": "tts_app.engine",
    "RequestMetrics": "tts_app.engine",
    "SpeechParams": "tts_app.backends.params",
    "UnsupportedParameter": "tts_app.models.capabilities",
    "resolve_params": "tts_app.engine.input_processing",
    "TextError": "tts_app.text",
    "VoiceError": "tts_app.voice",
    "VoiceLibrary": "tts_app.voice",
    "VoiceProfile": "tts_app.voice",
    "resolve_voice": "tts_app.voice",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'tts_app' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
