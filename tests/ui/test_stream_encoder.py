"""The live player's encoder waits for ffmpeg to start rather than sending an empty first segment."""

from __future__ import annotations

from tts_app.ui.stream_encoder import ENCODER_START_WAIT_S, tune_stream_encoder


def test_first_segment_may_wait_for_the_encoder() -> None:
    from gradio import audio_stream_encoder

    tune_stream_encoder()
    assert audio_stream_encoder.STARTUP_WAIT >= ENCODER_START_WAIT_S
