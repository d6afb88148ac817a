"""Text to phoneme ids with the espeak-ng data that the piper-tts wheel bundles."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from piper.phoneme_ids import phonemes_to_ids
from piper.phonemize_espeak import EspeakPhonemizer

# espeak-ng keeps global state, so every call in the process goes through one lock.
_LOCK = threading.Lock()
_PHONEMIZER: EspeakPhonemizer | None = None


def phonemize(text: str, espeak_voice: str) -> list[list[str]]:
    """Phonemes grouped by sentence, as espeak-ng splits them."""
    global _PHONEMIZER
    with _LOCK:
        if _PHONEMIZER is None:
            _PHONEMIZER = EspeakPhonemizer()
        sentences = _PHONEMIZER.phonemize(espeak_voice, text)
    return [s for s in sentences if s]


def to_ids(phonemes: Sequence[str], id_map: Mapping[str, Sequence[int]]) -> list[int]:
    """Phonemes to model ids, with BOS/EOS and the pad between phonemes (piper's scheme)."""
    return phonemes_to_ids(list(phonemes), id_map)
