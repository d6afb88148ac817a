"""What each model honours, over the real HTTP routes: ``python app.py`` with a tiny Qwen3-TTS checkpoint and a
Chatterbox folder. A request asking a model for what it does not honour gets a one-line 400 naming the parameter
and the model, before the model is loaded or anything queued; ``/v1/models`` lists each model's capabilities."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile as sf
from tests.support.app_server import serve_app
from tests.support.qwen3_tiny import tiny_backend, write_checkpoint

from tts_app.models.available import CHATTERBOX_FILES

pytestmark = pytest.mark.slow  # starts its own server with a tiny Qwen3 checkpoint

QWEN3 = "qwen3-local"
CHATTERBOX = "chatterbox"
# One non-default ask per parameter those models do not honour, with the request field the 400 names.
ASKS = [
    ("speed", {"speed": 1.5}),
    ("input", {"input": "<speak>Hello <break time='300ms'/> there.</speak>"}),
    ("lexicon", {"input": "Hello Siobhan.", "lexicon": {"Siobhan": "shiv awn"}}),
    ("normalize", {"normalize": True}),
    ("voice_strength", {"voice": "lj_female_us", "voice_strength": 0.5}),
]


LOGS: list[Path] = []  # the module server's log


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    root = tmp_path_factory.mktemp("models")
    (root / "qwen3").mkdir()
    write_checkpoint(tiny_backend(), root / "qwen3")
    # The Chatterbox folder has the checkpoint's files but no weights in them: every request below must be
    # refused from the model's declared capabilities, so the server never tries to load it.
    (root / "chatterbox").mkdir()
    for name in CHATTERBOX_FILES:
        (root / "chatterbox" / name).write_bytes(b"")
    env = {
        "TTS_APP_QWEN3_PATH": str(root / "qwen3"), "TTS_APP_CHATTERBOX_PATH": str(root / "chatterbox"),
        "TTS_APP_MAX_SECONDS": "1", "HF_HUB_CACHE": str(root / "hub"), "HF_HUB_OFFLINE": "1",
    }  # fmt: skip
    LOGS.append(root / "app.log")
    with serve_app(root / "app.log", env, ready=True) as (base, _process), httpx.Client(base_url=base, timeout=600) as http:
        yield http


def _models(http: httpx.Client) -> dict[str, dict]:
    r = http.get("/v1/models")
    assert r.status_code == 200, r.text
    return {m["id"]: m for m in r.json()["data"]}


def test_models_list_what_each_model_honours(server: httpx.Client) -> None:
    models = _models(server)
    assert {"piper-joe-medium", QWEN3, CHATTERBOX} <= set(models)
    for model in models.values():
        assert model["object"] == "model" and model["owned_by"] == "tts_app" and isinstance(model["loaded"], bool)
    piper, qwen3, chatterbox = (models[k]["capabilities"] for k in ("piper-joe-medium", QWEN3, CHATTERBOX))
    for flag in ("speed", "ssml", "lexicon", "normalize", "voice_strength"):
        assert piper[flag] is True and qwen3[flag] is False and chatterbox[flag] is False, flag
    assert piper["word_timings"] == "model" and qwen3["word_timings"] == "aligned" and chatterbox["word_timings"] == "none"
    # Qwen3-TTS is loaded at start (given by path): it lists its checkpoint's languages, none for this tiny one;
    # the ten the model declares are what it lists before a load (tests/unit/qwen3).
    assert piper["languages"] == ["en"] and qwen3["languages"] == [] and chatterbox["languages"] == ["en"]
    assert models[QWEN3]["loaded"] is True and models[CHATTERBOX]["loaded"] is False  # its weights do not load
    # The longest `input` a request may send: OpenAI's 4,096 for Piper (its own 5,000 is more), 500 for Chatterbox.
    assert (piper["max_text_chars"], qwen3["max_text_chars"], chatterbox["max_text_chars"]) == (4096, 4096, 500)


def test_the_listed_input_limit_is_the_one_a_request_meets(server: httpx.Client) -> None:
    """/v1/models' max_text_chars is the boundary itself: that many characters are accepted, one more is a 400 naming it."""
    limit = _models(server)["piper-joe-medium"]["capabilities"]["max_text_chars"]
    words = ("word " * limit)[:limit]
    with server.stream("POST", "/v1/audio/speech", json={"model": "tts-1", "voice": "alloy", "input": words, "response_format": "pcm"}) as accepted:
        assert accepted.status_code == 200  # the stream starts; leaving closes it (the request is cancelled)
    over = server.post("/v1/audio/speech", json={"model": "tts-1", "voice": "alloy", "input": words + "s", "response_format": "pcm"})
    assert over.status_code == 400 and str(limit) in over.json()["error"]["message"]


@pytest.mark.parametrize("model", [QWEN3, CHATTERBOX])
@pytest.mark.parametrize("param, ask", ASKS, ids=[a[0] for a in ASKS])
@pytest.mark.parametrize("route", ["/v1/audio/speech", "/v1/audio/speech/captioned"])
def test_an_ask_the_model_does_not_honour_is_a_one_line_400(server: httpx.Client, route: str, model: str, param: str, ask: dict) -> None:
    r = server.post(route, json={"model": model, "input": "Hello there.", "stream": False, **ask})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["param"] == param and error["code"] == "unsupported_parameter" and error["type"] == "invalid_request_error"
    assert f"model {model!r} does not support" in error["message"] and "\n" not in error["message"]


def test_a_language_the_model_does_not_read_is_refused(server: httpx.Client) -> None:
    r = server.post("/v1/audio/speech", json={"model": CHATTERBOX, "input": "Hallo.", "language": "de"})
    error = r.json()["error"]
    assert r.status_code == 400 and error["param"] == "language" and "'chatterbox'" in error["message"], r.text
    r = server.post("/v1/audio/speech", json={"model": "piper-joe-medium", "input": "Hallo.", "language": "xx"})
    assert r.status_code == 400 and r.json()["error"]["param"] == "language", r.text


def test_refusals_come_before_the_model_is_loaded(server: httpx.Client) -> None:
    server.post("/v1/audio/speech", json={"model": CHATTERBOX, "input": "Hi.", "speed": 2.0})
    assert _models(server)[CHATTERBOX]["loaded"] is False  # its folder holds no weights: a load would have failed


def test_a_plain_openai_request_to_qwen3_is_spoken(server: httpx.Client) -> None:
    # What an OpenAI client sends: no extension fields. A lexicon that does not touch the text, an explicit
    # speed of 1, full voice strength and normalize false are what the model does anyway: all accepted.
    for extra in ({}, {"speed": 1.0, "voice_strength": 1.0, "normalize": False, "lexicon": {"Siobhan": "shiv awn"}}):
        r = server.post("/v1/audio/speech", json={"model": QWEN3, "input": "Hello there.", "response_format": "wav", "stream": False, **extra})
        assert r.status_code == 200, r.text
        audio, rate = sf.read(io.BytesIO(r.content), dtype="float32")
        assert rate == 24000 and 0 < len(audio) <= 24000 and np.isfinite(audio).all()


def test_a_language_the_loaded_checkpoint_has_no_id_for_is_refused(server: httpx.Client) -> None:
    """Qwen3-TTS declares ten languages, but this checkpoint's language table is empty (as a fine-tune's
    may be): once it is loaded, asking for German is a one-line 400, not English spoken in its place."""
    assert server.post("/v1/audio/speech", json={"model": QWEN3, "input": "Hi.", "response_format": "wav", "stream": False}).status_code == 200
    r = server.post("/v1/audio/speech", json={"model": QWEN3, "input": "Hallo.", "language": "de", "response_format": "wav", "stream": False})
    error = r.json()["error"]
    assert r.status_code == 400 and error["param"] == "language" and error["code"] == "unsupported_parameter", r.text
    assert "\n" not in error["message"]
    listed = _models(server)[QWEN3]
    assert listed["loaded"] is True and listed["capabilities"]["languages"] == []


def test_the_embedded_voice_honours_every_ask(server: httpx.Client) -> None:
    body = {"model": "tts-1", "input": "Hello Siobhan.", "response_format": "wav", "stream": False, "speed": 1.5,
            "lexicon": {"Siobhan": "shiv awn"}, "normalize": True, "voice": "lj_female_us", "voice_strength": 0.5, "language": "en"}
    r = server.post("/v1/audio/speech", json=body)
    assert r.status_code == 200, r.text
    ssml = server.post("/v1/audio/speech", json={"model": "tts-1", "input": ASKS[1][1]["input"], "response_format": "wav", "stream": False})
    assert ssml.status_code == 200, ssml.text


def test_a_model_whose_weights_cannot_load_is_a_one_line_503_and_the_server_serves_on(server: httpx.Client) -> None:
    """The Chatterbox folder's weight files are empty: a request it accepts makes the server load them,
    which fails (before: the connection was reset). The caller gets one line naming the model; a
    second request within LOAD_RETRY_S gets the same line without the files being read again."""
    body = {"model": CHATTERBOX, "input": "Hello there.", "response_format": "wav", "stream": False}
    replies = [server.post("/v1/audio/speech", json=body) for _ in range(2)]
    for r in replies:
        error = r.json()["error"]
        assert r.status_code == 503 and error["code"] == "model_unavailable" and error["param"] == "model", r.text
        assert "Chatterbox" in error["message"] and "\n" not in error["message"] and "Traceback" not in r.text
        assert int(r.headers["retry-after"]) >= 1
    assert replies[0].json() == replies[1].json()
    assert LOGS[0].read_text().count("loading Chatterbox") == 1  # the second was answered from the first failure
    assert _models(server)[CHATTERBOX]["loaded"] is False
    spoken = server.post("/v1/audio/speech", json={"model": "tts-1", "input": "Still here.", "response_format": "wav", "stream": False})
    assert spoken.status_code == 200 and sf.read(io.BytesIO(spoken.content))[0].size > 0
