"""/healthz answers at once; /readyz says whether the model has loaded (503 while it loads)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient


@pytest.mark.parametrize("loaded", [False, True])
def test_readiness_follows_the_engine(monkeypatch: pytest.MonkeyPatch, loaded: bool) -> None:
    import tts_app.web.server as server
    from tts_app.web.ui.layout import build_demo

    monkeypatch.setattr(server, "engine_loaded", lambda: loaded)
    with TestClient(server.create_app(build_demo())) as client:
        health = client.get("/healthz")
        ready = client.get("/readyz")
    assert health.status_code == 200
    assert health.json() == {"status": "ok", "engine": "ready" if loaded else "loading"}
    assert ready.status_code == (200 if loaded else 503)
    assert ready.json()["status"] == ("ready" if loaded else "loading")
