"""Pocket TTS over the real HTTP routes: ``python app.py`` with a tiny random Pocket TTS checkpoint in the released
layout ($TTS_APP_POCKET_TTS_PATH). It is listed with what it honours, speaks plain and streamed requests, clones a
named reference clip, and answers hostile input (asks it does not honour, another language, junk text, a stream
left early) with a one-line 400 or audio, never a traceback or a hang; the server serves on."""

from __future__ import annotations

import io
from collections.abc import Iterator

import httpx
import numpy as np
import pytest
import soundfile as sf
from tests.support.app_server import serve_app
from tests.support.pocket_tts_tiny import write_tiny_checkpoint

pytestmark = pytest.mark.slow  # starts its own server

MODEL = "pocket-tts"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    root = tmp_path_factory.mktemp("pocket")
    ckpt = write_tiny_checkpoint(root / "ckpt")
    env = {"TTS_APP_POCKET_TTS_PATH": str(ckpt), "HF_HUB_CACHE": str(root / "hub"), "HF_HUB_OFFLINE": "1",
           "TTS_APP_CACHE_DIR": str(root / "cache")}
    with serve_app(root / "app.log", env) as (base, _process), httpx.Client(base_url=base, timeout=300) as http:
        yield http


def _speak(http: httpx.Client, **body) -> httpx.Response:
    return http.post("/v1/audio/speech", json={"model": MODEL, "response_format": "wav", "stream": False, **body})


def _audio(r: httpx.Response) -> np.ndarray:
    assert r.status_code == 200, r.text
    audio, rate = sf.read(io.BytesIO(r.content), dtype="float32")
    assert rate == 24000 and audio.size > 0 and np.isfinite(audio).all()
    return audio


def test_listed_with_what_it_honours(server: httpx.Client) -> None:
    models = {m["id"]: m for m in server.get("/v1/models").json()["data"]}
    caps = models[MODEL]["capabilities"]
    assert caps["languages"] == ["en"] and caps["word_timings"] == "aligned"
    assert not any(caps[k] for k in ("speed", "ssml", "lexicon", "normalize", "voice_strength"))


def test_speaks_and_clones_a_reference_clip(server: httpx.Client) -> None:
    own = _audio(_speak(server, input="Hello there, how are you today?", seed=3))
    again = _audio(_speak(server, input="Hello there, how are you today?", seed=3))
    assert np.array_equal(own, again)  # the seed decides the speech, batch mates do not
    cloned = _audio(_speak(server, input="Hello there, how are you today?", seed=3, voice="lj_female_us"))
    assert cloned.shape != own.shape or not np.allclose(cloned, own)
    listed = {m["id"]: m for m in server.get("/v1/models").json()["data"]}
    assert listed[MODEL]["loaded"] is True


def test_streams_pcm(server: httpx.Client) -> None:
    body = {"model": MODEL, "input": "One sentence here. And another one after it!", "response_format": "pcm"}
    with server.stream("POST", "/v1/audio/speech", json=body) as r:
        assert r.status_code == 200
        pieces = [p for p in r.iter_bytes() if p]
    assert len(pieces) >= 1 and sum(map(len, pieces)) > 0


@pytest.mark.parametrize("ask, param", [
    ({"speed": 1.5}, "speed"),
    ({"input": "<speak>Hello <break time='300ms'/> there.</speak>"}, "input"),
    ({"normalize": True}, "normalize"),
    ({"language": "de"}, "language"),
    ({"voice": "lj_female_us", "voice_strength": 0.5}, "voice_strength"),
], ids=["speed", "ssml", "normalize", "language", "voice_strength"])
def test_an_ask_it_does_not_honour_is_a_one_line_400(server: httpx.Client, ask: dict, param: str) -> None:
    r = _speak(server, **{"input": "Hello there.", **ask})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["param"] == param and f"model {MODEL!r} does not support" in error["message"] and "\n" not in error["message"]


@pytest.mark.parametrize("text", [
    "." * 3000,  # no sentence the official cut can use
    "word " * 800,  # no punctuation at all
    "\u200b\u00a0 \U0001f600\U0001f600 \u0000x",  # invisible, emoji, a NUL
    "3.50 dollars; \u2018quoted\u2019: yes",  # the decimal and replacement rules
], ids=["marks", "no-punctuation", "odd-characters", "rules"])
def test_junk_text_is_spoken_or_refused_in_one_line(server: httpx.Client, text: str) -> None:
    r = _speak(server, input=text, seed=1)
    if r.status_code == 200:
        _audio(r)
    else:
        assert r.status_code == 400 and "\n" not in r.json()["error"]["message"] and "Traceback" not in r.text, r.text


def test_a_stream_left_early_frees_its_slot(server: httpx.Client) -> None:
    body = {"model": MODEL, "input": "A long text to leave early. " * 20, "response_format": "pcm"}
    for _ in range(3):
        with server.stream("POST", "/v1/audio/speech", json=body) as r:
            assert r.status_code == 200
            next(r.iter_bytes())  # then close: the request is cancelled
    _audio(_speak(server, input="Still here.", seed=2))
