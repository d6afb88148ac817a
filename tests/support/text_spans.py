"""``word_sources``: the text side of captions (spoken word, span of the request's text) without phonemizing.

The product gets the same pairs from ``prepare_text`` (``PreparedText.words`` and ``.spans``), which also runs
espeak; the text tests (spans on 40k-character hostile inputs, hypothesis properties) need only the text side,
so this walks the same segments with prepare.py's own helpers. tests/unit/text/test_text_spans.py checks that
it gives exactly what ``prepare_text`` gives, so it cannot drift from the product.
"""

from __future__ import annotations

from tts_app.text.offsets import Span, written_spans
from tts_app.text.prepare import TextOptions, _read_segment, _segments
from tts_app.text.words import shown_word, written_words


def word_sources(text: str, options: TextOptions) -> list[tuple[str, Span]]:
    """(spoken word, span of ``text`` it was read from) for plain text or SSML, as ``prepare_text`` finds them."""
    parsed, base = _segments(text)
    said: list[str] = []
    spans: list[Span] = []
    for seg in parsed.segments:
        words, here = _read_segment(seg, base, options, parsed.slots)
        said += written_words(words)
        spans += here
    if parsed.slots.ipa:  # a lexicon's IPA entry or an SSML <phoneme>: the slot shown as the word it stands for
        said = [shown_word(w, parsed.slots) for w in said]
    return list(zip(said, written_spans(parsed.visible or text, spans)))
