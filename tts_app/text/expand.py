"""English text normalisation: written forms (numbers, money, dates, abbreviations...) to the words a reader says.

Runs before phonemization and sentence splitting, so "Dr. Smith" is one phrase.
Rules, not a model: every rule is a precompiled regex (see abbreviations.py
and normalize_numbers.py); the order below matters.
"""

from __future__ import annotations

import re

from tts_app.text.abbreviations import expand_abbreviations, expand_acronyms, expand_web
from tts_app.text.normalize_numbers import expand_numbers
from tts_app.text.offsets import strip, sub

_SPACES = re.compile(r"\t[ \t]*| [ \t]+")  # runs that change: one space stays as it is


def expand_text(text: str) -> str:
    """Return ``text`` with written forms spelled out as words (English)."""
    text = expand_web(text)  # before anything reads the dots in an address
    text = expand_abbreviations(text)
    text = expand_numbers(text)
    text = expand_acronyms(text)
    return strip(sub(_SPACES, " ", text))
