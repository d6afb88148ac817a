"""ModelVoice: a request's voice that is one of the model's own saved voices (a Pocket TTS checkpoint's
``voices/alba.safetensors``), named by the model, not a clip of the app's library to clone."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelVoice:
    name: str  # a name the model lists (its backend's ``voice_names``); checked against that list before use
    saved_voice = True  # not a clip: a model without cloning speaks it (capabilities.voice_clips)
