"""A backend that holds its work on cue, behind the real API routes: what a client receives before the
test releases it was sent while synthesis was unfinished (the ``held_server`` fixture)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from tests.support.fake_backend import FakeBackend
from tests.support.route_server import serve_routes

HOLD_S = 60.0  # a deadline for a hang, not a timing: the test releases the backend on an event


class HeldBackend(FakeBackend):
    """Decodes the first words, then holds every later step until the test sets ``unhold``."""

    FREE_STEPS = 2

    def __init__(self) -> None:
        super().__init__()
        self.unhold = threading.Event()  # not `release`: that is Backend.release(state)

    def step(self, states, emit=None):
        if len(self.batches) >= self.FREE_STEPS and not self.unhold.wait(HOLD_S):
            raise RuntimeError("the test never released the backend")
        return super().step(states, emit)


@pytest.fixture
def held_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, HeldBackend]]:
    """The speech route in a real HTTP server over an engine whose backend holds its work: what the
    client receives before ``unhold`` was set while synthesis was unfinished."""
    from tts_app.engine import Engine

    backend = HeldBackend()
    engine = Engine(backend, max_batch_size=4)
    try:
        with serve_routes(engine, monkeypatch) as base:
            yield base, backend
            backend.unhold.set()
    finally:
        backend.unhold.set()
        engine.close()
