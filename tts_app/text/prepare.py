"""The whole text side for one request: SSML or plain text -> lexicon -> normalisation -> phonemes -> chunks.

Normalisation runs before espeak splits sentences, so "Dr. Smith" stays one phrase.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from tts_app.text.chunk import Chunk, chunk_sentences
from tts_app.text.cost import check_pauses
from tts_app.text.errors import TextError
from tts_app.text.expand import expand_text
from tts_app.text.lexicon import Lexicon
from tts_app.text.normalize import normalize_text
from tts_app.text.offsets import Recorder, Span, map_bounds_back, recording, written_spans
from tts_app.text.phonemize import phonemize
from tts_app.text.slots import SLOT_RE, PhonemeSlots, ipa_symbols
from tts_app.text.ssml import JOIN, ParsedSsml, Segment, is_ssml, parse_ssml
from tts_app.text.words import NO_WORD, clause_ends, label_phonemes, shown_word, word_phonemes, written_word_bounds, written_words

_SENTENCE_END = (".", "!", "?")
_MARKS = frozenset(".,;:!?")
_LEADING_MARKS = re.compile(r"^[\s.,;:!?]*")
_FINAL_ARTICLE = re.compile(r"(?:^|\s)[aA]\s*$")


def _phonemize_fragment(part: str, espeak_voice: str) -> list[list[str]]:
    """espeak reads a fragment-final "a" (the word before a slot) as the letter; say the article."""
    if _FINAL_ARTICLE.search(part) is None:
        return phonemize(part, espeak_voice)
    head = part.rstrip()[:-1]
    got = phonemize(head, espeak_voice) if head.strip() else []
    if not got:
        return [["ɐ"]]
    got[-1] = [*got[-1], *([] if got[-1][-1:] == [" "] else [" "]), "ɐ"]
    return got


@dataclass(frozen=True)
class TextOptions:
    """How to read one request's text."""

    normalize: bool = True
    lexicon: Lexicon | None = None
    sentence_pause_s: float = 0.25
    clause_pause_s: float = 0.12
    max_phonemes: int = 400
    first_chunk_phonemes: int = 160  # the first chunk's cap: its text stage is what the first audio waits for
    max_pause_s: float | None = None  # the most <break> seconds in all (tts_app.text.cost); None: no cap


@dataclass(frozen=True)
class PreparedText:
    text: str  # what was phonemized, after normalisation (phoneme slots shown as /ipa/)
    chunks: list[Chunk]
    warnings: list[str] = field(default_factory=list)
    words: list[str] = field(default_factory=list)  # the words as spoken, as captions show them; Chunk.word_of indexes them
    break_s: float = 0.0  # of the chunks' pauses, the seconds SSML <break>s asked for (the rest: sentence ends, <p>)
    # per word: [start, end) of the request's text it was read from (whole written tokens; for SSML, of the
    # source as sent), None where the text did not hold it (an empty SSML <sub>'s alias); several words of
    # one written token ("$5": five dollars) share it
    spans: list[Span] = field(default_factory=list)

    def written(self, original: str) -> list[str | None]:
        """Per word, the written token it was read from (``original`` is the request's text)."""
        return [original[s[0] : s[1]] if s is not None else None for s in self.spans]


def phonemize_spliced(text: str, espeak_voice: str, slots: PhonemeSlots) -> list[list[str]]:
    """Phonemes by sentence, with each slot's IPA spliced in as a word of its own."""
    sentences: list[list[str]] = [[]]
    for part in SLOT_RE.split(text):
        if part in slots.ipa:
            _append(sentences, [ipa_symbols(slots.ipa[part])])
            continue
        # Punctuation right after a slot ("a /təmˈɑːtoʊ/. Then"): espeak skips a fragment's leading marks.
        lead = _LEADING_MARKS.match(part).group(0)
        marks = [ch for ch in lead if ch in _MARKS]
        if marks and sentences[-1]:
            sentences[-1].extend(marks)
            if marks[-1] in _SENTENCE_END:
                sentences.append([])
        rest = part[len(lead) :]
        if rest.strip():
            _append(sentences, _phonemize_fragment(rest, espeak_voice))
            if rest.rstrip().endswith(_SENTENCE_END):
                sentences.append([])
    return [s for s in sentences if any(p.strip() for p in s)]


def _append(sentences: list[list[str]], got: list[list[str]]) -> None:
    """The first sentence of ``got`` continues the sentence left open; the rest follow."""
    if not got:
        return
    current = sentences[-1]
    if current and current[-1] != " ":
        current.append(" ")
    current.extend(got[0])
    sentences.extend(list(s) for s in got[1:])


def _show(text: str, slots: PhonemeSlots) -> str:
    return SLOT_RE.sub(lambda m: f"/{slots.ipa.get(m.group(1), '')}/", text)


def prepare_text(text: str, espeak_voice: str, id_map: Mapping[str, object], options: TextOptions) -> PreparedText:
    """Chunks ready for ``to_ids``; TextError with a one-line reason for text that cannot be spoken."""
    if not isinstance(text, str):
        raise TextError(f"text must be a string, not {type(text).__name__}")
    parsed, base = _segments(text)
    segments, slots, warnings = parsed.segments, parsed.slots, parsed.warnings
    break_s = sum(seg.pause_after_s for seg in segments if seg.pause_is_break and seg.pause_after_s)
    if options.max_pause_s is not None:  # before any phonemes are made
        check_pauses(break_s, options.max_pause_s)
    if options.lexicon is not None:
        options.lexicon.check(id_map)
    chunks: list[Chunk] = []
    shown: list[str] = []
    all_words: list[str] = []
    spans: list[Span] = []
    final_break = False
    for seg in segments:
        words, here = _read_segment(seg, base, options, slots)
        spans.extend(here)
        shown.append(_show(words, slots))
        sentences = phonemize_spliced(words, espeak_voice, slots)
        word_of = _word_labels(sentences, words, len(all_words), word_phonemes(espeak_voice, slots))
        all_words.extend(shown_word(w, slots) for w in written_words(words))
        first_cap = options.first_chunk_phonemes if not chunks else None
        pieces = chunk_sentences(sentences, options.max_phonemes, options.sentence_pause_s, options.clause_pause_s, word_of, first_cap)
        if not pieces:
            continue
        pause = seg.pause_after_s
        if pause is None or (pause == JOIN and words.rstrip().endswith(_SENTENCE_END)):
            pause = options.sentence_pause_s
        elif pause == JOIN:
            pause = 0.0
        pieces[-1] = replace(pieces[-1], pause_after_s=pause)
        chunks.extend(replace(c, rate=seg.rate) for c in pieces)
        final_break = seg.pause_is_break
    slots.check(id_map)
    if not chunks:
        raise TextError("text has nothing to speak")
    # The end of the utterance gets no pause, unless the SSML asked for one with a final <break>.
    if not final_break:
        chunks[-1] = replace(chunks[-1], pause_after_s=0.0)
    return PreparedText(" ".join(shown), chunks, warnings, all_words, break_s, written_spans(parsed.visible or text, spans))


def _segments(text: str) -> tuple[ParsedSsml, Recorder | None]:
    """The request as segments (SSML's, or plain text cleaned as one) and, for plain text, the record of how
    its cleaning moved the characters (SSML segments carry their characters' places themselves)."""
    if is_ssml(text):
        return parse_ssml(text), None
    with recording(Recorder()) as base:
        segment = Segment(normalize_text(text))
    return ParsedSsml([segment], PhonemeSlots(), visible=text), base


def _read_segment(seg: Segment, base: Recorder | None, options: TextOptions, slots: PhonemeSlots) -> tuple[str, list[Span]]:
    """``_read`` of one segment, its spans in the request's text."""
    if seg.source is None:
        return _read(seg.text, base, options, slots)
    # SSML: spans of the segment's own text, then through its characters' places in the document
    words, here = _read(seg.text, Recorder(length=len(seg.text)), options, slots)
    return words, _placed(here, seg.source)


def _placed(spans: list[Span], source: tuple[array, array]) -> list[Span]:
    """Spans of an SSML segment's text as spans of the document (None where it did not hold the characters)."""
    lo, hi = source
    out: list[Span] = []
    for span in spans:
        a, b = (lo[span[0]], hi[span[1] - 1]) if span is not None and span[0] < span[1] else (-1, -1)
        out.append((a, b) if 0 <= a < b else None)
    return out


def _read(text: str, base: Recorder | None, options: TextOptions, slots: PhonemeSlots) -> tuple[str, list[Span]]:
    """A segment's text as read (lexicon, normalisation), and per written word of it the span of the request's
    text it came from (``base``: how the segment maps to the request; None: it does not)."""
    known = base is not None and base.follows(text)
    with recording(Recorder(list(base.passes), length=len(text)) if base is not None else Recorder()) as rec:
        words = options.lexicon.apply(text, slots) if options.lexicon is not None else text
        if options.normalize:
            words = expand_text(words)
    starts, ends = written_word_bounds(words)
    # A rule that rewrote the text without recording (a length the record does not expect): no spans, not wrong ones.
    if not known or not rec.follows(words):
        return words, [None] * len(starts)
    return words, map_bounds_back(starts, ends, rec.passes)


def _word_labels(sentences: list[list[str]], text: str, first: int, own: Callable[[str], Sequence[str]]) -> list[list[int]]:
    """Per sentence, per phoneme: the index of its written word in the request (``first`` + index in ``text``)."""
    flat = label_phonemes([p for s in sentences for p in s], written_words(text), own, clause_ends(text))
    out, at = [], 0
    for s in sentences:
        out.append([w + first if w != NO_WORD else NO_WORD for w in flat[at : at + len(s)]])
        at += len(s)
    return out
