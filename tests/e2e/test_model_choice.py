"""Which models are in memory is the operator's choice: a request naming one not loaded is a one-line refusal (issue 46, hole 5).

Through the real server (python app.py, default settings). On e67156b one anonymous 9-character request
naming ``piper-joe-medium-fast`` loaded a second copy of the voice: +682 MB peak, +632 MB for the life of
the process. Now only the operator loads a model (at start: $TTS_APP_LOAD_MODELS); the API answers 400 and
the page a one-line error, and the server's memory does not move.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_page_runs import _generate_data, _wait_for
from tests.e2e.test_security import _vm_kb
from tests.support.app_server import serve_app
from tts_app.models.available import EMBEDDED_FAST_ID

pytestmark = pytest.mark.slow

TIMEOUT = httpx.Timeout(120.0)
# A second copy of the voice was +632 MB kept; a refused request's own cost (parsing, a log line, the page's
# event) is a few MB.
GROWTH_AT_MOST_MB = 60


@pytest.fixture(scope="module")
def server(artifacts_dir: Path) -> Iterator[tuple[str, int]]:
    log = artifacts_dir / "model_choice_server.log"
    with serve_app(log, ready=True) as (base, process):
        yield base, process.pid


def _rss_mb(pid: int) -> float:
    return _vm_kb(pid, "VmRSS") / 1024


def _page_event(base: str, data: list[Any]) -> dict[str, Any]:
    session = uuid.uuid4().hex[:11]
    with httpx.Client(base_url=base, timeout=TIMEOUT) as client:
        fn = next(dep["id"] for dep in client.get("/config").json()["dependencies"] if dep["api_name"] == "generate")
        body = {"data": data, "fn_index": fn, "session_hash": session, "event_data": None, "trigger_id": None}
        assert client.post("/gradio_api/queue/join", json=body).status_code == 200
        with client.stream("GET", "/gradio_api/queue/data", params={"session_hash": session}) as stream:
            for line in stream.iter_lines():
                message = json.loads(line[5:]) if line.startswith("data:") else {}
                if message.get("msg") == "process_completed":
                    return message
    raise AssertionError("the page event did not complete")


def test_a_request_naming_a_model_not_loaded_is_refused_and_loads_nothing(server: tuple[str, int]) -> None:
    base, pid = server
    spoken = httpx.post(f"{base}/v1/audio/speech", json={"model": "tts-1", "input": "Hi there.", "response_format": "wav"}, timeout=TIMEOUT)
    assert spoken.status_code == 200  # the embedded voice, warm
    idle = _rss_mb(pid)
    for _ in range(3):
        r = httpx.post(f"{base}/v1/audio/speech", json={"model": EMBEDDED_FAST_ID, "input": "Hi there."}, timeout=TIMEOUT)
        error = r.json()["error"]
        assert r.status_code == 400 and error["param"] == "model" and error["code"] == "model_not_found", r.text
        assert "\n" not in error["message"] and EMBEDDED_FAST_ID in error["message"]
    page = _page_event(base, _generate_data("Hi there.")[:11] + [EMBEDDED_FAST_ID, False])
    message = str(page["output"].get("error"))
    assert not page["success"] and "\n" not in message, page
    assert "is not loaded on this server" in message or "Unknown model" in message, message  # (the latter: a CPU without bf16)
    models = {m["id"]: m for m in httpx.get(f"{base}/v1/models", timeout=TIMEOUT).json()["data"]}
    assert EMBEDDED_FAST_ID not in models  # only what a request can use is listed
    grown = _rss_mb(pid) - idle
    assert grown <= GROWTH_AT_MOST_MB, f"the server grew by {grown:.0f} MB"
    _wait_for(lambda: httpx.get(f"{base}/healthz", timeout=10).status_code == 200, 10, "the server")
