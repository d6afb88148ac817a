"""Forced alignment of 16 kHz speech to known words with PocketSphinx (its US-English model ships in its wheel).

One decoder per process, used one call at a time: it holds a 130k-word dictionary and an
acoustic model (a second of start-up), so it is made on first use, never at import.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tts_app import settings

from tts_app.captions.pronounce import phones_for

RATE = 16000
FRAME_S = 0.01  # PocketSphinx's frames: 100 a second
_FILLERS = frozenset(("<s>", "</s>", "<sil>", "[NOISE]", "[SPEECH]"))
_MID_CLAUSE_STOP = 0.05  # prior of a segment ending after a word no clause mark follows (pauses come mostly at marks)
# Every second frame (20 ms): a third less time, and word starts as close (docs/benchmarks-log.md, aligner section).
_OPTIONS: dict[str, Any] = {"ds": 2, "maxhmmpf": 500}
_MAX_PHONES = 60  # a word's pronunciation is cut there: a longer one cannot be spoken in any stretch worth aligning
_lock = threading.Lock()


@dataclass
class _State:
    decoder: Any = None
    added: set[str] = field(default_factory=set)


_STATE = _State()


def _max_added_words() -> int:
    """$TTS_APP_ALIGN_MAX_ADDED_WORDS (20000): words added for out-of-dictionary text before the decoder is remade."""
    return settings.value("TTS_APP_ALIGN_MAX_ADDED_WORDS")


def _decoder():
    s = _STATE
    if s.decoder is None or len(s.added) > _max_added_words():  # hostile text must not grow the dictionary forever
        from pocketsphinx import Decoder  # a second to load the model: only once alignment is first needed

        s.decoder, s.added = Decoder(samprate=RATE, loglevel="FATAL", **_OPTIONS), set()
    return s.decoder


def _names(dec, keys: Sequence[str]) -> list[str]:
    """Dictionary names for the keys, adding a guessed pronunciation for each one the dictionary lacks."""
    names = []
    for key in keys:
        name = key.replace(" ", "_")
        if name not in _STATE.added and dec.lookup_word(name) is None:
            phones, _ = phones_for(key, dec.lookup_word)
            # update=False: each search is built afresh from the dictionary (an update costs a second a word)
            dec.add_word(name, " ".join((phones or "AH").split()[:_MAX_PHONES]), update=False)
            _STATE.added.add(name)
        names.append(name)
    return names


def _spans(dec, names: Sequence[str]) -> list[tuple[float, float]] | None:
    """The decoded words' (start, end) in seconds, if they are the first words of ``names``."""
    segs = [s for s in dec.seg() or () if s.word not in _FILLERS]  # no segments at all when no path survived
    if [s.word.split("(")[0] for s in segs] != list(names[: len(segs)]):
        return None
    return [(s.start_frame * FRAME_S, (s.end_frame + 1) * FRAME_S) for s in segs]


def align(pcm: np.ndarray, keys: Sequence[str], clause_end: Sequence[bool] | None = None) -> list[tuple[float, float]] | None:
    """(start, end) in seconds of each word of ``keys`` in ``pcm`` (16 kHz int16), or None when it fails.

    With ``clause_end`` the audio may hold only the first words (a prefix, likely ending at a
    clause mark): as many spans as words heard are returned. Without it every word must fit.
    """
    if not keys or pcm.size < RATE // 10:
        return None
    with _lock:
        dec = _decoder()
        try:
            names = _names(dec, keys)
            if clause_end is None:
                dec.set_align_text(" ".join(names))
            else:
                final = len(names) + 1
                moves = [(0, final, _MID_CLAUSE_STOP)]
                for i, name in enumerate(names):
                    moves += [(i, i + 1, 1.0, name), (i + 1, final, 1.0 if clause_end[i] else _MID_CLAUSE_STOP)]
                dec.add_fsg("prefix", dec.create_fsg("prefix", 0, final, moves))
                dec.activate_search("prefix")
            dec.start_utt()
            dec.process_raw(pcm.tobytes(), full_utt=True)
            dec.end_utt()
        except RuntimeError:  # a word it would not take, or no path through the words (audio too short for them)
            _STATE.decoder = None  # it may be left inside an utterance: a fresh one next time
            return None
        spans = _spans(dec, names)
    if spans is None or (clause_end is None and len(spans) != len(names)):
        return None
    return spans
