"""SpeechParams: everything one request asks of the engine besides its text, validated once."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Union

from tts_app.models.piper.config import SPEED_MAX, SPEED_MIN

if TYPE_CHECKING:  # types only: the engine core never imports the voice or text packages
    import numpy as np

    from tts_app.backends.model_voice import ModelVoice
    from tts_app.text import Lexicon
    from tts_app.voice import ClipVoice, VoiceProfile

# What a caller may name a voice with; tts_app.engine.input_processing.resolve_params turns it into a VoiceProfile
# (a ClipVoice for a model that clones; a ModelVoice, one of the model's own saved voices, goes to the backend as it is).
VoiceRef = Union["VoiceProfile", "ClipVoice", "ModelVoice", str, Path, "tuple[np.ndarray, int]", None]

SEED_MAX = 2**63 - 1  # what every backend's generator takes; the API allows less (2**31 - 1), a document adds its piece index
MAX_LANGUAGE_CHARS = 16


@dataclass(frozen=True)
class SpeechParams:
    """How to speak a request's text: the same object from the API, the page, the CLI and document jobs.

    ``voice``: None for the model's own voice, a VoiceProfile, or (before ``resolve_params``) a voice's
    name, a clip's path or ``(audio, sample_rate)``; ``voice_text`` is what that clip says, if known.
    ``normalize`` None takes the model's own reading (the embedded voice spells out numbers, dates and
    abbreviations; the others read the text as given); True asks for that expansion, False for none.
    ``lexicon``: a tts_app.text.Lexicon of the caller's pronunciations. ``language``: None for the
    model's own, else a code the model lists (``Capabilities.languages``). ``stream`` False: nobody
    listens while it is made (a whole file). ``client``: who asks (fair shares); None: the app itself.
    """

    seed: int = 0
    speed: float = 1.0
    voice: VoiceRef = None
    voice_text: str | None = None
    voice_strength: float = 1.0
    normalize: bool | None = None
    lexicon: Lexicon | None = None
    language: str | None = None
    stream: bool = True
    client: str | None = None

    def __post_init__(self) -> None:
        # Coerced here once so every consumer sees plain ints and floats (numpy and bool inputs included).
        try:
            seed, speed, strength = int(self.seed), float(self.speed), float(self.voice_strength)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"seed, speed and voice_strength must be numbers: {exc}") from None
        if not 0 <= seed <= SEED_MAX:
            raise ValueError(f"seed must be between 0 and {SEED_MAX}, got {seed}")
        if not (math.isfinite(speed) and SPEED_MIN <= speed <= SPEED_MAX):
            raise ValueError(f"speed must be between {SPEED_MIN:g} and {SPEED_MAX:g}, got {self.speed}")
        if not (math.isfinite(strength) and 0.0 <= strength <= 1.0):
            raise ValueError(f"voice_strength must be between 0 and 1, got {self.voice_strength}")
        if self.normalize is not None and not isinstance(self.normalize, bool):
            raise ValueError(f"normalize must be true, false or null, got {self.normalize!r}")
        if self.language is not None and not (isinstance(self.language, str) and 0 < len(self.language) <= MAX_LANGUAGE_CHARS):
            raise ValueError(f"language must be a short code such as 'en', got {self.language!r}")
        object.__setattr__(self, "seed", seed)
        object.__setattr__(self, "speed", speed)
        object.__setattr__(self, "voice_strength", strength)
        object.__setattr__(self, "stream", bool(self.stream))

    @property
    def voice_resolved(self) -> bool:
        """True when ``voice`` is the model's own voice or an analysed profile (no name, path or clip left)."""
        return self.voice_text is None and not isinstance(self.voice, (str, Path, tuple))
