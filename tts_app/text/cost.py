"""What a request's text may cost, checked before any synthesis: its pauses, and its audio against its length.

A text of 4,096 characters gives about 260 s of speech at speed 1 (about 0.063 s a character: the
Harvard sentences), 1,030 s at the slowest speed. Pauses and numbers multiply that: 214 ten-second
``<break>``s fit in 4,082 characters, and 4,096 nines read digit by digit give over 1,000 s. So:

- ``TTS_APP_MAX_PAUSE_S``: the SSML ``<break>`` time of one request, in all (as written, before speed).
- ``TTS_APP_MAX_AUDIO_S_PER_CHAR``: the audio of one request (speech and its sentence and paragraph
  pauses, at the request's speed, estimated from its phonemes) per character of its text, with a
  floor of ``MIN_AUDIO_S`` for short texts. Over either: TextError (a one-line 400), never cut short.
"""

from __future__ import annotations

from tts_app import settings

from tts_app.text.errors import TextError

MAX_PAUSE_ENV = "TTS_APP_MAX_PAUSE_S"
MAX_AUDIO_PER_CHAR_ENV = "TTS_APP_MAX_AUDIO_S_PER_CHAR"
MIN_AUDIO_S = 60.0  # a short text may always give a minute (one 10 s break at the slowest speed is 40 s)


def max_pause_s() -> float:
    """Most ``<break>`` seconds one request may ask for ($TTS_APP_MAX_PAUSE_S, read per request)."""
    return settings.value(MAX_PAUSE_ENV)


def max_audio_s(chars: int) -> float:
    """Most seconds of audio a text of ``chars`` characters may give ($TTS_APP_MAX_AUDIO_S_PER_CHAR)."""
    return max(MIN_AUDIO_S, settings.value(MAX_AUDIO_PER_CHAR_ENV) * chars)


def check_pauses(break_s: float, limit_s: float) -> None:
    """TextError when the breaks of one request add up past ``limit_s``."""
    if break_s > limit_s:
        raise TextError(f"the SSML <break>s add up to {break_s:,.0f} s; the limit is {limit_s:g} s of pauses a request")


def check_audio_length(audio_s: float, chars: int, speed: float) -> None:
    """TextError when ``audio_s`` (speech and its sentence pauses at speed 1, breaks left out) at ``speed``
    is more than a text of ``chars`` characters may give."""
    at_speed = audio_s / max(speed, 1e-6)
    limit = max_audio_s(chars)
    if at_speed > limit:
        raise TextError(
            f"this text would give about {at_speed:,.0f} s of audio at speed {speed:g}; the limit for "
            f"{chars:,} characters is {limit:,.0f} s (a faster speed or a shorter text fits)"
        )
