"""Settings for the live player's AAC encoder (Gradio's: one ffmpeg process per stream)."""

from __future__ import annotations

import logging

from tts_app.framework import raise_stream_start_wait

logger = logging.getLogger(__name__)

ENCODER_START_WAIT_S = 3.0  # how long the first segment may wait for ffmpeg to start


def tune_stream_encoder(start_wait_s: float = ENCODER_START_WAIT_S) -> None:
    """Let the stream's first segment wait for the AAC encoder to start.

    Gradio waits 0.1 s for ffmpeg's first frames; on a busy machine ffmpeg takes longer, the first
    segment comes out empty, and the browser's player, handed a playlist with no segment, fails
    and retries with a back-off (10 s to first sound in the browser test). The wait ends as soon
    as frames arrive, so a quick start costs nothing.
    """
    if not raise_stream_start_wait(start_wait_s):  # a Gradio without this setting: nothing to tune, say so once
        logger.warning("gradio.audio_stream_encoder.STARTUP_WAIT not found; the first stream segment may be empty")
