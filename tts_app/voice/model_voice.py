"""The embedded model's own voice (Piper en_US-joe-medium): the source side of every adaptation.

A 13 s clip of the model speaking unrelated text ships in data/; its statistics
are the 'from' of the mapping, and the adapter is calibrated on it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from tts_app.voice.analysis.stats import VoiceStats, analyze

MODEL_VOICE_CLIP = Path(__file__).resolve().parent / "data" / "model_voice_joe.flac"


@dataclass(frozen=True)
class ModelVoice:
    audio: np.ndarray  # float32 mono
    sample_rate: int
    stats: VoiceStats


@functools.lru_cache(maxsize=1)
def model_voice() -> ModelVoice:
    """Loaded and analysed on first use (about 0.1 s), then kept."""
    audio, sample_rate = sf.read(MODEL_VOICE_CLIP, dtype="float32")
    audio.flags.writeable = False
    return ModelVoice(audio=audio, sample_rate=int(sample_rate), stats=analyze(audio, int(sample_rate), recording=False))
