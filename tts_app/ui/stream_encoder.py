"""The live player's AAC encoder (Gradio's, one ffmpeg per stream), tuned for the first sound.

Gradio encodes each streamed yield into one HLS segment with whatever AAC frames ffmpeg has
emitted when the first of them appears: for the first yield that is one or two frames (46 to
93 ms) of the 0.3-0.5 s fed, the rest waiting for the next yield. Chromium does not start an
audio element on 93 ms of buffer, so the first sound waited for the engine's second window
(about 1 s in the browser test). The encoder below lets the first segment carry every frame
the fed audio makes, so the player starts on the first window alone.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

ENCODER_START_WAIT_S = 3.0  # how long the first segment may wait for ffmpeg to start
SETTLE_S = 0.05  # once frames flow, a further frame comes within this, or none is coming
AAC_FRAME_SAMPLES = 1024


def tune_stream_encoder(start_wait_s: float = ENCODER_START_WAIT_S) -> None:
    """Install the first-segment encoder into Gradio's Audio output, and a longer start wait.

    The start wait: Gradio waits 0.1 s for ffmpeg's first frames; on a busy machine ffmpeg
    takes longer, the first segment comes out empty, and the player, handed a playlist with no
    segment, fails and retries with a back-off. The wait ends as soon as frames arrive.
    """
    from gradio import audio_stream_encoder
    from gradio.components import audio

    if isinstance(getattr(audio_stream_encoder, "STARTUP_WAIT", None), (int, float)):
        audio_stream_encoder.STARTUP_WAIT = max(float(audio_stream_encoder.STARTUP_WAIT), start_wait_s)
    else:  # a Gradio without this constant: nothing to tune, say so once
        logger.warning("gradio.audio_stream_encoder.STARTUP_WAIT not found; the first stream segment may be empty")
    if getattr(audio, "AacStreamEncoder", None) is audio_stream_encoder.AacStreamEncoder:
        audio.AacStreamEncoder = first_segment_encoder_class()
    elif getattr(audio, "AacStreamEncoder", None) is not first_segment_encoder_class():
        logger.warning("gradio.components.audio.AacStreamEncoder not found; the first sound may wait for a second segment")


_encoder_class: type | None = None


def first_segment_encoder_class() -> type:
    """Gradio's AacStreamEncoder whose first ``take`` returns the frames of all the audio fed so far.

    Made on first use (Gradio is imported then, not at this module's import).
    """
    global _encoder_class
    if _encoder_class is None:
        from gradio.audio_stream_encoder import AacStreamEncoder

        class FirstSegmentEncoder(AacStreamEncoder):
            def __init__(self, *args: object, **kwargs: object) -> None:
                super().__init__(*args, **kwargs)
                self.fed_samples = 0
                self._first_taken = False

            def feed(self, pcm: bytes) -> None:
                super().feed(pcm)
                self.fed_samples += len(pcm) // (2 * self.channels)  # s16le

            def take(self, timeout: float | None = None) -> list[bytes]:
                if timeout is not None or self._first_taken:
                    return super().take(timeout)
                self._first_taken = True
                frames = super().take()  # waits for ffmpeg's first frame (the start wait)
                # ffmpeg's AAC encoder holds back two frames (its look-ahead) and the partial one;
                # the rest is there in milliseconds. The settle bounds the cost if the count is off.
                expected = int(self.fed_samples * self.output_rate / self.sample_rate) // AAC_FRAME_SAMPLES - 2
                while frames and len(frames) < expected:
                    more = super().take(timeout=SETTLE_S)
                    if not more:
                        break
                    frames += more
                return frames

        _encoder_class = FirstSegmentEncoder
    return _encoder_class
