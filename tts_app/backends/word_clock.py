"""Word timings of one request, filled in as each chunk's durations become known.

A chunk's words are placed by the length regulator's frame counts: sample = chunk start +
frames before the id x hop. A word is released once every chunk that holds it has been
timed and its audio has been sent, so a caption never runs ahead of the sound.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from tts_app.backends.base import WordTiming


@dataclass
class WordClock:
    words: tuple[str, ...]
    last_chunk: tuple[int, ...]  # per word: the last chunk holding it (a word with no phonemes: its predecessor's)
    sample_rate: int
    hop: int
    starts: list[int] = field(init=False)
    ends: list[int] = field(init=False)
    chunk_start: int = 0  # first sample of the next chunk to be timed
    chunks_timed: int = 0
    next_word: int = 0
    sources: tuple[tuple[int, int, str] | None, ...] = ()  # per word: where the request's text held it

    def __post_init__(self) -> None:
        self.starts, self.ends = [-1] * len(self.words), [-1] * len(self.words)

    @classmethod
    def for_chunks(
        cls,
        words: Sequence[str],
        spans: Sequence[Sequence[tuple[int, int, int]]],
        sample_rate: int,
        hop: int,
        sources: Sequence[tuple[int, int, str] | None] = (),
    ) -> "WordClock":
        """``spans``: per chunk, (word, first id, end id) as ``text.word_id_spans`` gives them; ``sources``: per word,
        (text_start, text_end, written) or None."""
        last = [-1] * len(words)
        for c, chunk_spans in enumerate(spans):
            for w, _, _ in chunk_spans:
                last[w] = c
        for w in range(len(last)):  # unspoken words follow the word before them
            if last[w] < 0:
                last[w] = last[w - 1] if w else 0
        return cls(tuple(words), tuple(last), sample_rate, hop, sources=tuple(sources))

    def time_chunk(self, spans: Sequence[tuple[int, int, int]], frames_N: np.ndarray, chunk_samples: int, pause_samples: int) -> None:
        """Place the words of the next chunk; ``chunk_samples`` is its audio, the pause follows it."""
        edges = np.concatenate([[0], np.cumsum(frames_N)]) * self.hop  # sample offset of each id's start
        for w, a, b in spans:
            if self.starts[w] < 0:
                self.starts[w] = self.chunk_start + int(edges[a])
            self.ends[w] = self.chunk_start + int(min(edges[b], chunk_samples))
        self.chunk_start += chunk_samples + pause_samples
        self.chunks_timed += 1

    def release(self, sent_samples: int, done: bool) -> tuple[WordTiming, ...]:
        """Words not yet released whose audio is all within the first ``sent_samples`` (all of them when ``done``)."""
        out = []
        while self.next_word < len(self.words):
            w = self.next_word
            if not done and self.last_chunk[w] >= self.chunks_timed:
                break
            if self.starts[w] < 0:  # nothing of it is heard: a zero-length mark after the word before
                self.starts[w] = self.ends[w] = max(self.ends[w - 1], 0) if w else 0
            if not done and self.ends[w] > sent_samples:
                break
            src = self.sources[w] if w < len(self.sources) else None
            where = src if src is not None else (None, None, None)
            out.append(WordTiming(self.words[w], self.starts[w] / self.sample_rate, self.ends[w] / self.sample_rate, "model", *where))
            self.next_word += 1
        return tuple(out)
