"""The app's API routers in a real HTTP server (uvicorn on a thread of the test) over an engine the
test builds, e.g. over a backend that holds or fails its steps on cue (tests/fake_backend.py)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

START_TIMEOUT_S = 60.0  # a deadline for a hang, not a timing


@contextmanager
def serve_routes(engine: object, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``POST /v1/audio/speech`` served by ``engine`` for every model until the block ends; yields the base URL."""
    import uvicorn
    from fastapi import FastAPI

    import tts_app.catalog.engines as model_engines
    from tts_app.web.api.openai_speech import router

    monkeypatch.setattr(model_engines, "engine_for", lambda model_id: engine)
    app = FastAPI()
    app.include_router(router)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not server.started:
            assert time.monotonic() < deadline and thread.is_alive(), "the test server did not start"
            time.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(START_TIMEOUT_S)
