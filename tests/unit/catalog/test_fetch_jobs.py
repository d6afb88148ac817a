"""The state of $TTS_APP_MODELS downloads: the names it accepts, and the one line each state shows."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tts_app import settings
from tts_app.catalog.fetch_jobs import FetchJob, FetchStatus, requested_models


@dataclass
class HalfPlan:
    """A download's plan as the page reads it: bytes on disk and in all."""

    done: int
    total_bytes: int

    def bytes_on_disk(self) -> int:
        return self.done


def test_the_models_named_are_checked_and_kept_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TTS_APP_MODELS", " Qwen3-0.6B , chatterbox,qwen3-0.6b,")
    assert requested_models() == ("qwen3-0.6b", "chatterbox")
    monkeypatch.setenv("TTS_APP_MODELS", "qwen3-0.6b," + "x" * 100)
    with pytest.raises(settings.SettingError) as caught:
        requested_models()
    assert str(caught.value).startswith(f"TTS_APP_MODELS: unknown model '{'x' * 40}'; choose from: qwen3-0.6b, ")
    monkeypatch.delenv("TTS_APP_MODELS")
    assert requested_models() == ()


@pytest.mark.parametrize(("done", "total", "shown"), [
    (1_100_000_000, 2_500_000_000, "44% of 2.5 GB"), (30_000, 77_000, "38% of 1 MB"), (0, 4_500_000_000, "0% of 4.5 GB"),
])  # fmt: skip
def test_a_download_shows_how_far_it_is(done: int, total: int, shown: str) -> None:
    job = FetchJob("qwen3-0.6b", stage="downloading", plan=HalfPlan(done, total))  # type: ignore[arg-type]
    assert job.line() == f"qwen3-0.6b: downloading, {shown} (the embedded voice serves meanwhile)."
    assert job.as_json() == {"status": "loading", "stage": "downloading", "downloaded_bytes": done, "total_bytes": total}


def test_each_settled_state_is_one_line() -> None:
    failed = FetchJob("chatterbox", status=FetchStatus.UNAVAILABLE, reason="cannot download R: No space left on device")
    assert failed.line() == "chatterbox is unavailable: cannot download R: No space left on device (the embedded voice serves)."
    assert failed.as_json() == {"status": "unavailable", "reason": "cannot download R: No space left on device"}
    assert FetchJob("qwen3-1.7b", status=FetchStatus.READY).as_json() == {"status": "ready"}
    assert FetchJob("qwen3-1.7b", stage="loading").line() == "qwen3-1.7b: loading (the embedded voice serves meanwhile)."
