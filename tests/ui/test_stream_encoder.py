"""The live player's encoder waits for ffmpeg to start rather than sending an empty first segment."""

from __future__ import annotations

import logging

import pytest
from gradio import audio_stream_encoder

from tts_app.web.ui.speak.stream_encoder import ENCODER_START_WAIT_S, tune_stream_encoder

GRADIO_DEFAULT_S = 0.1  # Gradio's own wait, which a busy machine's ffmpeg outlasts


def test_first_segment_may_wait_for_the_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    # From Gradio's default, not from whatever an earlier test (or build_demo) left: a no-op would pass then.
    monkeypatch.setattr(audio_stream_encoder, "STARTUP_WAIT", GRADIO_DEFAULT_S)
    tune_stream_encoder()
    assert audio_stream_encoder.STARTUP_WAIT == ENCODER_START_WAIT_S > GRADIO_DEFAULT_S


def test_a_longer_wait_already_set_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audio_stream_encoder, "STARTUP_WAIT", 2 * ENCODER_START_WAIT_S)
    tune_stream_encoder()
    assert audio_stream_encoder.STARTUP_WAIT == 2 * ENCODER_START_WAIT_S


def test_the_page_tunes_it_when_built(monkeypatch: pytest.MonkeyPatch) -> None:
    from tts_app.web.ui.layout import build_demo

    monkeypatch.setattr(audio_stream_encoder, "STARTUP_WAIT", GRADIO_DEFAULT_S)
    build_demo()
    assert audio_stream_encoder.STARTUP_WAIT == ENCODER_START_WAIT_S


def test_a_gradio_without_the_setting_is_reported(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delattr(audio_stream_encoder, "STARTUP_WAIT")
    with caplog.at_level(logging.WARNING, logger="tts_app.web.ui.speak.stream_encoder"):
        tune_stream_encoder()
    assert "STARTUP_WAIT not found" in caplog.text
    assert not hasattr(audio_stream_encoder, "STARTUP_WAIT")  # not invented where Gradio does not read it
