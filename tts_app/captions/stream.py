"""Word timings for a model that gives none: its audio aligned to its text clause by clause as it streams.

Audio is buffered until a pause; the speech before the pause is aligned to the words still
untimed, any number of them (most likely a whole clause), and the words found are released.
What is left when the request ends is aligned to the words left. A stretch the aligner cannot
place is shared out over its speech by word length, marked ``"even"``. The words are the request's
text as written (the model reads it raw), so each carries its own span of it (``text_start``,
``text_end``, ``written``).
"""

from __future__ import annotations

from math import gcd

import numpy as np
from scipy.signal import resample_poly

from tts_app.text.word_timing import WordTiming
from tts_app.text.words import clause_ends, written_word_spans, written_words
from tts_app.captions import decoder
from tts_app.captions.pauses import PauseFinder
from tts_app.captions.pronounce import dictionary_key

_WINDOW_WORDS = 64  # words offered to one clause's alignment: a clause between two pauses is far shorter
# A stretch without a pause is cut this long at its quietest moment: PocketSphinx's time grows with
# words x frames, so no one alignment may be long (measured: 2000 words over 80 s took 16 s, 500 over 20 s 1.2 s).
_MAX_STRETCH_S = 20.0


def _pcm16k(audio: np.ndarray, rate: int) -> np.ndarray:
    g = gcd(decoder.RATE, rate)
    a16 = resample_poly(np.asarray(audio, np.float64), decoder.RATE // g, rate // g) if rate != decoder.RATE else audio
    return (np.clip(a16, -1.0, 1.0) * 32767).astype(np.int16)


class WordAligner:
    """One request's word timings; ``feed`` it every piece of audio in order, the last with ``done``."""

    def __init__(self, text: str, sample_rate: int, min_pause_s: float = 0.2) -> None:
        self.words = written_words(text)
        self.spans = written_word_spans(text)  # where each word is in the request's text
        self.keys = [dictionary_key(w) for w in self.words]
        self.clause_end = clause_ends(text)
        self.sample_rate = sample_rate
        self.pauses = PauseFinder(sample_rate, min_pause_s)
        self.buffer = np.zeros(0, np.float32)
        self.base = 0  # samples of the request before the buffer's first
        self.next_word = 0
        self.last_end = 0.0  # end of the last word released, seconds

    def feed(self, audio: np.ndarray, done: bool) -> tuple[WordTiming, ...]:
        """The words whose audio is now known, in order (all that are left when ``done``)."""
        self.buffer = np.concatenate([self.buffer, np.asarray(audio, np.float32)])
        out: list[WordTiming] = []
        while not done and self.next_word < len(self.words):
            pause = self.pauses.next_cut(self.buffer)
            if pause is not None:
                out += self._clause(*pause)
            elif self.buffer.size > _MAX_STRETCH_S * self.sample_rate:
                out += self._clause(*self.pauses.quietest(self.buffer), forced=True)
            else:
                break
        while done and self.next_word < len(self.words):
            placed = self._rest()
            out += placed
            if not placed:
                break
        if done:
            self.buffer = np.zeros(0, np.float32)
        return tuple(out)

    def _clause(self, cut: int, quiet_from: int, forced: bool = False) -> list[WordTiming]:
        """Align the buffer up to ``cut`` to the next words, as many as it holds.

        ``cut`` lies in a pause that began at ``quiet_from``; when ``forced`` it is only the
        quietest moment of a long stretch without a pause, and the last word found may run on
        past it: that word is left for the next stretch.
        """
        end = min(len(self.words), self.next_word + _WINDOW_WORDS)
        todo = [i for i in range(self.next_word, end) if self.keys[i]]
        if not todo:  # only words with nothing to say ("北京" has no English reading): placed at the end
            self._drop(cut)
            return []
        spans = decoder.align(_pcm16k(self.buffer[:cut], self.sample_rate), [self.keys[i] for i in todo],
                              [self.clause_end[i] for i in todo])
        if spans is None and not forced and self.buffer.size <= _MAX_STRETCH_S * self.sample_rate:
            return []  # left for the next pause: the stretch grows until it aligns (or grows too long)
        if forced and spans and len(spans) > 1:
            spans = spans[:-1]
        if not spans:  # nothing heard (leading silence, a breath), or a long stretch that would not align: dropped
            self._drop(cut)
            return []
        out = self._place(todo[: len(spans)], self._trim_last(spans, quiet_from), "aligned")
        self._drop(int(spans[-1][1] * self.sample_rate) if forced else cut)
        return out

    def _rest(self) -> list[WordTiming]:
        """The words left once the audio has ended: a window of them at a time, the last window wholly.

        Aligned, or where that fails shared out over the speech left by word length.
        """
        todo = [i for i in range(self.next_word, len(self.words)) if self.keys[i]]
        first, last = self.pauses.speech_extent(self.buffer)
        if len(todo) > _WINDOW_WORDS:
            placed = self._clause(self.buffer.size, last)
            if placed:
                return placed
            first, last = self.pauses.speech_extent(self.buffer)  # what is left of it
        elif todo:
            spans = decoder.align(_pcm16k(self.buffer, self.sample_rate), [self.keys[i] for i in todo])
            if spans is not None:
                return self._place(todo, self._trim_last(spans, last), "aligned")
        todo = list(range(self.next_word, len(self.words)))
        weights = np.array([max(1, len(self.keys[i])) for i in todo], np.float64)
        edges = (first + (last - first) * np.concatenate([[0.0], np.cumsum(weights)]) / weights.sum()) / self.sample_rate
        return self._place(todo, list(zip(edges[:-1], edges[1:])), "even")

    def _trim_last(self, spans: list[tuple[float, float]], speech_end: int) -> list[tuple[float, float]]:
        """The last word ends where the speech does: the aligner lets it run on through the silence after it."""
        start, end = spans[-1]
        return spans[:-1] + [(start, max(start, min(end, speech_end / self.sample_rate)))]

    def _place(self, indices: list[int], spans: list[tuple[float, float]], source: str) -> list[WordTiming]:
        """Release words up to the last of ``indices``; one the aligner skipped (no letters) is a mark after the word before."""
        at = dict(zip(indices, spans))
        base = self.base / self.sample_rate
        out = []
        for i in range(self.next_word, indices[-1] + 1):
            start, end = (base + at[i][0], base + at[i][1]) if i in at else (self.last_end, self.last_end)
            start = max(start, self.last_end)  # monotonic even where two stretches' edges overlap
            a, b = self.spans[i]
            out.append(WordTiming(self.words[i], start, max(start, end), source, a, b, self.words[i]))
            self.last_end = max(start, end)
        self.next_word = indices[-1] + 1
        return out

    def _drop(self, samples: int) -> None:
        """Forget the buffer's first ``samples`` (rounded down to whole frames): their words are placed."""
        samples -= samples % self.pauses.hop
        samples = max(0, min(samples, self.buffer.size))
        self.buffer = self.buffer[samples:]
        self.base += samples
        self.pauses.trim(samples)
