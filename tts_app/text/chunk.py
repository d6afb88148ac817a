"""Split phonemized sentences into chunks the text stage can take in one pass."""

from __future__ import annotations

from dataclasses import dataclass, replace

# Clause punctuation where a long sentence may be cut with a short pause.
_CLAUSE_MARKS = (",", ";", ":")


@dataclass(frozen=True)
class Chunk:
    """One text-stage unit: a sentence or a clause of a long one."""

    phonemes: tuple[str, ...]
    pause_after_s: float  # silence to put after this chunk's audio
    rate: float = 1.0  # speaking rate of this chunk relative to the request's (SSML <prosody rate>)
    word_of: tuple[int, ...] = ()  # per phoneme: index of its written word in the request, -1 for none


def _cut_points(phonemes: list[str], max_len: int, first_len: int | None = None) -> list[int]:
    """Indices where to cut so each piece is at most ``max_len`` phonemes (the first ``first_len``), preferring clause marks."""
    cuts: list[int] = []
    start = 0
    limit = first_len or max_len
    while len(phonemes) - start > limit:
        window = phonemes[start : start + limit]
        clause = [i for i, p in enumerate(window) if p in _CLAUSE_MARKS]
        spaces = [i for i, p in enumerate(window) if p == " "]
        # Cut after the last clause mark in the window, else at the last word gap, else hard.
        if clause and clause[-1] > limit // 4:
            cut = start + clause[-1] + 1
        elif spaces:
            cut = start + spaces[-1] + 1
        else:
            cut = start + limit
        cuts.append(cut)
        start = cut
        limit = max_len
    return cuts


def chunk_sentences(
    sentences: list[list[str]],
    max_phonemes: int = 400,
    sentence_pause_s: float = 0.25,
    clause_pause_s: float = 0.12,
    word_of: list[list[int]] | None = None,
    first_max_phonemes: int | None = None,
) -> list[Chunk]:
    """Turn phonemized sentences into chunks; the last chunk gets no pause.

    ``word_of`` (per sentence, per phoneme: its written word) is cut the same way.
    ``first_max_phonemes`` caps the first chunk only: the text stage of a long first
    sentence is what the first audio waits for.
    """
    chunks: list[Chunk] = []
    for k, sentence in enumerate(sentences):
        bounds = [0, *_cut_points(sentence, max_phonemes, None if chunks else first_max_phonemes), len(sentence)]
        pieces = [(a, b) for a, b in zip(bounds, bounds[1:]) if any(ph.strip() for ph in sentence[a:b])]
        for i, (a, b) in enumerate(pieces):
            pause = sentence_pause_s if i == len(pieces) - 1 else clause_pause_s
            labels = tuple(word_of[k][a:b]) if word_of is not None else ()
            chunks.append(Chunk(tuple(sentence[a:b]), pause, word_of=labels))
    if chunks:
        chunks[-1] = replace(chunks[-1], pause_after_s=0.0)
    return chunks
