"""Where each spoken word came from: offset maps recorded by the text rules, composed back to the request's text.

Every rule that rewrites the text goes through ``sub`` (a drop-in for ``pattern.sub``). While a
``Recorder`` is active (``recording``), ``sub`` notes each replacement as an edit
``(in_start, in_end, out_start, out_end)``; one call's edits are a pass, sorted and disjoint.
Composing the passes backwards maps a span of the final text to the original: a character a
rule wrote maps to the whole stretch that rule replaced ("$5" -> "five dollars": both words map
to "$5"), an untouched character to itself. Each pass is mapped with one sweep over its edits,
so the whole mapping is linear in words plus edits. Without a recorder ``sub`` is
``pattern.sub``: the text rules cost nothing more when nobody asks where words came from.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from itertools import accumulate, count
from operator import add, itemgetter
from operator import sub as sub_ints

Edit = tuple[int, int, int, int]  # (in_start, in_end, out_start, out_end)
Span = tuple[int, int] | None  # [start, end) in the original text; None: the text did not hold the word

_ACTIVE: ContextVar[Recorder | None] = ContextVar("tts_app_text_offsets", default=None)
_NON_ASCII_RUN = re.compile(r"[\x00-\x7f]?[^\x00-\x7f]+")  # with the character before: a mark may compose with it
_TOKEN = re.compile(r"\S+")


@dataclass
class Recorder:
    """The passes of one text's rewriting, in order; ``busy`` while a rule's own function runs."""

    passes: list[list[Edit]] = field(default_factory=list)
    busy: int = 0
    length: int | None = None  # the text's length after the last recorded rewrite
    lost: bool = False  # a rewrite that was not recorded changed the length: the map no longer holds

    def follows(self, text: str) -> bool:
        """Does ``text`` continue the recorded rewrites? Else the map is marked lost (a rule that bypassed ``sub``)."""
        if self.length is not None and self.length != len(text):
            self.lost = True
        return not self.lost


@contextmanager
def recording(recorder: Recorder) -> Iterator[Recorder]:
    """Record every ``sub`` in this context (this thread only) into ``recorder``."""
    token = _ACTIVE.set(recorder)
    try:
        yield recorder
    finally:
        _ACTIVE.reset(token)


def _trimmed(old: str, new: str) -> tuple[int, int]:
    """(head, tail): whole words ``old`` and ``new`` share at the start and end ("January 3rd" -> "January third")."""
    limit = min(len(old), len(new))
    head = 0
    while head < limit and old[head] == new[head]:
        head += 1
    head = old.rfind(" ", 0, head) + 1 if head < len(old) or head < len(new) else head
    tail = 0
    while tail < limit - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    if tail and (head + tail < len(old) or head + tail < len(new)):
        space = old.find(" ", len(old) - tail)
        tail = len(old) - space if space >= 0 else 0
    return head, tail


def sub(pattern: re.Pattern, repl: str | Callable[[re.Match], str], text: str) -> str:
    """``pattern.sub(repl, text)``, its replacements recorded as one pass when a recorder is active."""
    rec = _ACTIVE.get()
    if rec is None or rec.busy:  # a rule's own helpers rewrite pieces, not the text: not recorded
        return pattern.sub(repl, text)
    rec.follows(text)
    # Per match only what cannot wait (the match and what replaced it); the edits are worked out after,
    # in one loop, and only for a pass that changed something.
    found: list[tuple[re.Match, str]] = []
    found_append = found.append
    if callable(repl):

        def one(m: re.Match) -> str:
            out = repl(m)
            found_append((m, out))
            return out
    else:

        def one(m: re.Match) -> str:
            out = m.expand(repl) if "\\" in repl else repl
            found_append((m, out))
            return out

    rec.busy += 1  # once for the whole call, not per match
    try:
        result = pattern.sub(one, text)
    finally:
        rec.busy -= 1
    rec.length = len(result)
    if found:
        edits: list[Edit] = []
        shift = 0  # output minus input length of the edits so far
        for m, out in found:
            old = m.group(0)
            if out == old:
                continue
            a, b = m.span()
            # Words kept at either end ("January 3rd" -> "January third"): only a match with a space has a whole
            # word to keep ("3rd." -> "third." shares "." and "rd", no word).
            if (old[:1] == out[:1] or old[-1:] == out[-1:]) and " " in old:
                head, tail = _trimmed(old, out)
                a, b = a + head, b - tail
                edits.append((a, b, a + shift, a + shift + len(out) - head - tail))
            else:
                edits.append((a, b, a + shift, a + shift + len(out)))
            shift += len(out) - len(old)
        if edits:
            rec.passes.append(edits)
    return result


def strip(text: str) -> str:
    """``text.strip()``, recorded (no regex: ``\\s+$`` tried at every space of a long run is quadratic)."""
    out = text.strip()
    rec = _ACTIVE.get()
    if rec is None or rec.busy:
        return out
    rec.follows(text)
    rec.length = len(out)
    if len(out) == len(text):
        return out
    lead = len(text) - len(text.lstrip())
    edits = [(0, lead, 0, 0)] if lead else []
    if lead + len(out) < len(text):
        edits.append((lead + len(out), len(text), len(out), len(out)))
    rec.passes.append(edits)
    return out


def nfkc(text: str) -> str:
    """``unicodedata.normalize("NFKC", text)``, recorded run by run of non-ASCII characters."""
    if text.isascii() or unicodedata.is_normalized("NFKC", text):
        return text
    whole = unicodedata.normalize("NFKC", text)
    rec = _ACTIVE.get()
    if rec is None or rec.busy:
        return whole
    # An ASCII character starts a new run of composition and never joins the one before, so the runs
    # normalise alone; should one ever not, the whole text is one edit (coarse, still correct).
    rec.follows(text)
    trial = Recorder()
    with recording(trial):
        runs = sub(_NON_ASCII_RUN, lambda m: unicodedata.normalize("NFKC", m.group(0)), text)
    rec.passes.extend(trial.passes if runs == whole else [[(0, len(text), 0, len(whole))]])
    rec.length = len(whole)
    return whole


_COUNT: list[list[int]] = [[]]  # 0, 1, 2...: copied by slicing; replaced by a longer one when short


def _count(n: int) -> list[int]:
    """A list of 0, 1, ..., n - 1."""
    have = _COUNT[0]
    if len(have) < n:
        have = list(range(max(n, 2 * len(have), 1 << 13)))
        _COUNT[0] = have  # replaced whole, never grown in place: a reader in another thread keeps its copy
    return have[:n]


# A pass with more edits than this is applied by rebuilding the lists in one sweep: an edit that changes
# the length moves the whole tail of a list, so thousands of edits in place (hostile text: "1x1x1x...")
# made a pass quadratic in the text's length.
_EDITS_IN_PLACE = 8


def _rebuilt(lo: list[int], hi: list[int], edits: Sequence[Edit], values: Sequence[int]) -> tuple[list[int], list[int]]:
    """``lo`` and ``hi`` after one pass's ``edits`` (in order; ``values``: what each writes into ``lo``),
    each list built once: what the edits made one by one in place give."""
    new_lo: list[int] = []
    new_hi: list[int] = []
    lo_at = hi_at = 0
    for (a, b, oa, ob), value in zip(edits, values):
        n = ob - oa
        new_lo += lo[lo_at:a]
        new_lo += [value] * n
        lo_at = b
        new_hi += hi[hi_at : a + 1]
        new_hi += [hi[b]] * n
        hi_at = b + 1
    new_lo += lo[lo_at:]
    new_hi += hi[hi_at:]
    return new_lo, new_hi


def map_back(spans: Sequence[tuple[int, int]], passes: Sequence[Sequence[Edit]]) -> list[tuple[int, int]]:
    """Spans of the final text (in order, non-empty) as spans of the text before the first pass."""
    if not spans:
        return []
    starts, ends = zip(*spans)
    return map_bounds_back(starts, ends, passes)


def map_bounds_back(
    starts: Sequence[int], ends: Sequence[int], passes: Sequence[Sequence[Edit]]
) -> list[tuple[int, int]]:
    """``map_back`` of the spans ``zip(starts, ends)``, given as two lists (no tuples made to be taken apart).

    Every character carries the span of the original it came from, in two lists (``lo[i]``: where
    character i's source starts; ``hi[i]``: where character i - 1's ends, so an exclusive end indexes it
    directly), so a pass costs only its edits: each is a slice assignment (a memmove), not a loop over
    the text or the words. A character a rule wrote takes the span of what the rule replaced: the start
    of its first character to the end of its last (an insertion: of the characters on either side).
    Then every span is looked up at once. (Lists, not int arrays: a one-value list repeated is cheaper
    to make than an array, and the lookups by itemgetter stay in C.)
    """
    if not starts or not passes:
        return list(zip(starts, ends))
    # How long the lists must start: every edit's place, and every span, lies inside them. Past the
    # real end they hold characters as if the text went on untouched, which is how a point at the end maps.
    need, grown = 0, 0
    for edits in passes:
        if edits:
            a, b, _, ob = edits[-1]  # the last edit: the furthest, and what the pass grew the text by
            need = max(need, a - grown, b - grown)
            grown += ob - b
    need = max(need, ends[-1] - grown) + 2
    lo = _count(need)
    hi = lo[:]
    for edits in passes:
        # Read before any edit of the pass: an insertion takes the start of the character after it as the
        # text stood before the pass, though the next edit deletes that character (an empty match beside
        # a deletion); hi[b] lies left of every later edit's place, so it is read as it stood anyway.
        values = [lo[a] for a, _, _, _ in edits]
        if len(edits) > _EDITS_IN_PLACE:
            lo, hi = _rebuilt(lo, hi, edits, values)
            continue
        for (a, b, oa, ob), value in zip(reversed(edits), reversed(values)):  # right to left: places left of an edit have not moved
            n = ob - oa
            lo[a:b] = [value] * n
            hi[a + 1 : b + 1] = [hi[b]] * n
    if len(starts) == 1:  # itemgetter of one index gives the value, not a tuple
        return [(lo[starts[0]], hi[ends[0]])]
    return list(zip(itemgetter(*starts)(lo), itemgetter(*ends)(hi)))


def token_spans(text: str) -> list[tuple[int, int]]:
    """[start, end) of each whitespace token of ``text``."""
    return list(zip(*token_bounds(text)))


def token_bounds(text: str) -> tuple[Sequence[int], Sequence[int]]:
    """The starts and the ends of ``text``'s whitespace tokens, as two sequences."""
    parts = text.split(" ")
    if "" in parts or not text.isprintable():  # runs of spaces, other whitespace (or a control): the regex
        spans = [m.span() for m in _TOKEN.finditer(text)]
        return tuple(zip(*spans)) or ((), ())  # type: ignore[return-value]
    # One space between tokens (what the rules leave): the bounds by running sums, no match objects.
    lens = list(map(len, parts))
    ends = list(map(add, accumulate(lens), count()))
    return list(map(sub_ints, ends, lens)), ends


def written_spans(original: str, spans: Sequence[Span]) -> list[Span]:
    """Spans widened to whole whitespace tokens of ``original``, and spans that overlap joined into one.

    A written token is what a reader finds in their text: "A4" read "A four" is one token, so both
    words are its. Spans come in order (the rules keep order), so one sweep over the tokens does.
    """
    tokens = token_spans(original)
    out: list[Span] = []
    k = j = 0  # k: the first token ending after the span's start; j: the first starting at or after its end
    for span in spans:
        if span is None or span[0] >= span[1]:
            out.append(None)
            continue
        s, e = span
        while k < len(tokens) and tokens[k][1] <= s:
            k += 1
        while j < len(tokens) and tokens[j][0] < e:
            j += 1
        if k < len(tokens) and tokens[k][0] <= s:
            s = tokens[k][0]
        if j > 0 and tokens[j - 1][1] > e:
            e = tokens[j - 1][1]
        out.append((s, e))
    return _joined(out)


def _joined(spans: list[Span]) -> list[Span]:
    """Overlapping spans become their union (each word of the group gets it): written tokens never overlap."""
    out = list(spans)
    group: list[int] = []
    lo = hi = -1
    for i, span in enumerate(spans):
        if span is None:
            continue
        if group and span[0] < hi:
            group.append(i)
            lo, hi = min(lo, span[0]), max(hi, span[1])
            continue
        for g in group:
            out[g] = (lo, hi)
        group, (lo, hi) = [i], span
    for g in group:
        out[g] = (lo, hi)
    return out
