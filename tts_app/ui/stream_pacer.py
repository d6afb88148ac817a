"""Cut the live stream into segments an HLS player can keep up with.

Gradio turns each streamed yield into one HLS segment. The browser's player (hls.js) reloads
a live playlist after the duration of its newest segment when the playlist grew, and after
half the target duration (0.5 s: the longest segment rounded up to whole seconds) when it
did not. So short segments keep the player looking for new audio every few tenths of a
second, and the first yield need only hold the engine's first window (64 latent frames, up to
0.74 s at 22,050 Hz, less the decoder's right context): waiting for more costs a whole engine
step before the first sound.
"""

from __future__ import annotations

import logging

import numpy as np

logger = logging.getLogger(__name__)

PREBUFFER_S = 0.3  # audio held back before the player starts: less than any first window gives
MAX_SEGMENT_S = 0.4  # short segments: the player reloads the playlist after the newest one's duration
MIN_SEGMENT_S = 0.2  # no tiny segments while more audio is coming
ENCODER_START_WAIT_S = 3.0  # how long the first segment may wait for Gradio's ffmpeg to start


def allow_slow_encoder_start(wait_s: float = ENCODER_START_WAIT_S) -> None:
    """Let the stream's first segment wait for the AAC encoder (one ffmpeg process per stream) to start.

    Gradio waits 0.1 s for its first frames; on a busy machine ffmpeg takes longer, the first
    segment comes out empty, and the browser's player, handed a playlist with no segment, fails
    and retries with a back-off (10 s to first sound in the browser test). The wait ends as soon
    as frames arrive, so a quick start costs nothing.
    """
    from gradio import audio_stream_encoder

    if isinstance(getattr(audio_stream_encoder, "STARTUP_WAIT", None), (int, float)):
        audio_stream_encoder.STARTUP_WAIT = max(float(audio_stream_encoder.STARTUP_WAIT), wait_s)
    else:  # a Gradio without this constant: nothing to tune, say so once
        logger.warning("gradio.audio_stream_encoder.STARTUP_WAIT not found; the first stream segment may be empty")


class StreamPacer:
    """Collects streamed audio and hands it back in player-friendly pieces."""

    def __init__(
        self,
        sample_rate: int,
        prebuffer_s: float = PREBUFFER_S,
        max_segment_s: float = MAX_SEGMENT_S,
        min_segment_s: float = MIN_SEGMENT_S,
    ) -> None:
        self._prebuffer = int(prebuffer_s * sample_rate)
        self._max = max(int(max_segment_s * sample_rate), 1)
        self._min = min(int(min_segment_s * sample_rate), self._max)
        self._pending: list[np.ndarray] = []
        self._pending_len = 0
        self._started = False

    @property
    def started(self) -> bool:
        """True once the first segment went out."""
        return self._started

    def push(self, audio: np.ndarray) -> None:
        """Queue audio for the stream, in order."""
        if len(audio):
            self._pending.append(np.asarray(audio, dtype=np.float32).reshape(-1))
            self._pending_len += len(audio)

    def take(self, final: bool = False) -> list[np.ndarray]:
        """Segments ready to send; ``final`` (no more audio coming) flushes everything."""
        if not self._started:
            if self._pending_len < self._prebuffer and not final:
                return []
            self._started = self._pending_len > 0
        if not self._pending_len:
            return []
        if self._pending_len < self._min and not final:
            return []
        audio = np.concatenate(self._pending)
        pieces: list[np.ndarray] = []
        start = 0
        while len(audio) - start > self._max:
            pieces.append(audio[start : start + self._max])
            start += self._max
        rest = audio[start:]
        if len(rest) >= self._min or final:
            pieces.append(rest)
            rest = rest[:0]
        self._pending = [rest] if len(rest) else []
        self._pending_len = len(rest)
        return pieces
