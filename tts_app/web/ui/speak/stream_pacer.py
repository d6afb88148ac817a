"""Cut the live stream into segments an HLS player can keep up with.

Gradio turns each streamed yield into one HLS segment (AAC, one ffmpeg per stream); the browser's
player is hls.js, whose timing decides the design:
- it reloads a live playlist after the duration of its newest segment when the playlist grew,
  and after half the target duration (0.5 s) when it did not; but its *first* reload comes after
  twice the first segment's duration (the manifest's schedule is counted twice). A first
  segment that holds the runway therefore stalls the player before the next reload: measured,
  0.88 s of audio, the reload at 1.76 s, a 0.8 s gap.
- so the first segment is tiny (Gradio's encoder puts one AAC frame, 46 ms, in it) and carries
  no runway: the player reloads ~0.1 s later and finds the rest of the pre-buffer, sent at once
  as short segments behind it, and starts on that.
- the pre-buffer itself covers the wait for the engine's next window: before any step is
  timed, more than a first window; later two mean steps (at least 0.6 s, at most 3 s).
"""

from __future__ import annotations

import numpy as np

PREBUFFER_S = 1.0  # more than a first window (at most 0.74 s): the player starts with the second window too
MAX_SEGMENT_S = 0.3  # short segments: reloads (after the newest one's duration) come often
MIN_SEGMENT_S = 0.15  # no tiny segments while more audio is coming
# The first piece: enough for ffmpeg to emit a frame at once (it holds two back), so the first
# segment is one frame and the player's first reload comes quickly (see the module doc).
FIRST_PIECE_S = 0.25
# The runway must outlast the wait for the engine's next window: on a busy CPU a step takes
# longer, and the player, started on too little, stalls (heard as a gap) until it comes.
STEP_MARGIN = 2.0
MAX_PREBUFFER_S = 3.0
# Before the engine has timed any step (a fresh server's first run): more than a first window
# (at most 0.74 s), so the player starts with the second window too instead of stalling after one.
UNKNOWN_STEP_PREBUFFER_S = 1.0


def prebuffer_for(step_time_s: float, rows_stepped: int, rows: int) -> float:
    """Seconds of audio to hold before the first HLS segment of a run of ``rows`` lines.

    The engine's next step advances every running row, so it is predicted as ``rows`` times the
    mean cost of one row in one step so far (``step_time_s`` over ``rows_stepped``).
    """
    if rows_stepped <= 0 or step_time_s <= 0:
        return UNKNOWN_STEP_PREBUFFER_S
    next_step_s = step_time_s / rows_stepped * max(rows, 1)
    return min(MAX_PREBUFFER_S, max(PREBUFFER_S, STEP_MARGIN * next_step_s))


class StreamPacer:
    """Collects streamed audio and hands it back in player-friendly pieces."""

    def __init__(
        self,
        sample_rate: int,
        prebuffer_s: float = PREBUFFER_S,
        max_segment_s: float = MAX_SEGMENT_S,
        min_segment_s: float = MIN_SEGMENT_S,
        first_piece_s: float = FIRST_PIECE_S,
    ) -> None:
        self._prebuffer = int(prebuffer_s * sample_rate)
        self._max = max(int(max_segment_s * sample_rate), 1)
        self._min = min(int(min_segment_s * sample_rate), self._max)
        self._first_piece = max(min(int(first_piece_s * sample_rate), self._max), 1)
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
        limit = self._first_piece if first else self._max
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


def pass_through(sample_rate: int) -> StreamPacer:
    """A pacer that hands back everything pushed so far, at once (for a player that buffers itself)."""
    return StreamPacer(sample_rate, prebuffer_s=0.0, max_segment_s=1e9, min_segment_s=0.0, first_piece_s=1e9)
