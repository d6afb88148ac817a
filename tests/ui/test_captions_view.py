"""The page's live captions show the reader's words: one span a written token, its times the union of its spoken words.

Fails on the code before: the spans held the spoken words ("Doctor", "five", "dollars").
"""

from __future__ import annotations

import re

from tts_app.text.word_timing import WordTiming
from tts_app.web.ui.speak.captions_view import EMPTY, captions_html

LINE = [
    WordTiming("Doctor", 0.0, 0.4, "model", 0, 3, "Dr."),
    WordTiming("Lee", 0.45, 0.7, "model", 4, 7, "Lee"),
    WordTiming("five", 0.8, 1.0, "model", 13, 15, "$5"),
    WordTiming("dollars", 1.0, 1.4, "model", 13, 15, "$5"),
    WordTiming("A<b>", 1.5, 1.7),  # a word the text did not hold: shown as spoken, escaped
]


def test_live_captions_highlight_the_written_text() -> None:
    page = captions_html([LINE, []], "run-1")
    spans = re.findall(r'<span data-s="([\d.]+)" data-e="([\d.]+)"(?: title="([^"]*)")?>([^<]*)</span>', page)
    assert spans == [
        ("0.000", "0.400", "Doctor", "Dr."),
        ("0.450", "0.700", "", "Lee"),
        ("0.800", "1.400", "five dollars", "$5"),
        ("1.500", "1.700", "", "A&lt;b&gt;"),
    ]
    assert page.count("<p>") == 1 and 'data-run="run-1"' in page
    assert captions_html([[]], "x") == EMPTY
