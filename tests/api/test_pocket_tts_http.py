"""Pocket TTS over the real HTTP routes: ``python app.py`` with a tiny random Pocket TTS checkpoint in the released
layout ($TTS_APP_POCKET_TTS_PATH). It is listed with what it honours, speaks plain and streamed requests, clones a
named reference clip, and answers hostile input (asks it does not honour, another language, junk text, a stream
left early, voice names it does not have) with a one-line 400 or audio, never a traceback or a hang; the server serves on.
A French checkpoint beside it (in the folder ``fetch pocket-tts-french`` writes) is listed as its own model reading
French only: it speaks French in its language's default voice and refuses any other ``language`` in one line."""

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
FRENCH = "pocket-tts-french"
MAX_SECONDS = 2  # $TTS_APP_MAX_SECONDS: 25 latents of 1,920 samples at 12.5 Hz
CAP_SAMPLES = 25 * 1920


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    root = tmp_path_factory.mktemp("pocket")
    # Saved voices: alba (the default), bob, and one named like a library voice (the library's keeps the name).
    ckpt = write_tiny_checkpoint(root / "ckpt", more_voices=("bob", "lj_female_us"))
    write_tiny_checkpoint(root / "cache" / FRENCH, seed=1, voices=False, more_voices=("estelle", "marius"), variant="french")
    env = {"TTS_APP_POCKET_TTS_PATH": str(ckpt), "HF_HUB_CACHE": str(root / "hub"), "HF_HUB_OFFLINE": "1",
           "TTS_APP_CACHE_DIR": str(root / "cache"), "TTS_APP_MAX_SECONDS": str(MAX_SECONDS),
           "TTS_APP_LOAD_MODELS": FRENCH}  # found in the fetch's folder: loaded because the operator names it
    with serve_app(root / "app.log", env, ready=True) as (base, _process), httpx.Client(base_url=base, timeout=300) as http:
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


def test_a_request_ends_at_max_seconds(server: httpx.Client) -> None:
    """A hundred sentences (every chunk at least the 7 latents before its end of speech, hundreds in all): the
    request's audio ends cleanly at $TTS_APP_MAX_SECONDS over all its chunks, not at each chunk's own cap."""
    audio = _audio(_speak(server, input="Short one. " * 100, seed=5))
    assert audio.size == CAP_SAMPLES
    streamed = {"model": MODEL, "input": "Short one. " * 100, "response_format": "pcm", "seed": 5}
    with server.stream("POST", "/v1/audio/speech", json=streamed) as r:
        assert r.status_code == 200
        pcm = b"".join(r.iter_bytes())
    assert len(pcm) == audio.size * 2  # 16-bit samples


def test_its_saved_voices_are_listed_for_it(server: httpx.Client) -> None:
    models = {m["id"]: m for m in server.get("/v1/models").json()["data"]}
    assert models[MODEL]["voices"] == ["alba", "bob", "lj_female_us"]
    assert all("voices" not in m for k, m in models.items() if k not in (MODEL, FRENCH))
    plain = server.get("/v1/audio/voices").json()["voices"]
    assert "lj_female_us" in plain and not {"alba", "bob"} & set(plain)
    for model in (MODEL,):
        own = server.get("/v1/audio/voices", params={"model": model}).json()["voices"]
        assert own == plain + ["alba", "bob"]  # lj_female_us is listed once: the library's voice


def test_a_saved_voice_by_name_is_its_voice_state(server: httpx.Client) -> None:
    text = "Hello there, how are you today?"
    default = _audio(_speak(server, input=text, seed=3))
    alba = _audio(_speak(server, input=text, seed=3, voice="alba"))
    assert np.array_equal(alba, default)  # alba's saved state is the default voice
    bob = _audio(_speak(server, input=text, seed=3, voice="bob"))
    assert bob.shape != alba.shape or not np.allclose(bob, alba)
    # A library name the checkpoint also has keeps meaning the library's clip, cloned: as its OpenAI alias does.
    library = _audio(_speak(server, input=text, seed=3, voice="lj_female_us"))
    assert np.array_equal(library, _audio(_speak(server, input=text, seed=3, voice="coral")))


def _one_line_400(r: httpx.Response, param: str) -> str:
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["param"] == param and "\n" not in error["message"] and "Traceback" not in r.text
    return error["message"]


@pytest.mark.parametrize("voice", ["carol", "b" * 5000, "al\x00ba\x1b[2J", "../alba", "voices/alba", "alba.safetensors",
                                   "ALBA", " alba\n", "/etc/passwd"])
def test_a_voice_it_does_not_have_is_a_one_line_400(server: httpx.Client, voice: str) -> None:
    message = _one_line_400(_speak(server, input="Hello there.", voice=voice), "voice")
    assert message.startswith("unknown voice") and message.endswith(", alba, bob") and len(message) < 2000


def test_its_voice_names_are_refused_for_another_model(server: httpx.Client) -> None:
    r = server.post("/v1/audio/speech", json={"model": "tts-1", "input": "Hello.", "voice": "bob", "response_format": "wav"})
    message = _one_line_400(r, "voice")
    assert "bob" not in message.split("choose one of: ")[1].split(", ")


@pytest.mark.parametrize("model", ["nope", "m" * 5000, "pocket-tts\x00", "../pocket-tts", ""])
def test_voices_of_an_unknown_model_is_a_one_line_400(server: httpx.Client, model: str) -> None:
    message = _one_line_400(server.get("/v1/audio/voices", params={"model": model}), "model")
    assert message.startswith("model ") and "is not served here" in message and len(message) < 200


def test_a_french_model_is_listed_reading_french(server: httpx.Client) -> None:
    models = {m["id"]: m for m in server.get("/v1/models").json()["data"]}
    caps = models[FRENCH]["capabilities"]
    assert caps["languages"] == ["fr"] and caps["word_timings"] == "none"  # captions align English only
    assert models[FRENCH]["voices"] == ["estelle", "marius"] and models[MODEL]["capabilities"]["languages"] == ["en"]


def test_a_french_model_speaks_french_in_its_default_voice(server: httpx.Client) -> None:
    text = "Bonjour\u00a0: \u00ab\u00a0oui\u00a0\u00bb, dit-il (enfin)\u00a0; c\u2019est tout."
    default = _audio(_speak(server, model=FRENCH, input=text, seed=4))
    asked = _audio(_speak(server, model=FRENCH, input=text, seed=4, language="fr"))
    estelle = _audio(_speak(server, model=FRENCH, input=text, seed=4, voice="estelle"))
    assert np.array_equal(default, asked) and np.array_equal(default, estelle)  # estelle: the official French default
    marius = _audio(_speak(server, model=FRENCH, input=text, seed=4, voice="marius"))
    assert marius.shape != default.shape or not np.allclose(marius, default)


@pytest.mark.parametrize("language", ["en", "de", "FR", "fr-FR", "fran\u00e7ais", "fr\n", "fr\x00", "x" * 17, "", " fr", 7, ["fr"]],
                         ids=["en", "de", "upper", "region", "name", "newline", "nul", "long", "empty", "space", "number", "list"])
def test_a_french_model_refuses_another_language_in_one_line(server: httpx.Client, language) -> None:
    message = _one_line_400(_speak(server, model=FRENCH, input="Bonjour.", language=language), "language")
    assert len(message) < 300
    _audio(_speak(server, model=FRENCH, input="Toujours l\u00e0.", seed=2))  # and serves on


@pytest.mark.parametrize("model", ["pocket-tts-italian", "pocket-tts-klingon", "pocket-tts-french-24l"])
def test_a_language_not_here_is_a_one_line_refusal(server: httpx.Client, model: str) -> None:
    r = _speak(server, model=model, input="Ciao.")
    assert 400 <= r.status_code < 500 and "Traceback" not in r.text, r.text
    message = r.json()["error"]["message"]
    assert "\n" not in message and ("fetch pocket-tts-" in message) == (model != "pocket-tts-klingon"), message
