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
