"""WordTiming: where a written word is heard in a request's audio (backends, alignment and captions share it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WordTiming:
    """Where a word is heard in the request's audio, in seconds from its first sample; ``word`` is the spoken form."""

    word: str
    start: float
    end: float
    source: str = "model"  # "model": the model's own durations; "aligned": forced alignment; "even": a clause shared out by length
    # Where the word was read from in the request's text: [text_start, text_end) and that span (``written``);
    # None where the text did not hold the word (an empty SSML <sub>'s alias, a model's own words). "$5" gives
    # "five" and "dollars", both with the span of "$5".
    text_start: int | None = None
    text_end: int | None = None
    written: str | None = None
