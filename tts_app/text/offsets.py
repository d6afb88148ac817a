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
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

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
    if old[:1] != new[:1] and old[-1:] != new[-1:]:  # the usual case ("$5" -> "five dollars"): no loop
        return 0, 0
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
    edits: list[Edit] = []
    shift = 0  # output minus input length of the edits so far

    def one(m: re.Match) -> str:
        nonlocal shift
        rec.busy += 1
        try:
            out = repl(m) if callable(repl) else m.expand(repl)
        finally:
            rec.busy -= 1
        old = m.group(0)
        if out != old:
            head, tail = _trimmed(old, out)
            a, b = m.start() + head, m.end() - tail
            edits.append((a, b, a + shift, a + shift + len(out) - head - tail))
            shift += len(out) - len(old)
        return out

    result = pattern.sub(one, text)
    if edits:
        rec.passes.append(edits)
    rec.length = len(result)
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


def _map_points(points: Sequence[int], edits: Sequence[Edit], ends: bool) -> list[int]:
    """Positions of one pass's output mapped to its input; ``points`` non-decreasing (starts, or exclusive ends).

    Between two edits every point moves by the same shift: those runs are found by bisection and
    mapped by a list comprehension, so the cost is the points plus the edits times a logarithm.
    """
    out: list[int] = []
    at, shift, bump = 0, 0, 1 if ends else 0  # an end stands for the character before it
    for a, b, oa, ob in edits:
        before = bisect_left(points, oa + bump, at)  # the character lies before what the rule wrote
        out.extend([p - shift for p in points[at:before]] if shift else points[at:before])
        inside = bisect_left(points, ob + bump, before)  # a character the rule wrote: its whole source
        out.extend([b if ends else a] * (inside - before))
        at, shift = inside, ob - b
    out.extend([p - shift for p in points[at:]] if shift else points[at:])
    return out


def map_back(spans: Sequence[tuple[int, int]], passes: Sequence[Sequence[Edit]]) -> list[tuple[int, int]]:
    """Spans of the final text (in order, non-empty) as spans of the text before the first pass."""
    starts, ends = [s for s, _ in spans], [e for _, e in spans]
    for edits in reversed(passes):
        starts, ends = _map_points(starts, edits, False), _map_points(ends, edits, True)
    return list(zip(starts, ends))


def token_spans(text: str) -> list[tuple[int, int]]:
    """[start, end) of each whitespace token of ``text``."""
    return [m.span() for m in _TOKEN.finditer(text)]


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
