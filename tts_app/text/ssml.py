"""A subset of SSML, parsed with defusedxml (no entity expansion, no DTD, no external fetches).

Supported: <speak>, <break time|strength>, <phoneme alphabet="ipa" ph>, <say-as interpret-as=
characters|spell-out|cardinal|number|ordinal|date|telephone>, <sub alias>, <prosody rate>, <p>, <s>.
Other elements are read as their text, with a warning in the log.
"""

from __future__ import annotations

import logging
import re
from array import array
from dataclasses import dataclass, field
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import DefusedXMLParser

from tts_app.text.abbreviations import spell
from tts_app.text.errors import TextError
from tts_app.text.normalize import clean_chars
from tts_app.text.normalize_numbers import month_day, telephone
from tts_app.text.number_words import cardinal, ordinal, year
from tts_app.text.offsets import Recorder, map_back, recording
from tts_app.text.slots import PhonemeSlots
from tts_app.text.ssml_limits import LimitedTreeBuilder, ssml_max_depth, ssml_max_elements
from tts_app.text.ssml_source import Run, SsmlSource, locate

_LOGGER = logging.getLogger(__name__)

MAX_BREAK_S = 10.0
PARAGRAPH_PAUSE_S = 0.5
JOIN = -1.0  # a segment boundary that adds no pause of its own (a rate change mid-sentence)
_STRENGTHS = {"none": 0.0, "x-weak": 0.1, "weak": 0.2, "medium": 0.4, "strong": 0.7, "x-strong": 1.2}
_RATES = {"x-slow": 0.5, "slow": 0.75, "medium": 1.0, "default": 1.0, "fast": 1.25, "x-fast": 1.6}
_TIME_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s)\s*$")
_RATE_RE = re.compile(r"^\s*([+-]?\d+(?:\.\d+)?)\s*(%?)\s*$")
_NONE = object()  # a container that cuts no segment (<speak>, unknown elements)
_BOUNDARIES: dict[str, float | None] = {"p": PARAGRAPH_PAUSE_S, "s": None, "prosody": JOIN}  # the pause each container ends with


def is_ssml(text: str) -> bool:
    return text.lstrip().startswith(("<speak", "<?xml"))


@dataclass
class Segment:
    """Text spoken at one rate, then a pause: ``pause_after_s`` None is the usual sentence pause, JOIN none."""

    text: str
    rate: float = 1.0
    pause_after_s: float | None = None
    pause_is_break: bool = False  # the pause came from <break>: exact, and kept even at the very end
    # per character of ``text``: [lo, hi) of the SSML source it was read from, -1 where the source did not
    # hold it (an empty <sub>'s alias); None: positions not known
    source: tuple[array, array] | None = None


@dataclass
class ParsedSsml:
    segments: list[Segment]
    slots: PhonemeSlots
    warnings: list[str] = field(default_factory=list)
    visible: str | None = None  # the source with its markup blanked (ssml_source.py); None: positions not known


def _break_seconds(el: Element) -> float:
    t = el.get("time")
    if t is not None:
        m = _TIME_RE.match(t)
        if m is None:
            raise TextError(f"SSML <break time={t[:20]!r}>: write a time like 500ms or 1.5s")
        seconds = float(m.group(1)) / (1000.0 if m.group(2) == "ms" else 1.0)
        if seconds > MAX_BREAK_S:
            raise TextError(f"SSML <break>: at most {MAX_BREAK_S:g} s, got {t!r}")
        return seconds
    strength = el.get("strength", "medium")
    if strength not in _STRENGTHS:
        raise TextError(f"SSML <break strength={strength[:20]!r}>: use one of {', '.join(_STRENGTHS)}")
    return _STRENGTHS[strength]


def _rate(value: str) -> float:
    if value in _RATES:
        return _RATES[value]
    m = _RATE_RE.match(value)
    if m is None:
        raise TextError(f"SSML <prosody rate={value[:20]!r}>: use x-slow..x-fast, a percentage or a number")
    n = float(m.group(1))
    if m.group(2):
        rate = 1.0 + n / 100.0 if value.strip()[0] in "+-" else n / 100.0
    else:
        rate = n
    if not 0.25 <= rate <= 4.0:
        raise TextError(f"SSML <prosody rate={value[:20]!r}>: the rate must be between 25% and 400%")
    return rate


def _say_date(text: str, fmt: str) -> str:
    found = re.findall(r"\d+", text)
    order = {"mdy": "mdy", "dmy": "dmy", "ymd": "ymd", "md": "md", "dm": "dm"}.get(fmt or "mdy")
    if order is None or len(found) != len(order) or any(len(p) > 4 for p in found):  # int() of a bounded run only
        raise TextError(f"SSML <say-as interpret-as='date'>: cannot read {text[:30]!r} as {fmt or 'mdy'}")
    v = dict(zip(order, (int(p) for p in found)))
    if not (1 <= v["m"] <= 12 and 1 <= v["d"] <= 31):
        raise TextError(f"SSML <say-as interpret-as='date'>: {text[:30]!r} is not a valid date")
    return month_day(v["m"], v["d"], str(v["y"]) if "y" in v else None)


def _say_as(el: Element, text: str) -> str:
    kind = (el.get("interpret-as") or "").lower()
    digits_only = re.sub(r"[,\s]", "", text)
    if kind in ("characters", "spell-out", "verbatim"):
        return spell(text)
    if kind in ("cardinal", "number") and re.fullmatch(r"-?\d+(\.\d+)?", digits_only):
        return cardinal(digits_only)
    if kind == "ordinal" and re.fullmatch(r"\d+", digits_only):
        return ordinal(digits_only)
    if kind == "date":
        return _say_date(text, (el.get("format") or "").lower())
    if kind == "telephone":
        return telephone(text)
    if kind == "year" and re.fullmatch(r"\d{3,4}", digits_only):
        return year(digits_only)
    raise TextError(f"SSML <say-as interpret-as={kind[:20]!r}>: cannot read {text[:30]!r} that way")


class _Builder:
    """Walks the tree once, cutting segments at breaks, sentences, paragraphs and rate changes."""

    def __init__(self, source: SsmlSource | None) -> None:
        self.source = source
        self.segments: list[Segment] = []
        self.buf: list[str] = []
        self.lo, self.hi = array("i"), array("i")  # per character of the buffer: its source span (see Segment)
        self.rates = [1.0]
        self.slots = PhonemeSlots()
        self.warnings: list[str] = []
        self._warned: set[str] = set()

    def add_run(self, el: Element, which: str) -> None:
        """The element's ``text`` or ``tail``, each character with the source span it came from."""
        text = getattr(el, which)
        if not text:
            return
        if self.source is None:
            self.add(text, None)
            return
        run: Run = getattr(self.source.elements[id(el)], which)
        rec = Recorder()
        with recording(rec):
            cleaned = clean_chars(text)
        if not rec.passes:  # unchanged: the run's own positions
            self.buf.append(cleaned)
            self.lo.extend(run.lo)
            self.hi.extend(run.hi)
            return
        if not rec.follows(cleaned):
            self.add(text, None)
            return
        self.buf.append(cleaned)
        # A character a rule wrote takes the span of what it replaced ("\u2026" -> "...": three from one).
        for a, b in map_back(list(zip(range(len(cleaned)), range(1, len(cleaned) + 1))), rec.passes):
            self.lo.append(run.lo[a] if a < b else -1)
            self.hi.append(run.hi[b - 1] if a < b else -1)

    def add(self, text: str, span: tuple[int, int] | None, clean: bool = True) -> None:
        """Text the document did not hold as written (a <say-as> reading, a <sub> alias): every character
        from ``span`` of the source (None: from nowhere in it)."""
        text = clean_chars(text) if clean else text
        lo, hi = span if span is not None else (-1, -1)
        self.buf.append(text)
        self.lo.extend(array("i", (lo,)) * len(text))
        self.hi.extend(array("i", (hi,)) * len(text))

    def cut(self, pause: float | None, add: bool = False) -> None:
        """End the current segment with ``pause``; with ``add`` a pause adds to one just ended (break after break)."""
        whole = "".join(self.buf)
        text = whole.strip()
        lead = len(whole) - len(whole.lstrip())
        lo, hi = self.lo[lead : lead + len(text)], self.hi[lead : lead + len(text)]
        self.buf, self.lo, self.hi = [], array("i"), array("i")
        if text:
            source = (lo, hi) if self.source is not None else None
            self.segments.append(Segment(text, self.rates[-1], pause, add, source))
        elif self.segments:
            last = self.segments[-1]
            if add and last.pause_is_break:
                last.pause_after_s += pause
            elif add or last.pause_after_s == JOIN:
                last.pause_after_s, last.pause_is_break = pause, add
        elif add and pause:
            self.warn("a <break> before any text is ignored")

    def warn(self, message: str) -> None:
        if message in self._warned:  # once per request: 2,000 unknown elements are one line in the log, not 2,000
            return
        self._warned.add(message)
        self.warnings.append(message)
        _LOGGER.warning("SSML: %s", message)

    def walk(self, root: Element) -> None:
        """Depth first with an explicit stack (no recursion on the document's nesting)."""
        stack: list[tuple[Element, bool]] = [(root, False)]  # (element, its closing tag reached)
        while stack:
            el, closing = stack.pop()
            tag = el.tag.rpartition("}")[2]  # drop the SSML namespace
            if closing:
                self.close_container(tag)
            elif self.open(el, tag):  # a container: its children, then its closing tag
                stack.append((el, True))
                stack.extend((child, False) for child in reversed(el))
                continue
            self.add_run(el, "tail")

    def open(self, el: Element, tag: str) -> bool:
        """Read a leaf element whole, or open a container (True) whose children come next."""
        if tag == "break":
            self.cut(_break_seconds(el), add=True)
        elif tag == "phoneme":
            if (el.get("alphabet") or "ipa").lower() != "ipa":
                raise TextError(f"SSML <phoneme alphabet={el.get('alphabet')[:20]!r}>: only ipa is supported")
            ph = el.get("ph")
            if not ph:
                raise TextError("SSML <phoneme> needs a ph attribute")
            slot = self.slots.add(ph, f"SSML <phoneme ph={ph[:30]!r}>", "".join(el.itertext()))
            self.add(f" {slot} ", self._inner(el), clean=False)
        elif tag == "say-as":
            self.add(f" {_say_as(el, ''.join(el.itertext()))} ", self._inner(el))
        elif tag == "sub":
            alias = el.get("alias")
            if alias is None:
                raise TextError("SSML <sub> needs an alias attribute")
            self.add(f" {alias} ", self._inner(el))
        else:
            if tag not in ("speak", "p", "s", "prosody"):
                self.warn(f"unknown element <{tag[:30]}> read as text")
            self.open_container(el, tag)
            return True
        return False

    def _inner(self, el: Element) -> tuple[int, int] | None:
        """What the reader wrote inside a leaf element: the span its reading is captioned with."""
        return self.source.inner(el) if self.source is not None else None

    def open_container(self, el: Element, tag: str) -> None:
        if _BOUNDARIES.get(tag, _NONE) is not _NONE:
            self.cut(JOIN)
        if tag == "prosody":
            self.rates.append(self.rates[-1] * _rate(el.get("rate", "medium")))
            if set(el.keys()) - {"rate"}:
                self.warn(f"<prosody> attributes other than rate are ignored: {', '.join(sorted(el.keys()))[:60]}")
        self.add_run(el, "text")

    def close_container(self, tag: str) -> None:
        boundary = _BOUNDARIES.get(tag, _NONE)
        if boundary is not _NONE:
            self.cut(boundary)
        if tag == "prosody":
            self.rates.pop()


def parse_ssml(text: str) -> ParsedSsml:
    """Parse ``<speak>...</speak>``; TextError (one line, with the position) when it is not well-formed."""
    parser = DefusedXMLParser(target=LimitedTreeBuilder(ssml_max_depth(), ssml_max_elements()), forbid_dtd=True)
    try:
        parser.feed(text.strip())
        root = parser.close()
    except ParseError as e:
        line, col = e.position
        reason = str(e).split(":")[0]
        raise TextError(f"SSML is not well-formed: {reason} at line {line}, column {col + 1}") from None
    except DefusedXmlException:
        raise TextError("SSML may not contain a DTD, entity declarations or external references") from None
    if root.tag.rpartition("}")[2] != "speak":
        raise TextError("SSML must have <speak> as its root element")
    source = locate(text, root)  # the request's own text: spans index it, not the stripped copy
    builder = _Builder(source)
    builder.walk(root)
    builder.cut(None)
    return ParsedSsml(builder.segments, builder.slots, builder.warnings, source.visible if source is not None else None)
