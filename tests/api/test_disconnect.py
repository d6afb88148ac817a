"""A client that leaves: its engine request is cancelled, streaming or not (API route, real HTTP)."""

from __future__ import annotations

import json
import time

import httpx
import pytest

# ~4,000 characters, four minutes of speech: many seconds to decode even on the fastest CPU, so the
# client that gives up after 1 s always leaves a request still running.
LONG_TEXT = " ".join(["This sentence is long so the request takes a while to decode."] * 63)


def _stats(base: str) -> dict:
    event_id = httpx.post(f"{base}/gradio_api/call/engine_stats", json={"data": []}, timeout=120).json()["event_id"]
    text = httpx.get(f"{base}/gradio_api/call/engine_stats/{event_id}", timeout=120).text
    # The event stream may hold heartbeats first; the result follows "event: complete".
    return json.loads(text.split("event: complete\ndata: ", 1)[1].split("\n", 1)[0])[0]


def _wait_idle(base: str, cancelled_at_least: int = 0, timeout_s: float = 60.0) -> dict:
    """Stats once the engine is empty (and has counted ``cancelled_at_least`` cancellations)."""
    deadline = time.monotonic() + timeout_s
    while True:
        stats = _stats(base)
        if stats["queued"] == 0 and stats["active"] == 0 and stats["cancelled"] >= cancelled_at_least:
            return stats
        assert time.monotonic() < deadline, stats
        time.sleep(0.2)


@pytest.mark.parametrize("stream", [False, True])
def test_a_client_that_leaves_cancels_its_request(app_server: str, stream: bool) -> None:
    before = _wait_idle(app_server)
    body = {"model": "tts-1", "input": LONG_TEXT, "stream": stream}
    for _ in range(3):
        if stream:
            with httpx.stream("POST", f"{app_server}/v1/audio/speech", json=body, timeout=120) as reply:
                next(reply.iter_bytes())  # the first audio, then hang up
        else:
            with pytest.raises(httpx.TimeoutException):
                httpx.post(f"{app_server}/v1/audio/speech", json=body, timeout=1.0)  # gives up after 1 s
    # A request the server had not yet submitted when its client left is submitted, then cancelled, a bit later.
    after = _wait_idle(app_server, cancelled_at_least=before["cancelled"] + 3)
    assert after["cancelled"] - before["cancelled"] == 3, (before, after)
    assert after["finished"] == before["finished"], "an abandoned request ran to its end"
