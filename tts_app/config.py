"""Configuration: one dataclass mirrors the voice's config file, one holds per-request settings."""

from __future__ import annotations

import json
from dataclasses import dataclass
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


@dataclass(frozen=True)
class SynthesisSettings:
    """Per-request settings, with the defaults a request gets when it names none.

    ``noise_scale`` and ``noise_w`` of None take the voice's own values;
    ``speed`` divides the phoneme durations (2.0 speaks twice as fast).
    """

    seed: int = 0
    speed: float = 1.0
    noise_scale: float | None = None
    noise_w: float | None = None
    sentence_pause_s: float = 0.25
    clause_pause_s: float = 0.12
    normalize: bool = True  # spell out numbers, dates, abbreviations... before phonemizing
    lexicon: Any = None  # tts_app.text.Lexicon: the caller's pronunciations, or None

    def __post_init__(self) -> None:
        if not SPEED_MIN <= self.speed <= SPEED_MAX:
            raise ValueError(f"speed must be between {SPEED_MIN:g} and {SPEED_MAX:g}, got {self.speed}")
        for name in ("noise_scale", "noise_w"):
            value = getattr(self, name)
            if value is not None and not 0.0 <= value <= 2.0:
                raise ValueError(f"{name} must be between 0 and 2, got {value}")
