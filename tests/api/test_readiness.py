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


def test_not_ready_while_the_gpu_is_prepared(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake capture step holds the preparation: /readyz is 503 "preparing the GPU" and the page says so until
    it ends; a model whose step fails does not keep the server unready."""
    import threading

    import tts_app.catalog.gpu_preparation as gpu
    import tts_app.web.server as server
    import tts_app.web.ui.speak.loading_status as status
    from tts_app.web.ui.layout import build_demo

    monkeypatch.setattr(server, "engine_loaded", lambda: True)
    monkeypatch.setattr(status, "engine_loaded", lambda: True)
    monkeypatch.setattr(gpu, "_state", "idle")  # restored after: other tests see no preparation
    release = threading.Event()

    def capture() -> float:
        assert release.wait(30)
        return 1.5

    def broken() -> float:
        raise RuntimeError("CUDA out of memory\nmore")

    gpu.announce()
    with TestClient(server.create_app(build_demo())) as client:
        before = client.get("/readyz")  # announced, preparation not started yet
        worker = threading.Thread(target=lambda: result.append(gpu.prepare(lambda: [("broken", broken), ("qwen3-x", capture)])))
        result: list[dict[str, float]] = []
        worker.start()
        during = client.get("/readyz")
        page = status.loading_status(None)[0]
        release.set()
        worker.join(30)
        after = client.get("/readyz")
    assert before.status_code == during.status_code == 503
    assert during.json() == {"status": "preparing the GPU"} and page == status.PREPARING
    assert after.status_code == 200 and after.json() == {"status": "ready"}
    assert status.loading_status(page)[0] == status.READY
    assert result == [{"qwen3-x": 1.5}]


def test_qwen3_checkpoints_are_prepared_on_cuda_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from pathlib import Path

    import torch

    import tts_app.catalog.gpu_preparation as gpu
    from tts_app.models.available import ModelChoice

    monkeypatch.setattr(gpu, "find_models", lambda: [ModelChoice("piper-joe-medium", "voice"), ModelChoice("chatterbox", "C", Path("/c")), ModelChoice("qwen3-0.6b", "Q", Path("/x")),
                                                     ModelChoice("qwen3-1.7b", "Q")])  # the last is not on this machine
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu.qwen3_steps() == []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert [m for m, _ in gpu.qwen3_steps()] == ["qwen3-0.6b"]
