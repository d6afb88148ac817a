"""Issue 46's smaller items, through the real server: what SECURITY.md and docs/ promise.

- A model name echoed in an error is cut at 40 characters with "…" (it was cut at 64, no "…").
- ``GET /v1/audio/voices?model=`` a model not served here is a one-line 400, not Piper's voices.
- No hub call at start by default: Gradio's analytics (a version check and start-up analytics) are off
  unless the operator sets ``GRADIO_ANALYTICS_ENABLED`` (tests/support/app_server.py sets it for every
  other test, so this server starts without it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.app_server import serve_app
from tests.support.paths import REPO

pytestmark = pytest.mark.slow

TIMEOUT = httpx.Timeout(120.0)
LONG_NAME = "m" * 39 + "XYZ" + "q" * 5000


@pytest.fixture(scope="module")
def server(artifacts_dir: Path) -> Iterator[str]:
    with serve_app(artifacts_dir / "small_promises.log", {"GRADIO_ANALYTICS_ENABLED": None}) as (base, _process):
        yield base


def _message(reply: httpx.Response) -> str:
    assert reply.status_code == 400, (reply.status_code, reply.text[:300])
    message = reply.json()["error"]["message"]
    assert "\n" not in message
    return message


def test_an_echoed_model_name_is_cut_at_40_characters_with_an_ellipsis(server: str) -> None:
    speech = httpx.post(f"{server}/v1/audio/speech", json={"model": LONG_NAME, "input": "Hi.", "voice": "alloy"}, timeout=TIMEOUT)
    voices = httpx.get(f"{server}/v1/audio/voices", params={"model": LONG_NAME}, timeout=TIMEOUT)
    for message in (_message(speech), _message(voices)):
        assert repr(LONG_NAME[:40]) + "…" in message and "XYZ" not in message, message


def test_voices_of_a_model_not_served_are_refused(server: str) -> None:
    reply = httpx.get(f"{server}/v1/audio/voices", params={"model": "qwen3-0.6b"}, timeout=TIMEOUT)
    assert "not served here" in _message(reply) and reply.json()["error"]["code"] == "model_not_found"
    served = httpx.get(f"{server}/v1/audio/voices", params={"model": "piper-joe-medium"}, timeout=TIMEOUT)
    assert served.status_code == 200 and "default" in served.json()["voices"]


def test_no_analytics_by_default(server: str) -> None:
    assert httpx.get(f"{server}/config", timeout=TIMEOUT).json()["analytics_enabled"] is False


def test_an_operators_explicit_choice_of_analytics_is_kept() -> None:
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "True", "HF_HUB_OFFLINE": "1"}
    code = "import app; print(app.demo.analytics_enabled)"
    shown = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert shown.stdout.strip().splitlines()[-1] == "True", shown.stderr[-2000:]
