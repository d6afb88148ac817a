"""An ffmpeg encoder slot is taken when the request's audio starts flowing, never while it waits for the engine.

The backend below holds its first step until the test lets it go, so the request sits before its
first audio for as long as the test likes; the server's slot table must not count it meanwhile,
then count it once audio flows, then give it back when the reply ends.
"""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from tests.support.fake_backend import FakeBackend
from tests.support.route_server import serve_routes
from tts_app.audio.encoder_slots import SLOTS

WAIT_S = 60.0  # deadlines for hangs, not timings


class _HeldFirstStep(FakeBackend):
    """Steps wait for ``go`` (set by the test): a request admitted but with no audio yet."""

    def __init__(self) -> None:
        super().__init__()
        self.go = threading.Event()
        self.waiting = threading.Event()

    def step(self, states, emit=None):
        self.waiting.set()
        assert self.go.wait(WAIT_S), "the test never let the step go"
        return super().step(states, emit)


def _until(done, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, f"waited {WAIT_S:.0f} s for {what}"
        time.sleep(0.01)


@pytest.mark.parametrize("stream", [True, False])
def test_a_request_waiting_for_its_first_audio_holds_no_encoder_slot(monkeypatch: pytest.MonkeyPatch, stream: bool) -> None:
    from tts_app.engine import Engine

    backend = _HeldFirstStep()
    engine = Engine(backend, max_batch_size=4)
    held_before = SLOTS.held()
    replies: list[httpx.Response] = []
    try:
        with serve_routes(engine, monkeypatch) as base:
            body = {"model": "tts-1", "input": "one two three", "response_format": "aac", "stream": stream}
            sender = threading.Thread(target=lambda: replies.append(httpx.post(f"{base}/v1/audio/speech", json=body, timeout=WAIT_S)))
            sender.start()
            _until(backend.waiting.is_set, "the request to reach the engine's step")
            assert SLOTS.held() == held_before  # admitted, no audio yet: no ffmpeg slot
            backend.go.set()
            sender.join(WAIT_S)
            assert not sender.is_alive() and replies and replies[0].status_code == 200, replies
            assert replies[0].content  # encoded audio came back
            _until(lambda: SLOTS.held() == held_before, "the slot to be given back")
    finally:
        backend.go.set()
        engine.close()
