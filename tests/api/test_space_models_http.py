"""$TTS_APP_MODELS through the real HTTP server, against a local fake hub (tests/support/fake_hub.py; no internet).

A fresh start as on the GPU Space of spaces/gpu/ (an empty HF_HOME, SPACE_ID set, the recipe's ``TTS_APP_MODELS``,
qwen3-0.6b, plus qwen3-1.7b) and a hub that holds a tiny random
Qwen3-TTS checkpoint under the 0.6B's repository, and no 1.7B: the 0.6B is fetched, loaded and speaks (the same
samples as the checkpoint loaded here); the 1.7B is one line (missing repository) in /v1/models, the log and the
page's status; /readyz is 503 until both have settled. A hub that refuses connections: one line, Piper speaks.
An unknown name stops the start with one line.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from tests.support.app_server import serve_app
from tests.support.fake_hub import FakeHub
from tests.support.paths import REPO
from tests.support.qwen3_tiny import tiny_backend, write_checkpoint
from tests.support.space_recipe import header, recipe_models, RECIPE
from tts_app.models.available import QWEN3_MODELS

pytestmark = pytest.mark.slow  # starts two servers, one of them loading a tiny Qwen3 checkpoint

SMALL, LARGE = "qwen3-0.6b", "qwen3-1.7b"
READY_TIMEOUT_S = 600  # the embedded voice and the tiny checkpoint load on a loaded 2-core machine
LINE = "Hello there."


def _env(tmp: Path, endpoint: str, models: str) -> dict[str, str]:
    return {"TTS_APP_MODELS": models, "HF_ENDPOINT": endpoint, "SPACE_ID": "someone/tts-app-gpu", "HF_HOME": str(tmp / "hf"),
            "HF_HUB_OFFLINE": "0", "HF_HUB_DISABLE_XET": "1", "TTS_APP_MAX_SECONDS": "1", "TTS_APP_QWEN3_PATH": ""}


def _wait_ready(http: httpx.Client) -> list[dict]:
    """/readyz polled until 200; returns every body seen."""
    seen, deadline = [], time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        r = http.get("/readyz")
        seen.append(r.json() | {"code": r.status_code})
        if r.status_code == 200:
            return seen
        time.sleep(0.5)
    raise AssertionError(f"/readyz not 200 within {READY_TIMEOUT_S} s: {seen[-1]}")


def _models(http: httpx.Client) -> dict[str, dict]:
    r = http.get("/v1/models")
    assert r.status_code == 200, r.text
    return {m["id"]: m for m in r.json()["data"]}


def _speak(http: httpx.Client, model: str) -> httpx.Response:
    return http.post("/v1/audio/speech", json={"model": model, "input": LINE, "response_format": "pcm", "stream": False})


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-qwen3")
    write_checkpoint(tiny_backend(), folder)
    return folder


@pytest.fixture(scope="module")
def fetched(checkpoint: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, list[dict], Path, FakeHub]]:
    tmp = tmp_path_factory.mktemp("space")
    assert recipe_models() == [SMALL] and header(RECIPE / "README.md")["app_file"] == "app.py"  # what serve_app runs
    with FakeHub({QWEN3_MODELS[SMALL].repo: checkpoint}) as hub:
        with serve_app(tmp / "app.log", _env(tmp, hub.url, ",".join([*recipe_models(), LARGE]))) as (base, _process):
            with httpx.Client(base_url=base, timeout=600) as http:
                yield http, _wait_ready(http), tmp, hub


def test_a_fresh_start_fetches_loads_and_speaks_the_model(fetched, checkpoint: Path) -> None:
    http, seen, tmp, hub = fetched
    assert seen[0]["code"] == 503 and seen[0]["status"] == "loading"  # the first answer comes before the models load
    assert seen[-1] == {"status": "ready", "models": {SMALL: "ready", LARGE: "unavailable"}, "code": 200}
    snapshot = next((tmp / "hf" / "hub" / "models--Qwen--Qwen3-TTS-12Hz-0.6B-Base" / "snapshots").iterdir())
    for name in ("config.json", "model.safetensors", "tokenizer.json", "speech_tokenizer/config.json",
                 "speech_tokenizer/model.safetensors"):
        assert (snapshot / name).read_bytes() == (checkpoint / name).read_bytes(), name
    listed = _models(http)[SMALL]
    assert listed["status"] == "ready" and listed["loaded"] is True and "reason" not in listed
    r = _speak(http, SMALL)
    assert r.status_code == 200, r.text
    served = np.frombuffer(r.content, dtype="<i2")
    assert served.size > 0 and np.array_equal(served, _reference_samples(checkpoint))


def _reference_samples(folder: Path) -> np.ndarray:
    """The line spoken here by the same checkpoint, loaded from its folder, as 16-bit samples."""
    from tts_app.audio.wav_io import pcm16_array
    from tts_app.backends.qwen3 import Qwen3Backend
    from tts_app.engine import Engine, SpeechParams
    from tts_app.models.qwen3.sampling import SamplingParams

    backend = Qwen3Backend.from_pretrained(str(folder), device="cpu", sampling=SamplingParams(max_new_tokens=13))
    engine = Engine(backend=backend)
    try:
        return pcm16_array(engine.submit(LINE, SpeechParams(seed=0)).result(timeout=300))
    finally:
        engine.close()


def test_a_missing_repository_is_one_line_and_the_embedded_voice_speaks(fetched) -> None:
    http, _seen, tmp, _hub = fetched
    listed = _models(http)[LARGE]
    reason = f"no repository {QWEN3_MODELS[LARGE].repo} on "
    assert listed["status"] == "unavailable" and listed["reason"].startswith(reason) and "\n" not in listed["reason"]
    log = [line for line in (tmp / "app.log").read_text().splitlines() if f"{LARGE} is unavailable" in line]
    assert len(log) == 1 and reason in log[0] and log[0].endswith("(the embedded voice serves).")
    refused = _speak(http, LARGE)
    assert refused.status_code == 400 and refused.json()["error"]["message"] == f"{LARGE} is unavailable: {listed['reason']} (the embedded voice serves)."
    assert _speak(http, "tts-1").status_code == 200


def test_a_refused_connection_is_one_line_and_the_embedded_voice_speaks(tmp_path: Path) -> None:
    with socket.socket() as sock:  # bound, never listening: connections to it are refused
        sock.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{sock.getsockname()[1]}"
        with serve_app(tmp_path / "app.log", _env(tmp_path, endpoint, SMALL)) as (base, _process):
            with httpx.Client(base_url=base, timeout=600) as http:
                assert _wait_ready(http)[-1]["models"] == {SMALL: "unavailable"}
                listed = _models(http)[SMALL]
                assert listed["reason"].startswith(f"cannot download {QWEN3_MODELS[SMALL].repo} from {endpoint}: ConnectError")
                assert "\n" not in listed["reason"]
                r = _speak(http, "tts-1")
                assert r.status_code == 200 and len(r.content) > 0
    log = [line for line in (tmp_path / "app.log").read_text().splitlines() if f"{SMALL} is unavailable" in line]
    assert len(log) == 1 and "Traceback" not in (tmp_path / "app.log").read_text()


def test_an_unknown_model_name_stops_the_start_with_one_line() -> None:
    env = {**os.environ, "TTS_APP_MODELS": "qwen3-0.6b,qwen9", "GRADIO_SERVER_PORT": "1"}
    r = subprocess.run([sys.executable, "app.py"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and r.stdout == "" and r.stderr.count("\n") == 1
    assert r.stderr.startswith("TTS_APP_MODELS: unknown model 'qwen9'; choose from: qwen3-0.6b, qwen3-1.7b, ")
