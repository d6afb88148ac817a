"""``stream_format: "sse"``: OpenAI's speech events over the real HTTP route (tts_app/web/api/sse.py).

Read with a raw server-sent-events reader (the rules this route needs, written here) and with the
official ``openai`` client's streaming response; hostile values, huge inputs, a failure and a hang-up
mid-stream included.
"""

from __future__ import annotations

import base64
import io
import json
import time
from collections.abc import Iterable, Iterator

import httpx
import numpy as np
import pytest
import soundfile as sf

from tests.api.test_openai_formats import SLACK_S, decoded_seconds
from tests.support.fake_backend import FailsMidway, expected
from tests.support.held_backend import HOLD_S, HeldBackend, held_server  # noqa: F401  (a fixture)
from tests.support.route_server import serve_routes

pytestmark = pytest.mark.slow

TEXT = "Events for every client. The same words, every time."
FORMATS = ["mp3", "opus", "aac", "flac", "wav", "pcm"]


def read_events(lines: Iterable[str]) -> Iterator[dict]:
    """Server-sent events as a browser's EventSource reads them: ``data:`` lines of one event joined by
    newlines until a blank line; comments (``:``) and other fields skipped. Each event's data is JSON here."""
    data: list[str] = []
    for line in lines:
        line = line.rstrip("\r")
        if not line:
            if data:
                yield json.loads("\n".join(data))
            data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data:
        yield json.loads("\n".join(data))


def joined(events: list[dict]) -> bytes:
    """The deltas' audio, decoded and joined: the body; the last event must be the one done event."""
    *deltas, done = events
    assert [e["type"] for e in deltas] == ["speech.audio.delta"] * len(deltas) and deltas
    assert set(deltas[0]) == {"type", "audio"}
    assert done["type"] == "speech.audio.done" and set(done["usage"]) == {"input_tokens", "output_tokens", "total_tokens"}
    assert all(isinstance(v, int) and v >= 0 for v in done["usage"].values())
    return b"".join(base64.b64decode(e["audio"], validate=True) for e in deltas)


def sse(http: httpx.Client, **body: object) -> tuple[httpx.Response, list[dict]]:
    payload = {"model": "gpt-4o-mini-tts", "input": TEXT, "voice": "coral", "stream_format": "sse", **body}
    with http.stream("POST", "/v1/audio/speech", json=payload) as response:
        assert response.status_code == 200, response.read()
        return response, list(read_events(response.iter_lines()))


@pytest.fixture(scope="module")
def http(app_server: str):
    with httpx.Client(base_url=app_server, timeout=120) as client:
        yield client


@pytest.fixture(scope="module")
def plain_pcm(http: httpx.Client) -> bytes:
    response = http.post("/v1/audio/speech", json={"model": "tts-1", "input": TEXT, "voice": "coral", "response_format": "pcm"})
    assert response.status_code == 200
    return response.content


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_streams_as_delta_events_that_join_into_the_plain_body(http: httpx.Client, plain_pcm: bytes, fmt: str) -> None:
    response, events = sse(http, response_format=fmt)
    assert response.headers["content-type"].startswith("text/event-stream")
    audio = joined(events)
    seconds = len(plain_pcm) / 2 / 22050
    usage = events[-1]["usage"]
    assert usage["input_tokens"] == len(TEXT) and usage["output_tokens"] == round(seconds * 1000)
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    if fmt == "pcm":
        assert audio == plain_pcm  # the same chunk stream as the plain route, framed
    elif fmt == "wav":
        assert audio[:4] == b"RIFF" and audio[44:] == plain_pcm  # a streamed WAV: open sizes, then the same samples
    else:
        assert seconds - 0.005 <= decoded_seconds(audio) <= seconds + SLACK_S[fmt] + 0.005
    if fmt in ("flac", "wav"):
        assert sf.read(io.BytesIO(audio))[0].size == len(plain_pcm) // 2


def test_the_official_clients_streaming_response_reads_the_events(app_server: str, plain_pcm: bytes) -> None:
    openai = pytest.importorskip("openai")
    with openai.OpenAI(base_url=app_server + "/v1", api_key="unused", max_retries=0, timeout=120) as client:
        with client.audio.speech.with_streaming_response.create(
            model="gpt-4o-mini-tts", voice="coral", input=TEXT, response_format="pcm", stream_format="sse"
        ) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            assert joined(list(read_events(response.iter_lines()))) == plain_pcm
        with pytest.raises(openai.BadRequestError, match="not supported for tts-1"):
            client.audio.speech.create(model="tts-1", voice="coral", input=TEXT, stream_format="sse")


@pytest.mark.parametrize(
    ("body", "param", "fragment"),
    [
        ({"model": "tts-1"}, "stream_format", "not supported for tts-1"),
        ({"model": "tts-1-hd"}, "stream_format", "not supported for tts-1-hd"),
        ({"stream": False}, "stream", "streams"),
        ({"stream_format": "SSE"}, "stream_format", "audio, sse"),
        ({"stream_format": "sse "}, "stream_format", "audio, sse"),
        ({"stream_format": ""}, "stream_format", "audio, sse"),
        ({"stream_format": None}, "stream_format", "audio, sse"),
        ({"stream_format": 1}, "stream_format", "audio, sse"),
        ({"stream_format": ["sse"]}, "stream_format", "audio, sse"),
        ({"stream_format": "text/event-stream"}, "stream_format", "audio, sse"),
        ({"response_format": "sse"}, "response_format", "mp3, opus"),
        ({"response_format": "WAV"}, "response_format", "mp3, opus"),
        ({"input": "x" * 4097}, "input", "4096"),
    ],
)
def test_odd_values_are_a_one_line_400_before_anything_runs(http: httpx.Client, body: dict, param: str, fragment: str) -> None:
    payload = {"model": "gpt-4o-mini-tts", "input": "Hi.", "stream_format": "sse"} | body
    response = http.post("/v1/audio/speech", json=payload)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == param and fragment in error["message"] and "\n" not in error["message"]


def test_the_captioned_route_has_its_own_stream_and_refuses_sse(http: httpx.Client) -> None:
    response = http.post("/v1/audio/speech/captioned", json={"model": "gpt-4o-mini-tts", "input": "Hi.", "stream_format": "sse"})
    assert response.status_code == 400 and response.json()["error"]["param"] == "stream_format"


def test_a_text_that_looks_like_events_stays_audio(http: httpx.Client) -> None:
    """The input is never echoed: text shaped like an event cannot add one."""
    text = 'Hello.\n\ndata: {"type":"speech.audio.done","usage":{}}\n\nevent: x\r\n\r\nBye.'
    _, events = sse(http, input=text, response_format="pcm")
    assert [e["type"] for e in events].count("speech.audio.done") == 1 and len(joined(events)) > 0


def test_a_huge_input_streams_its_first_delta_and_a_hang_up_cancels_it(http: httpx.Client, app_server: str) -> None:
    """4,096 characters (minutes of speech): the first delta comes while most is unmade; leaving cancels the request."""
    from gradio_client import Client

    stats = Client(app_server + "/", verbose=False)
    before = stats.predict(api_name="/engine_stats")["cancelled"]
    text = ("Every listener hears the first words while the rest is still being made. " * 60)[:4096]
    payload = {"model": "gpt-4o-mini-tts", "input": text, "stream_format": "sse", "response_format": "mp3"}
    with http.stream("POST", "/v1/audio/speech", json=payload) as response:
        assert response.status_code == 200
        first = next(read_events(response.iter_lines()))
        assert first["type"] == "speech.audio.delta" and base64.b64decode(first["audio"])
    deadline = time.monotonic() + 30
    while stats.predict(api_name="/engine_stats")["cancelled"] <= before:
        assert time.monotonic() < deadline, "the engine request should be cancelled when the client goes away"
        time.sleep(0.2)
    assert sse(http, response_format="pcm")[1][-1]["type"] == "speech.audio.done"  # and the next one is served


# --- over an engine the test controls ------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["pcm", "wav"])
def test_the_first_delta_leaves_before_the_rest_is_made(held_server: tuple[str, HeldBackend], fmt: str) -> None:
    """As early as the plain stream's first chunk (test_openai_speech.py::test_the_first_audio_leaves_before_the_rest_is_made)."""
    base, backend = held_server
    text = "one two three four five six seven eight"
    payload = {"model": "gpt-4o-mini-tts", "input": text, "response_format": fmt, "stream_format": "sse"}
    with httpx.stream("POST", f"{base}/v1/audio/speech", json=payload, timeout=HOLD_S) as response:
        assert response.status_code == 200
        events = read_events(response.iter_lines())
        got = [next(events)]
        while len(b"".join(base64.b64decode(e["audio"]) for e in got)) <= (44 if fmt == "wav" else 0):
            got.append(next(events))  # a WAV's header, then its first audio
        assert not backend.unhold.is_set() and len(backend.batches) <= HeldBackend.FREE_STEPS
        backend.unhold.set()
        got.extend(events)
    audio = joined(got)
    samples = np.frombuffer(audio[44:] if fmt == "wav" else audio, "<i2")
    assert len(samples) == len(expected(text, 0))


def test_a_failure_mid_stream_ends_with_one_error_event(monkeypatch: pytest.MonkeyPatch) -> None:
    from tts_app.engine import Engine

    engine = Engine(FailsMidway(), max_batch_size=4)
    try:
        with serve_routes(engine, monkeypatch) as base:
            payload = {"model": "gpt-4o-mini-tts", "input": "one two three four five six", "response_format": "pcm", "stream_format": "sse"}
            with httpx.stream("POST", f"{base}/v1/audio/speech", json=payload, timeout=HOLD_S) as response:
                assert response.status_code == 200
                events = list(read_events(response.iter_lines()))
            assert events[0]["type"] == "speech.audio.delta" and events[-1]["type"] == "error"
            assert [e["type"] for e in events].count("speech.audio.done") == 0
            assert events[-1]["error"]["message"] == "speech synthesis failed; see the server log"
    finally:
        engine.close()
