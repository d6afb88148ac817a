"""Fuzz the cost limits through the real route: generated hostile text (long digit runs, huge ordinals, money,
SSML breaks and say-as) at any speed is either refused in one line or spoken within its bound, never a 5xx.

The bound is what SECURITY.md promises: speech at most ``max(60 s, 0.4 s x characters)`` plus the request's
breaks (at most 60 s as written) stretched by 1/speed. The schema fuzzer (test_fuzz_api.py) keeps its inputs
to a few characters, so the text limits get their own generated inputs here.
"""

from __future__ import annotations

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tts_app.text.cost import MIN_AUDIO_S

pytestmark = pytest.mark.slow

RATE = 22050
MAX_PAUSE_S = 60.0  # TTS_APP_MAX_PAUSE_S's default
PER_CHAR_S = 0.4  # TTS_APP_MAX_AUDIO_S_PER_CHAR's default

_digits = st.integers(1, 5000).map(lambda n: "9" * n)
_plain = st.sampled_from(["Hello there.", "It costs $", "On the ", "Call ", "and", "1/", ".", " "])
_suffix = st.sampled_from(["", "th", "st", "%", " dollars", "/7", ".5"])
_number = st.tuples(_digits, _suffix).map("".join)
_say_as = st.tuples(st.sampled_from(["ordinal", "cardinal", "date", "telephone", "characters"]), _digits).map(
    lambda kv: f'<say-as interpret-as="{kv[0]}">{kv[1][:600]}</say-as>')
_break = st.integers(0, 40).map(lambda s: f'<break time="{s}s"/>')


@st.composite
def hostile_text(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.one_of(_plain, _number, _say_as, _break), min_size=1, max_size=6))
    plain = [p for p in parts if not p.startswith("<")]
    if len(plain) == len(parts):
        return "".join(parts)[:4096]
    return ("<speak>" + "".join(parts) + "</speak>")[:4096]


@pytest.fixture(scope="module")
def http(app_server: str):
    with httpx.Client(base_url=app_server, timeout=300) as client:
        yield client


@given(text=hostile_text(), speed=st.sampled_from([0.5, 1.0, 2.0]))
@settings(max_examples=14, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
def test_hostile_text_is_refused_or_spoken_within_its_bound(http: httpx.Client, text: str, speed: float) -> None:
    bound_s = max(MIN_AUDIO_S, PER_CHAR_S * len(text)) + MAX_PAUSE_S / speed
    body = {"model": "tts-1", "voice": "default", "input": text, "speed": speed, "response_format": "pcm"}
    with http.stream("POST", "/v1/audio/speech", json=body) as reply:
        if reply.status_code in (400, 503):
            message = reply.read().decode()
            assert "Traceback" not in message and message.count("\n") <= 1, message[:300]
            return
        assert reply.status_code == 200, (reply.status_code, reply.read()[:300])
        received = 0
        for chunk in reply.iter_bytes():
            received += len(chunk)
            assert received / 2 / RATE <= bound_s + 1.0, f"{received / 2 / RATE:.0f} s of audio for {len(text)} characters"
    assert received > 0
