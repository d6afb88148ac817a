"""Text to phoneme ids with the espeak-ng data that the piper-tts wheel bundles.

piper-tts is imported on the first call, not with this module: the text package (words, captions) is imported by
the Qwen3-TTS and Chatterbox backends too, and an install for those alone need not have piper-tts.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

# espeak-ng keeps global state, so every call in the process goes through one lock.
_LOCK = threading.Lock()
_PHONEMIZER: Any = None  # piper's EspeakPhonemizer, made on the first call


def phonemize(text: str, espeak_voice: str) -> list[list[str]]:
    """Phonemes grouped by sentence, as espeak-ng splits them."""
    global _PHONEMIZER
    with _LOCK:
        if _PHONEMIZER is None:
            from piper.phonemize_espeak import EspeakPhonemizer  # piper-tts on first use (module docstring)

            _PHONEMIZER = EspeakPhonemizer()
        sentences = _PHONEMIZER.phonemize(espeak_voice, text)
    return [s for s in sentences if s]


def to_ids(phonemes: Sequence[str], id_map: Mapping[str, Sequence[int]]) -> list[int]:
    """Phonemes to model ids, with BOS/EOS and the pad between phonemes (piper's scheme)."""
    from piper.phoneme_ids import phonemes_to_ids  # piper-tts on first use (module docstring)

    return phonemes_to_ids(list(phonemes), id_map)


def word_id_spans(phonemes: Sequence[str], word_of: Sequence[int], id_map: Mapping[str, Sequence[int]]) -> list[tuple[int, int, int]]:
    """(word, first id, end id) of each word in ``to_ids(phonemes)``, in order.

    A word's ids run from the pad before its first phoneme (the transition into it) to the
    pad after its last one. Phonemes
    missing from ``id_map`` have no ids, as ``to_ids`` skips them.
    """
    from piper.phoneme_ids import BOS, PAD  # piper-tts on first use (module docstring)

    spans: list[list[int]] = []
    at = len(id_map[BOS]) + len(id_map[PAD])
    for phoneme, word in zip(phonemes, word_of):
        if phoneme not in id_map:
            continue
        end = at + len(id_map[phoneme]) + len(id_map[PAD])
        if word >= 0 and spans and spans[-1][0] == word:
            spans[-1][2] = end
        elif word >= 0:
            # From the pad before its first phoneme, unless that pad ends the word before (joined words).
            spans.append([word, max(at - len(id_map[PAD]), spans[-1][2] if spans else 0), end])
        at = end
    return [(w, a, b) for w, a, b in spans]
