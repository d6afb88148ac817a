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


def test_readiness_and_the_model_list_follow_the_models_downloads(monkeypatch: pytest.MonkeyPatch) -> None:
    """$TTS_APP_MODELS: /readyz is 503 while a model downloads or loads, 200 once each is ready or unavailable
    (the embedded voice serves); /v1/models and the page's status line say which and why, in one line each."""
    import tts_app.web.server as server
    import tts_app.web.ui.speak.loading_status as status
    from tts_app.catalog import engines, fetch_jobs
    from tts_app.catalog.fetch_jobs import FetchStatus, add_job
    from tts_app.web.ui.layout import build_demo

    monkeypatch.setattr(server, "engine_loaded", lambda: True)
    monkeypatch.setattr(status, "engine_loaded", lambda: True)
    monkeypatch.setattr(engines, "engine_loaded", lambda: False)  # /v1/models must not load the embedded voice here
    monkeypatch.setattr(fetch_jobs, "_jobs", {})  # no download started; monkeypatch puts the table back after
    small, large = add_job("qwen3-0.6b"), add_job("qwen3-1.7b")
    small.stage = "downloading"
    with TestClient(server.create_app(build_demo())) as client:
        loading = client.get("/readyz")
        assert loading.status_code == 503
        assert loading.json() == {"status": "loading", "models": {"qwen3-0.6b": "loading", "qwen3-1.7b": "loading"}}
        rows = {m["id"]: m for m in client.get("/v1/models").json()["data"]}
        assert rows["qwen3-0.6b"]["status"] == "loading" and rows["qwen3-0.6b"]["stage"] == "downloading"
        assert rows["qwen3-0.6b"]["loaded"] is False and rows["qwen3-1.7b"]["stage"] == "waiting"
        refused = client.post("/v1/audio/speech", json={"model": "qwen3-0.6b", "input": "Hi."})
        assert refused.status_code == 503 and refused.json()["error"]["code"] == "model_loading"
        assert refused.json()["error"]["message"] == "qwen3-0.6b: downloading, listing files (the embedded voice serves meanwhile)."
        text, timer = status.loading_status("Ready.")
        assert timer.active and text == ("Ready. qwen3-0.6b: downloading, listing files (the embedded voice serves "
                                         "meanwhile). qwen3-1.7b: waiting (the embedded voice serves meanwhile).")
        small.status, large.status, large.reason = FetchStatus.READY, FetchStatus.UNAVAILABLE, "no repository X on Y"
        ready = client.get("/readyz")
        assert ready.status_code == 200
        assert ready.json() == {"status": "ready", "models": {"qwen3-0.6b": "ready", "qwen3-1.7b": "unavailable"}}
        rows = {m["id"]: m for m in client.get("/v1/models").json()["data"]}
        assert rows["qwen3-1.7b"]["status"] == "unavailable" and rows["qwen3-1.7b"]["reason"] == "no repository X on Y"
        # The selectors' values come from the page, or from anyone posting the event: any string is only compared.
        text, timer, selector, hostile = status.loading_status("Ready.", "piper-joe-medium", "../../etc/passwd\x00" + "x" * 5000)
        assert hostile["value"] == "piper-joe-medium" and "qwen3-1.7b" not in {c[1] for c in hostile["choices"]}
        assert not timer.active and text == ("Ready. qwen3-0.6b is ready. qwen3-1.7b is unavailable: no repository X "
                                             "on Y (the embedded voice serves).")
        assert selector["value"] == "piper-joe-medium"  # the selectors get their choices again once all has settled


def test_the_model_selector_offers_a_fetched_model_once_it_is_loaded(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """A checkpoint folder that a $TTS_APP_MODELS download is still filling (or left partial) is not offered; a run
    naming it gets the download's one line."""
    from tests.support.qwen3_tiny import tiny_backend, write_checkpoint
    from tts_app.catalog import fetch_jobs
    from tts_app.catalog.fetch_jobs import FetchStatus, add_job
    from tts_app.web.ui.common.model_picker import check_model, model_choices
    from tts_app.web.ui.common.user_error import UserError

    write_checkpoint(tiny_backend(), tmp_path)
    monkeypatch.setenv("TTS_APP_QWEN3_PATH", str(tmp_path))
    monkeypatch.setattr(fetch_jobs, "_jobs", {})
    local = add_job("qwen3-local")
    local.stage = "downloading"
    assert "qwen3-local" not in {model_id for _label, model_id in model_choices()}
    with pytest.raises(UserError) as loading:
        check_model("qwen3-local")
    assert loading.value.message == "qwen3-local: downloading, listing files (the embedded voice serves meanwhile)."
    local.status, local.reason = FetchStatus.UNAVAILABLE, "cannot download X: No space left on device"
    with pytest.raises(UserError) as failed:
        check_model("qwen3-local")
    assert failed.value.message == "qwen3-local is unavailable: cannot download X: No space left on device (the embedded voice serves)."
    local.status = FetchStatus.READY
    assert check_model("qwen3-local") == "qwen3-local"


def test_not_ready_while_the_gpu_is_prepared(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake capture step holds the preparation: /readyz is 503 "preparing the GPU" and the page says so until
    it ends; a model whose step fails does not keep the server unready."""
    import threading

    import tts_app.catalog.gpu_preparation as gpu
    import tts_app.web.server as server
    import tts_app.web.ui.speak.loading_status as status
    from tts_app.catalog import fetch_jobs
    from tts_app.web.ui.layout import build_demo

    monkeypatch.setattr(server, "engine_loaded", lambda: True)
    monkeypatch.setattr(status, "engine_loaded", lambda: True)
    monkeypatch.setattr(fetch_jobs, "_jobs", {})  # no $TTS_APP_MODELS model: the GPU alone holds readiness
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
    assert during.json() == {"status": "preparing the GPU", "models": {}} and page == status.PREPARING
    assert after.status_code == 200 and after.json() == {"status": "ready", "models": {}}
    assert status.loading_status(page)[0] == status.READY
    assert result == [{"qwen3-x": 1.5}]


def test_qwen3_checkpoints_are_prepared_on_cuda_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from pathlib import Path

    import torch

    import tts_app.catalog.gpu_preparation as gpu
    from tts_app.models.available import ModelChoice

    monkeypatch.setattr(gpu, "find_models", lambda: [ModelChoice("piper-joe-medium", "voice"), ModelChoice("chatterbox", "C", Path("/c")), ModelChoice("qwen3-0.6b", "Q", Path("/x")),
                                                     ModelChoice("qwen3-1.7b", "Q")])  # the last is not on this machine
    monkeypatch.setattr(gpu, "served_ids", lambda: ["piper-joe-medium", "chatterbox", "qwen3-0.6b", "qwen3-1.7b"])  # the operator's
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu.qwen3_steps() == []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert [m for m, _ in gpu.qwen3_steps()] == ["qwen3-0.6b"]
