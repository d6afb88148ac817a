"""The OpenAI-compatible POST /v1/audio/speech, over HTTP with httpx."""

from __future__ import annotations

import io
import struct
import time

import httpx
import numpy as np
import pytest
import soundfile as sf

from tests.support.fake_backend import expected
from tests.support.held_backend import HOLD_S, HeldBackend, held_server  # noqa: F401  (a fixture)

pytestmark = pytest.mark.slow

LONG_TEXT = (
    "The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background. "
    "It's easy to tell the depth of a well. These days a chicken leg is a rare dish. "
    "Rice is often served in round bowls. The juice of lemons makes fine punch."
)


@pytest.fixture(scope="module")
def http(app_server: str):
    with httpx.Client(base_url=app_server, timeout=120) as client:
        yield client


def test_wav_body_is_a_playable_wav(http: httpx.Client) -> None:
    response = http.post("/v1/audio/speech", json={"model": "tts-1", "input": "Hello there.", "voice": "default", "response_format": "wav"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("audio/wav")
    audio, rate = sf.read(io.BytesIO(response.content), dtype="float32")
    assert rate == int(response.headers["x-sample-rate"]) == 22050
    assert 0.3 < len(audio) / rate < 5
    assert np.abs(audio).max() > 0.01


def test_streamed_body_arrives_in_pieces_before_the_end(http: httpx.Client) -> None:
    body = {"model": "piper-joe-medium", "input": LONG_TEXT, "voice": "default", "response_format": "pcm"}
    arrivals: list[tuple[float, int]] = []
    started = time.perf_counter()
    with http.stream("POST", "/v1/audio/speech", json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("audio/pcm")
        rate = int(response.headers["x-sample-rate"])
        data = bytearray()
        for piece in response.iter_bytes():
            arrivals.append((time.perf_counter() - started, len(piece)))
            data += piece
    assert len(arrivals) >= 3, "the body should stream in several pieces"
    # That the first piece leaves before the last is synthesised: test_the_first_audio_leaves_before_the_rest_is_made.
    assert len(data) % 2 == 0
    seconds = len(data) / 2 / rate
    assert seconds > 8, f"expected the whole text spoken, got {seconds:.1f} s"


def test_streamed_wav_header_declares_unknown_length(http: httpx.Client) -> None:
    with http.stream("POST", "/v1/audio/speech", json={"model": "tts-1", "input": "Streaming wav.", "response_format": "wav",
                                                     "stream": True}) as response:  # fmt: skip  (a WAV without it is sent whole)
        assert response.status_code == 200
        data = response.read()
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE"
    assert struct.unpack("<I", data[40:44])[0] == 0xFFFFFFFF
    assert len(data) > 44 + 22050  # at least half a second of 16-bit audio


def test_non_streamed_wav_has_exact_sizes(http: httpx.Client) -> None:
    response = http.post("/v1/audio/speech", json={"model": "tts-1", "input": "Exact sizes.", "stream": False, "response_format": "wav"})
    assert response.status_code == 200
    data = response.content
    assert struct.unpack("<I", data[40:44])[0] == len(data) - 44


def test_a_builtin_voice_by_name(http: httpx.Client) -> None:
    voices = http.get("/v1/audio/voices").json()["voices"]
    assert "default" in voices and "lj_female_us" in voices
    response = http.post("/v1/audio/speech", json={"model": "tts-1", "input": "A built-in voice.", "voice": "lj_female_us", "response_format": "wav"})
    assert response.status_code == 200, response.text
    audio, _ = sf.read(io.BytesIO(response.content), dtype="float32")
    assert len(audio) > 5000


def test_speed_changes_the_length(http: httpx.Client) -> None:
    def seconds(speed: float) -> float:
        body = {"model": "tts-1", "input": "One two three four five six seven.", "speed": speed, "response_format": "pcm"}
        response = http.post("/v1/audio/speech", json=body)
        assert response.status_code == 200
        return len(response.content) / 2 / int(response.headers["x-sample-rate"])

    assert seconds(2.0) < 0.75 * seconds(1.0)


def test_models_list(http: httpx.Client) -> None:
    models = http.get("/v1/models").json()
    assert models["object"] == "list" and models["data"][0]["id"] == "piper-joe-medium"


@pytest.mark.parametrize(
    ("body", "param", "fragment"),
    [
        ({"model": "tts-1", "voice": "default"}, "input", "required"),
        ({"input": "Hi.", "voice": "default"}, "model", "required"),
        ({"model": "tts-1", "input": ""}, "input", "input"),
        ({"model": "tts-1", "input": "   "}, "input", "empty"),
        ({"model": "tts-1", "input": "x" * 4097}, "input", "4096"),
        ({"model": "tts-1", "input": "Hi.", "response_format": "ogg"}, "response_format", "mp3, opus, aac, flac, wav, pcm"),
        ({"model": "tts-1", "input": "Hi.", "voice": "nonesuch"}, "voice", "unknown voice"),
        ({"model": "tts-1", "input": "Hi.", "stream_format": "sse"}, "stream_format", "not supported for tts-1"),
        ({"model": "tts-1", "input": "Hi.", "stream_format": "events"}, "stream_format", "audio, sse"),
        ({"model": "tts-1", "input": "Hi.", "speed": 9}, "speed", "speed"),
        ({"input": "Hi.", "model": "no-such-model"}, "model", "not served"),
        ({"model": "tts-1", "input": "Hi.", "voice_strength": 2}, "voice_strength", "voice_strength"),
    ],
)
def test_invalid_requests_get_a_4xx_json_error(http: httpx.Client, body: dict, param: str, fragment: str) -> None:
    response = http.post("/v1/audio/speech", json=body)
    assert 400 <= response.status_code < 500, response.text
    error = response.json()["error"]
    assert error["param"] == param
    assert fragment.lower() in error["message"].lower()
    assert error["type"] == "invalid_request_error"


def test_body_that_is_not_json_gets_400(http: httpx.Client) -> None:
    response = http.post("/v1/audio/speech", content=b"not json", headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json"


def test_a_client_that_hangs_up_cancels_its_request(http: httpx.Client, app_server: str) -> None:
    from gradio_client import Client

    stats = Client(app_server + "/", verbose=False)
    before = stats.predict(api_name="/engine_stats")["cancelled"]
    body = {"model": "tts-1", "input": " ".join([LONG_TEXT] * 6), "response_format": "pcm"}
    with http.stream("POST", "/v1/audio/speech", json=body) as response:
        assert response.status_code == 200
        next(response.iter_bytes())  # audio is flowing; now hang up
    deadline = time.monotonic() + 30
    while stats.predict(api_name="/engine_stats")["cancelled"] <= before:
        assert time.monotonic() < deadline, "the engine request should be cancelled when the client goes away"
        time.sleep(0.2)


def test_the_fast_embedded_voice_through_http(artifacts_dir) -> None:
    """Where the CPU has bf16, the fast precision is a model of its own (/v1/models, the Speak and A/B
    selectors) once the operator loads it: same words, same length as the exact voice. Elsewhere naming it
    is a one-line 400."""
    from tests.support.app_server import serve_app

    from tts_app.models.available import EMBEDDED_FAST_ID, fast_variant_offered

    offered = fast_variant_offered({})
    body = {"model": EMBEDDED_FAST_ID, "input": "The fast voice says the same words.", "response_format": "pcm"}
    loaded = {"TTS_APP_LOAD_MODELS": EMBEDDED_FAST_ID}
    with serve_app(artifacts_dir / "fast_model_server.log", loaded, ready=True) as (base, _process), httpx.Client(base_url=base, timeout=180) as http:
        listed = {m["id"]: m for m in http.get("/v1/models").json()["data"]}
        assert (EMBEDDED_FAST_ID in listed) == offered
        fast = http.post("/v1/audio/speech", json=body)
        if not offered:
            assert fast.status_code == 400 and "bfloat16" in fast.json()["error"]["message"]
            return
        exact = http.post("/v1/audio/speech", json=body | {"model": "piper-joe-medium"})
        assert fast.status_code == exact.status_code == 200
        assert abs(len(fast.content) - len(exact.content)) <= 0.02 * len(exact.content)  # same durations: the text stage stays float32
        exact_entry, fast_entry = http.get("/v1/models").json()["data"][:2]
        capabilities = fast_entry.pop("capabilities")
        assert fast_entry == {"id": EMBEDDED_FAST_ID, "object": "model", "owned_by": "tts_app", "loaded": True, "status": "ready",
                              "voice_clip": "embedded voice, matched by a filter"}
        assert exact_entry["id"] == "piper-joe-medium" and capabilities == exact_entry["capabilities"]  # the same voice


# --- streaming, proved with a backend that holds its work ----------------------------------


def test_the_openai_clients_streaming_response_hears_a_wavs_first_audio_at_once(held_server: tuple[str, HeldBackend]) -> None:
    """A WAV without ``stream`` goes whole to a client that reads it whole; the official client's streaming
    response (``with_streaming_response``) still gets its first audio while the rest is unmade."""
    openai = pytest.importorskip("openai")
    base, backend = held_server
    text = "one two three four five six seven eight"
    with openai.OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0, timeout=HOLD_S) as client:
        with client.audio.speech.with_streaming_response.create(model="gpt-4o-mini-tts", voice="alloy", input=text,
                                                                response_format="wav") as response:  # fmt: skip
            pieces = response.iter_bytes()
            first = b""
            while len(first) <= 44:  # the header, then audio (a server that buffers the body never sends it while held)
                first += next(pieces)
            assert first[:4] == b"RIFF" and not backend.unhold.is_set()
            assert len(backend.batches) <= HeldBackend.FREE_STEPS  # the rest is still to be made
            backend.unhold.set()
            data = first + b"".join(pieces)
    audio, _ = sf.read(io.BytesIO(data), dtype="float32")
    assert len(audio) == len(expected(text, 0))


def test_the_first_audio_leaves_before_the_rest_is_made(held_server: tuple[str, HeldBackend]) -> None:
    base, backend = held_server
    text = "one two three four five six seven eight"  # a word a step: eight steps, six of them held
    body = {"model": "tts-1", "input": text, "voice": "default", "response_format": "pcm"}
    with httpx.stream("POST", f"{base}/v1/audio/speech", json=body, timeout=HOLD_S) as response:
        assert response.status_code == 200
        pieces = response.iter_bytes()
        first = next(pieces)  # a server that buffers the body never sends this while the backend holds
        assert first and not backend.unhold.is_set()
        assert len(backend.batches) == HeldBackend.FREE_STEPS  # the rest is still to be made
        backend.unhold.set()
        rest = b"".join(pieces)
    samples = np.frombuffer(first + rest, "<i2").astype(np.float32) / 32767
    assert len(samples) == len(expected(text, 0))  # every word, a step each, the held ones included
