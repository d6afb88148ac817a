"""A document job's time left: its characters done against its total, steadied by the engine's pace.

The first piece is often a 21-character heading that paid the job's start-up costs; projecting
its pace over 10,000 characters said "18 minutes" for a job that took 33 s. So the job's own
pace (seconds per character) is blended with a prior from the engine's measured speed, the
prior weighing as much as ``PRIOR_CHARS`` characters; with no prior, nothing is said (the page
shows "estimating…") until ``MIN_DONE_CHARS`` characters and ``MIN_DONE_FRACTION`` of the text are read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Seconds of speech per character at speed 1: 0.057 measured on the Harvard sentences with the
# embedded voice, plus the pauses a document puts between its pieces.
AUDIO_S_PER_CHAR = 0.065
PRIOR_CHARS = 400  # how many characters of the job's own pace weigh as much as the prior
MIN_DONE_CHARS = 400
MIN_DONE_FRACTION = 0.05
MIN_LEFT_S = 1.0  # a piece that runs long says "0:01", never a negative time
MIN_ENGINE_AUDIO_S = 2.0  # the engine's pace is a prior only once it has made this much audio


def engine_prior_s_per_char(stats: Mapping[str, Any] | None, speed: float) -> float | None:
    """Seconds per character the engine's figures so far predict (its step time per second of audio)."""
    if not stats:
        return None
    audio_s, step_s = float(stats.get("audio_s") or 0.0), float(stats.get("step_time_s") or 0.0)
    if audio_s < MIN_ENGINE_AUDIO_S or step_s <= 0.0:
        return None
    return step_s / audio_s * AUDIO_S_PER_CHAR / max(speed, 1e-3)


def time_left_s(
    done_at_s: float, chars_done: int, total_chars: int, prior_s_per_char: float | None, since_done_s: float = 0.0
) -> float | None:
    """Seconds left, or None while there is too little to go on.

    ``done_at_s``: seconds from the job's start to when ``chars_done`` characters were read;
    ``since_done_s``: seconds since then (spent on pieces still being read, not counted as slowness).
    """
    left = total_chars - chars_done
    if left <= 0:
        return 0.0
    if prior_s_per_char is not None:
        pace = (done_at_s + prior_s_per_char * PRIOR_CHARS) / (chars_done + PRIOR_CHARS)
    elif chars_done > 0 and chars_done >= min(total_chars, max(MIN_DONE_CHARS, MIN_DONE_FRACTION * total_chars)):
        pace = done_at_s / chars_done
    else:
        return None
    return round(max(pace * left - since_done_s, MIN_LEFT_S), 1)
