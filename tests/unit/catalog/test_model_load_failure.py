"""A found model whose files cannot be loaded: one line, remembered for a while, tried again after."""

from pathlib import Path

import pytest

from tts_app.catalog import engines
from tts_app.models.available import CHATTERBOX_ID


def test_a_failed_load_is_one_line_remembered_then_tried_again(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[Path] = []
    now = [1000.0]

    def broken(path: Path) -> None:
        calls.append(path)
        raise RuntimeError(f"cannot read {path}/t3_cfg.safetensors: HeaderTooSmall\n  (more detail)")

    monkeypatch.setattr(engines, "_create_chatterbox", broken)
    monkeypatch.setattr(engines.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(engines, "_failed", {})
    with pytest.raises(engines.ModelLoadFailed) as first:
        engines._load(CHATTERBOX_ID, "Chatterbox", tmp_path)
    message = str(first.value)
    assert "\n" not in message and message.startswith("Chatterbox cannot be loaded") and "RuntimeError" in message
    assert str(tmp_path) not in message  # a path on the server is for its log, not for a visitor
    now[0] += engines.LOAD_RETRY_S - 1
    with pytest.raises(engines.ModelLoadFailed, match="RuntimeError"):
        engines._load(CHATTERBOX_ID, "Chatterbox", tmp_path)
    assert len(calls) == 1  # answered from the first failure: the files were not read again
    now[0] += 2
    with pytest.raises(engines.ModelLoadFailed):
        engines._load(CHATTERBOX_ID, "Chatterbox", tmp_path)
    assert len(calls) == 2  # after LOAD_RETRY_S the operator may have mended the files: tried again

    monkeypatch.setattr(engines, "_create_chatterbox", lambda path: "engine")
    now[0] += engines.LOAD_RETRY_S
    assert engines._load(CHATTERBOX_ID, "Chatterbox", tmp_path) == "engine"
    assert CHATTERBOX_ID not in engines._failed
