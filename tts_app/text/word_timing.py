"""WordTiming: where a written word is heard in a request's audio (backends, alignment and captions share it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WordTiming:
    """Where a written word is heard in the request's audio, in seconds from its first sample."""

    word: str
    start: float
    end: float
    source: str = "model"  # "model": the model's own durations; "aligned": forced alignment; "even": a clause shared out by length
