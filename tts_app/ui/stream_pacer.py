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

import numpy as np

PREBUFFER_S = 0.6  # the first window (0.4-0.5 s) and the start of the second: a runway for the third
MAX_SEGMENT_S = 0.4  # short segments: the player reloads the playlist after the newest one's duration
MIN_SEGMENT_S = 0.2  # no tiny segments while more audio is coming
# The first segment carries the whole first window (the player's runway while the engine's
# second window decodes); stream_encoder.py makes Gradio encode all of it into that segment.
FIRST_SEGMENT_MAX_S = 1.0
# The runway must outlast the wait for the engine's next window: on a busy CPU a step takes
# longer, and the player, started on too little, stalls (heard as a gap) until it comes.
STEP_MARGIN = 2.0
MAX_PREBUFFER_S = 3.0


def prebuffer_for(mean_step_s: float | None) -> float:
    """Seconds of audio to hold before the first segment, given the engine's mean step time."""
    if not mean_step_s or mean_step_s <= 0:
        return PREBUFFER_S
    return min(MAX_PREBUFFER_S, max(PREBUFFER_S, STEP_MARGIN * float(mean_step_s)))


class StreamPacer:
    """Collects streamed audio and hands it back in player-friendly pieces."""

    def __init__(
        self,
        sample_rate: int,
        prebuffer_s: float = PREBUFFER_S,
        max_segment_s: float = MAX_SEGMENT_S,
        min_segment_s: float = MIN_SEGMENT_S,
        first_segment_max_s: float = FIRST_SEGMENT_MAX_S,
    ) -> None:
        self._prebuffer = int(prebuffer_s * sample_rate)
        self._max = max(int(max_segment_s * sample_rate), 1)
        self._min = min(int(min_segment_s * sample_rate), self._max)
        self._first_max = max(int(first_segment_max_s * sample_rate), self._max)
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
        first = not self._started
        if first:
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
        limit = self._first_max if first else self._max
        while len(audio) - start > limit:
            pieces.append(audio[start : start + limit])
            start += limit
            limit = self._max
        rest = audio[start:]
        if len(rest) >= self._min or final:
            pieces.append(rest)
            rest = rest[:0]
        self._pending = [rest] if len(rest) else []
        self._pending_len = len(rest)
        return pieces
