"""The live player's first segment carries all the audio fed so far (Gradio's encoder, real ffmpeg)."""

from __future__ import annotations

import numpy as np
import pytest

from tts_app.ffmpeg_path import ensure_ffmpeg_on_path
from tts_app.ui.stream_encoder import first_segment_encoder_class, tune_stream_encoder

RATE = 22050


def _pcm(seconds: float) -> bytes:
    t = np.arange(int(seconds * RATE)) / RATE
    return (np.sin(2 * np.pi * 220 * t) * 8000).astype("<i2").tobytes()


@pytest.mark.parametrize("seconds", [0.3, 0.45, 0.74])
def test_first_segment_holds_the_first_window(seconds: float) -> None:
    ensure_ffmpeg_on_path()
    encoder = first_segment_encoder_class()(RATE, 1)
    try:
        encoder.feed(_pcm(seconds))
        first = encoder.take()
        # All but what ffmpeg holds back: two 1024-sample frames of look-ahead and the partial
        # frame (Gradio's own encoder returns one frame here, 46 ms, whatever was fed).
        whole_frames = int(seconds * RATE) // 1024
        assert len(first) >= whole_frames - 3, len(first)  # -3: a frame late on a busy CPU
        encoder.feed(_pcm(0.3))
        later = encoder.take()  # later segments keep Gradio's own behaviour: what is ready now
        assert len(first) + len(later) + len(encoder.flush()) >= (seconds + 0.3) * RATE / 1024
    finally:
        encoder.close()


def test_gradio_audio_output_uses_it() -> None:
    from gradio import audio_stream_encoder
    from gradio.components import audio

    tune_stream_encoder()
    assert audio.AacStreamEncoder is first_segment_encoder_class()
    assert issubclass(audio.AacStreamEncoder, audio_stream_encoder.AacStreamEncoder)
    assert audio_stream_encoder.STARTUP_WAIT >= 3.0
