"""Which written word each phoneme belongs to: the text side of word timestamps.

espeak joins some words into one phoneme word ("on the" -> "ɔnðə") and may split others, so
words are matched to phoneme words by a small alignment on phoneme counts: each written word
is phonemized on its own (cached) and groups of 1-4 words are paired with groups of 1-3
phoneme words. Inside a joined group, phonemes are shared out in proportion to each word's
own phoneme count. Runs without a model.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Sequence

from tts_app.text.offsets import token_bounds
from tts_app.text.phonemize import phonemize
from tts_app.text.slots import SLOT_RE, PhonemeSlots, ipa_symbols

NO_WORD = -1  # label of a space, a punctuation mark, or a phoneme no written word claimed
_MARKS = frozenset(" .,;:!?")
_STRESS = frozenset("ˈˌ")  # espeak drops stress on joined function words: not counted in lengths
_WORD_CHARS = re.compile(r"\w|[\ue000-\uf8ff]")
# A whole token with no word character ("-", "&"). It starts with its first character, not the check
# before it (a lookbehind), so the regex engine skips to candidates in its own loop; tried only where a
# token starts (a bare character after a non-space fails at once), so linear.
_BARE_TOKEN = re.compile(r"[^\w\s\ue000-\uf8ff](?<!\S.)[^\w\s\ue000-\uf8ff]*(?!\S)", re.DOTALL)
_CLAUSE_MARKS = frozenset(".,;:!?")
_FIRST_SLOT, _LAST_SLOT = "\ue000", "\uf8ff"  # phoneme slots (slots.py) count as word characters
# (written words, phoneme words) per alignment step, and what each costs beyond the length gap.
_STEPS: tuple[tuple[int, int, float], ...] = (
    (1, 1, 0.0), (2, 1, 0.5), (3, 1, 1.0), (4, 1, 1.5), (1, 2, 0.5), (1, 3, 1.0), (1, 0, 1.0), (0, 1, 1.0),
)  # fmt: skip


def written_words(text: str) -> list[str]:
    """Whitespace tokens that hold a letter, a digit or a phoneme slot, with their punctuation ("planks.")."""
    return [tok for tok in text.split() if _WORD_CHARS.search(tok)]


def written_word_spans(text: str) -> list[tuple[int, int]]:
    """[start, end) in ``text`` of each of ``written_words(text)``."""
    return list(zip(*written_word_bounds(text)))


def written_word_bounds(text: str) -> tuple[Sequence[int], Sequence[int]]:
    """``written_word_spans(text)`` as two sequences, the starts and the ends (what ``map_bounds_back`` takes)."""
    starts, ends = token_bounds(text)
    bare = {m.start() for m in _BARE_TOKEN.finditer(text)}  # usually none: one linear scan
    if not bare:
        return starts, ends
    keep = [s not in bare for s in starts]
    return list(itertools.compress(starts, keep)), list(itertools.compress(ends, keep))


def clause_ends(text: str) -> list[bool]:
    """For each of ``written_words(text)``: does a clause mark (``,.;:!?``) follow it?"""
    return [_ends_clause(tok) for tok in written_words(text)]


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_" or _FIRST_SLOT <= ch <= _LAST_SLOT


def _ends_clause(token: str) -> bool:
    """A clause mark among the token's trailing non-word characters ("planks.", "end?!)").

    A loop from the end, not a regex search: a search for "[.,;:!?][^\\w]*$" restarts at every
    mark of a long run ("....x") and is quadratic.
    """
    at = len(token)
    while at > 0 and not _is_word_char(token[at - 1]):
        at -= 1
    return any(ch in _CLAUSE_MARKS for ch in token[at:])


def phoneme_word_spans(phonemes: Sequence[str]) -> list[tuple[int, int]]:
    """[start, end) of each run of phonemes between spaces and punctuation marks."""
    spans, start = [], None
    for i, p in enumerate(phonemes):
        if p in _MARKS:
            if start is not None:
                spans.append((start, i))
                start = None
        elif start is None:
            start = i
    if start is not None:
        spans.append((start, len(phonemes)))
    return spans


def _length(symbols: Sequence[str]) -> int:
    return sum(1 for s in symbols if s not in _STRESS and s not in _MARKS)


def _share(indices: list[int], weights: list[int]) -> list[list[int]]:
    """Split ``indices`` into consecutive parts sized in proportion to ``weights`` (cumulative rounding)."""
    weights = weights if sum(weights) > 0 else [1] * len(weights)
    total, acc, taken, parts = sum(weights), 0, 0, []
    for w in weights:
        acc += w
        end = round(len(indices) * acc / total)
        parts.append(indices[taken:end])
        taken = end
    return parts


def label_phonemes(
    phonemes: Sequence[str],
    words: Sequence[str],
    own_phonemes: Callable[[str], Sequence[str]],
    ends_clause: Sequence[bool] | None = None,
) -> list[int]:
    """Index into ``words`` for every phoneme (``NO_WORD`` for spaces and marks).

    ``own_phonemes(word)`` gives a word's phonemes said alone; it is called only where
    the counts of written and phoneme words differ. With ``ends_clause`` (a clause mark
    follows the word) words are matched clause by clause when both sides have as many
    clauses, which keeps each alignment small.
    """
    labels = [NO_WORD] * len(phonemes)
    spans = phoneme_word_spans(phonemes)
    pairs = [(0, len(words), 0, len(spans))]
    if ends_clause is not None:
        written = _cut(list(ends_clause))
        said = _cut([_marked(phonemes, b) for _, b in spans])
        if len(written) == len(said):
            pairs = [(w0, w1 - w0, s0, s1 - s0) for (w0, w1), (s0, s1) in zip(written, said)]
    for w0, n, s0, m in pairs:
        if n == m:
            groups = [(w0 + k, 1, s0 + k, 1) for k in range(n)]
        else:
            want = [_length(own_phonemes(w)) for w in words[w0 : w0 + n]]
            have = [b - a - sum(1 for p in phonemes[a:b] if p in _STRESS) for a, b in spans[s0 : s0 + m]]
            groups = [(w0 + i, a, s0 + j, b) for i, a, j, b in _align(want, have)]
        for g0, a, t0, b in groups:
            if a == 0 or b == 0:
                continue  # a word espeak did not say, or phonemes no word claims
            if a == 1 and b == 1:
                sa, sb = spans[t0]
                labels[sa:sb] = [g0] * (sb - sa)
                continue
            indices = [k for sa, sb in spans[t0 : t0 + b] for k in range(sa, sb)]
            for k, part in enumerate(_share(indices, [_length(own_phonemes(w)) for w in words[g0 : g0 + a]])):
                for idx in part:
                    labels[idx] = g0 + k
    return labels


def _marked(phonemes: Sequence[str], end: int) -> bool:
    """Is the phoneme word ending at ``end`` followed by a clause mark before the next word?"""
    for p in phonemes[end:]:
        if p != " ":
            return p in _MARKS
    return True


def _cut(ends: list[bool]) -> list[tuple[int, int]]:
    """[start, end) runs that close where ``ends`` is true (and at the end)."""
    runs, start = [], 0
    for i, end in enumerate(ends):
        if end:
            runs.append((start, i + 1))
            start = i + 1
    if start < len(ends):
        runs.append((start, len(ends)))
    return runs


def _align(want: Sequence[int], have: Sequence[int]) -> list[tuple[int, int, int, int]]:
    """Cheapest pairing of written words (lengths ``want``) with phoneme words (``have``).

    Returns groups (first word, words, first phoneme word, phoneme words) in order.
    Only cells near the diagonal are searched: espeak joins or splits a few words, so the
    path strays from it by at most the difference in counts plus a little.
    """
    n, m = len(want), len(have)
    cw = [0, *itertools.accumulate(want)]
    ch = [0, *itertools.accumulate(have)]
    band = abs(n - m) + 4
    inf = float("inf")
    cost: dict[tuple[int, int], float] = {(0, 0): 0.0}
    back: dict[tuple[int, int], tuple[int, int]] = {}
    for i in range(n + 1):
        centre = i * m / n if n else 0
        for j in range(max(0, int(centre) - band), min(m, int(centre) + band) + 1):
            here = cost.get((i, j), inf)
            if here == inf:
                continue
            for a, b, extra in _STEPS:
                if i + a > n or j + b > m:
                    continue
                step = here + abs((cw[i + a] - cw[i]) - (ch[j + b] - ch[j])) + extra
                if step < cost.get((i + a, j + b), inf):
                    cost[(i + a, j + b)], back[(i + a, j + b)] = step, (a, b)
    if (n, m) not in back and (n or m):
        return [(0, n, 0, m)]  # outside the band: one group, shared out by length
    i, j, groups = n, m, []
    while i or j:
        a, b = back[(i, j)]
        groups.append((i - a, a, j - b, b))
        i, j = i - a, j - b
    return groups[::-1]


@functools.lru_cache(maxsize=8192)
def _espeak_word(word: str, espeak_voice: str) -> tuple[str, ...]:
    return tuple(p for sentence in phonemize(word, espeak_voice) for p in sentence)


def word_phonemes(espeak_voice: str, slots: PhonemeSlots) -> Callable[[str], Sequence[str]]:
    """A word's phonemes said alone: a slot's own IPA, else espeak's reading (cached)."""

    def own(word: str) -> Sequence[str]:
        parts = SLOT_RE.split(word)
        out: list[str] = []
        for part in parts:
            if part in slots.ipa:
                out.extend(ipa_symbols(slots.ipa[part]))
            elif part.strip():
                out.extend(_espeak_word(part, espeak_voice))
        return out

    return own


def shown_word(word: str, slots: PhonemeSlots) -> str:
    """A word as captions show it: a phoneme slot as the word it stands for, else its /ipa/."""
    return SLOT_RE.sub(lambda m: slots.words.get(m.group(1)) or f"/{slots.ipa.get(m.group(1), '')}/", word)
