"""Where an SSML document's text lies in its source: per element, its text and tail, character by character.

The tree expat builds keeps no positions, so the source is scanned again (after expat accepted it:
it is well-formed, has no DTD and so no entities but the five predefined ones). One pass, regexes
that never backtrack: linear in the document. Each text or tail is a ``Run``: the characters the
tree holds, and for each the [start, end) of the source it was read from (``&amp;`` is one
character from five, ``\\r\\n`` one from two, a CDATA section's characters their own).

``visible`` is the source with every piece of markup (tags, comments, processing instructions, CDATA
brackets) blanked to spaces, the same length: the whitespace tokens of what a reader wrote.
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass, field
from xml.etree.ElementTree import Element

_PLAIN = re.compile(r"[^<&\r]+")
# The rest of a tag after its "<": attribute values may hold ">" inside quotes. Quotes and other
# characters are disjoint classes, so the match never backtracks.
_TAG_REST = re.compile(r"""[^>"']*(?:(?:"[^"]*"|'[^']*')[^>"']*)*>""")
_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}
_SKIPPED = (("<!--", "-->"), ("<?", "?>"))  # inside a text, read by neither the tree nor a reader


@dataclass
class Run:
    """One text or tail of the tree, and per character the source span it came from."""

    text: list[str] = field(default_factory=list)  # pieces, joined by ``joined``
    lo: array = field(default_factory=lambda: array("i"))  # per character: where its source starts
    hi: array = field(default_factory=lambda: array("i"))  # per character: where its source ends

    def joined(self) -> str:
        return "".join(self.text)

    def add(self, text: str, start: int, end: int) -> None:
        """``text`` read from source[start:end]: one character from a longer span, or each its own."""
        self.text.append(text)
        if len(text) == end - start:
            self.lo.extend(range(start, end))
            self.hi.extend(range(start + 1, end + 1))
        else:
            self.lo.extend([start] * len(text))
            self.hi.extend([end] * len(text))


@dataclass
class Placed:
    """An element's place in the source: its content's [start, end), its text and its tail."""

    inner: tuple[int, int]
    text: Run = field(default_factory=Run)
    tail: Run = field(default_factory=Run)


@dataclass
class SsmlSource:
    visible: str  # the source, markup blanked to spaces
    elements: dict[int, Placed]  # by id() of the tree's element

    def inner(self, el: Element) -> tuple[int, int] | None:
        """The element's content, trimmed of markup and spaces at both ends (None: nothing a reader wrote)."""
        a, b = self.elements[id(el)].inner
        while a < b and self.visible[a].isspace():
            a += 1
        while b > a and self.visible[b - 1].isspace():
            b -= 1
        return (a, b) if a < b else None


def _char_ref(name: str) -> str | None:
    if name in _ENTITIES:
        return _ENTITIES[name]
    try:
        return chr(int(name[2:], 16) if name[:2] == "#x" else int(name[1:])) if name[:1] == "#" else None
    except (ValueError, OverflowError):
        return None


class _Scan:
    def __init__(self, src: str) -> None:
        self.src = src
        self.placed: list[Placed] = []
        self.open: list[int] = []  # indices into placed of the elements not yet closed
        self.run: Run | None = None  # where characters go now (None: before the root or after it)
        self.blank: list[tuple[int, int]] = []  # markup: [start, end) to blank

    def markup(self, i: int) -> int | None:
        """Read the markup at ``src[i] == '<'``; the index after it, None where the source is not what expat read."""
        src = self.src
        for opener, closer in _SKIPPED:
            if src.startswith(opener, i):
                end = src.find(closer, i + len(opener))
                if end < 0:
                    return None
                self.blank.append((i, end + len(closer)))
                return end + len(closer)
        if src.startswith("<![CDATA[", i):
            end = src.find("]]>", i + 9)
            if end < 0:
                return None
            self.blank += [(i, i + 9), (end, end + 3)]
            self.text(i + 9, end)
            return end + 3
        m = _TAG_REST.match(src, i + 1)
        if m is None or src.startswith("<!", i):
            return None
        end = m.end()
        self.blank.append((i, end))
        if src[i + 1] == "/":
            if not self.open:
                return None
            placed = self.placed[self.open.pop()]
            placed.inner = (placed.inner[0], i)
            self.run = placed.tail if self.open else None  # after the root: nothing the tree keeps
        else:
            placed = Placed((end, end))
            self.placed.append(placed)
            if src[end - 2] == "/":  # <break/>: empty, its tail next (an empty root: nothing after it is kept)
                self.run = placed.tail if self.open else None
            else:
                self.open.append(len(self.placed) - 1)
                self.run = placed.text
        return end

    def text(self, start: int, end: int) -> None:
        """Character data of source[start:end] (no markup in it), line ends as expat reads them."""
        if self.run is None:
            return
        at = start
        while at < end:
            cr = self.src.find("\r", at, end)
            if cr < 0:
                self.run.add(self.src[at:end], at, end)
                return
            if cr > at:
                self.run.add(self.src[at:cr], at, cr)
            two = self.src.startswith("\r\n", cr) and cr + 1 < end
            self.run.add("\n", cr, cr + 2 if two else cr + 1)
            at = cr + 2 if two else cr + 1

    def scan(self) -> bool:
        src, i, n = self.src, 0, len(self.src)
        while i < n:
            ch = src[i]
            if ch == "<":
                nxt = self.markup(i)
                if nxt is None:
                    return False
                i = nxt
            elif ch == "&":
                end = src.find(";", i)
                got = _char_ref(src[i + 1 : end]) if end > 0 else None
                if got is None:
                    return False
                if self.run is not None:
                    self.run.add(got, i, end + 1)
                i = end + 1
            elif ch == "\r":
                self.text(i, i + 1 + (src.startswith("\r\n", i)))
                i += 1 + src.startswith("\r\n", i)
            else:
                end = _PLAIN.match(src, i).end()
                self.text(i, end)
                i = end
        return not self.open

    def visible(self) -> str:
        pieces, at = [], 0
        for a, b in self.blank:
            pieces += [self.src[at:a], " " * (b - a)]
            at = b
        pieces.append(self.src[at:])
        return "".join(pieces)


def locate(src: str, root: Element) -> SsmlSource | None:
    """Where each element of ``root`` (parsed from ``src``) and its text lie in ``src``.

    None when the scan does not find the text the tree holds (a feature of XML this scan does not
    read): no positions rather than wrong ones.
    """
    scan = _Scan(src)
    if not scan.scan():
        return None
    elements = list(root.iter())
    if len(elements) != len(scan.placed):
        return None
    for el, placed in zip(elements, scan.placed):
        if placed.text.joined() != (el.text or "") or placed.tail.joined() != (el.tail or ""):
            return None
    return SsmlSource(scan.visible(), {id(el): placed for el, placed in zip(elements, scan.placed)})
