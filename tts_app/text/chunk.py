"""Split phonemized sentences into chunks the text stage can take in one pass."""

from __future__ import annotations

from dataclasses import dataclass

# Clause punctuation where a long sentence may be cut with a short pause.
_CLAUSE_MARKS = (",", ";", ":")


@dataclass(frozen=True)
class Chunk:
    """One text-stage unit: a sentence or a clause of a long one."""

    phonemes: tuple[str, ...]
    pause_after_s: float  # silence to put after this chunk's audio
    rate: float = 1.0  # speaking rate of this chunk relative to the request's (SSML <prosody rate>)


def _cut_points(phonemes: list[str], max_len: int) -> list[int]:
    """Indices where to cut so each piece is at most ``max_len`` phonemes, preferring clause marks."""
    cuts: list[int] = []
    start = 0
    while len(phonemes) - start > max_len:
        window = phonemes[start : start + max_len]
        clause = [i for i, p in enumerate(window) if p in _CLAUSE_MARKS]
        spaces = [i for i, p in enumerate(window) if p == " "]
        # Cut after the last clause mark in the window, else at the last word gap, else hard.
        if clause and clause[-1] > max_len // 4:
            cut = start + clause[-1] + 1
        elif spaces:
            cut = start + spaces[-1] + 1
        else:
            cut = start + max_len
        cuts.append(cut)
        start = cut
    return cuts


def chunk_sentences(
    sentences: list[list[str]],
    max_phonemes: int = 400,
    sentence_pause_s: float = 0.25,
    clause_pause_s: float = 0.12,
) -> list[Chunk]:
    """Turn phonemized sentences into chunks; the last chunk gets no pause."""
    chunks: list[Chunk] = []
    for sentence in sentences:
        bounds = [0, *_cut_points(sentence, max_phonemes), len(sentence)]
        pieces = [sentence[a:b] for a, b in zip(bounds, bounds[1:])]
        pieces = [p for p in pieces if any(ph.strip() for ph in p)]
        for i, piece in enumerate(pieces):
            pause = sentence_pause_s if i == len(pieces) - 1 else clause_pause_s
            chunks.append(Chunk(tuple(piece), pause))
    if chunks:
        chunks[-1] = Chunk(chunks[-1].phonemes, 0.0)
    return chunks
