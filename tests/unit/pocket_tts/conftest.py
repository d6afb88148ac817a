"""Fixtures of the Pocket TTS tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def offline_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """huggingface_hub offline, with an empty cache: its constants are read at import, so the variables alone
    (set after it) left the download trying the network for 23 s a test before it failed."""
    import huggingface_hub.constants as hub  # the fetch tests only

    cache = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(hub, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hub, "HF_HUB_CACHE", str(cache))
    return cache


@pytest.fixture(autouse=True)
def model_output_unlevelled(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The model's own output: these tests compare it with the official code's and between windowings, so the
    level keeper (tts_app.audio.loudness, tested in tests/unit/test_loudness.py and through the engine) is off,
    unless the module says ``LEVELLED = True``."""
    if not getattr(request.module, "LEVELLED", False):
        import tts_app.backends.pocket_tts as backend  # torch: only the tests that load a checkpoint

        monkeypatch.setattr(backend, "LEVELLED", False)
