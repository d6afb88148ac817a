"""Text clean-up before phonemization: keep what an English voice can say."""

from __future__ import annotations

import re
import unicodedata

from tts_app.text.errors import TextError
from tts_app.text.offsets import nfkc, strip, sub

# Letters of scripts other than Latin make espeak's English voice spell out
# "Chinese letter" and the like; we drop them and say so if nothing is left.
# Only runs that change: a single space stays as it is, so recording (offsets.py) has few edits.
_WS = re.compile(r"[^\S ]\s*| \s+")
# Printable ASCII is always kept: only the rest is looked at, spaces apart from words (a word's span stays its own).
_NOT_PLAIN = re.compile(r"[^\x20-\x7e\s]+|[^\S ]+")


def _keep(ch: str) -> str:
    cat = unicodedata.category(ch)
    if cat.startswith("C"):  # control, format, private use, unassigned
        return " " if ch in "\t\n\r\x0b\x0c" else ""
    if cat.startswith("L") and not unicodedata.name(ch, "").startswith("LATIN"):
        return " "
    if cat == "So":  # emoji and pictographs: decoration, not words
        return " "
    return ch


def clean_chars(text: str) -> str:
    """NFKC, controls and non-Latin letters and emoji out, whitespace collapsed; never raises."""
    text = sub(_NOT_PLAIN, lambda m: "".join(_keep(ch) for ch in m.group(0)), nfkc(text))
    return sub(_WS, " ", text)


def normalize_text(text: str) -> str:
    """Return ``text`` cleaned for the English phonemizer.

    Raises TextError with a one-line reason when nothing speakable remains.
    """
    if not isinstance(text, str):
        raise TextError(f"text must be a string, not {type(text).__name__}")
    if not text.strip():
        raise TextError("text is empty")
    cleaned = strip(clean_chars(text))
    if not any(ch.isalnum() for ch in cleaned):
        if any(unicodedata.category(ch).startswith("L") for ch in text):
            raise TextError("no English text to speak: this voice reads Latin-script text only")
        raise TextError("text has nothing to speak (only punctuation, symbols or emoji)")
    return cleaned
