"""Even loudness across the lines of a take: each request's audio brought to one active-speech level, peaks kept
under a ceiling, chunk by chunk as it streams, on every route: cloned, matched (its lines spread 7.7 dB before) and
each model's own voice (the embedded Piper's spread 3.0 dB); a "Say it" preview or an A/B sample, one request like
a take's line, comes out at the same level.

The active-speech level is the RMS of the 20 ms frames louder than ``GATE_DBFS`` (silence and pauses do not count:
a simplified ITU-T P.56). A ``LevelKeeper`` per request measures the level of the frames it has heard, and each
frame's gain moves linearly from the last frame's to ``TARGET_DBFS`` minus that level, within ``GAIN_RANGE_DB``
(unity until the first frame of speech). The level starts from a prior (``PRIOR_DBFS`` worth ``PRIOR_S`` of speech),
so that a line's first words do not set its gain alone, and the last 200 ms count at once when they are louder than
the line so far by more than ``SLACK_DB`` (a causal gain otherwise lags into a loud turn and overshoots). Where the frame just heard would have peaked over ``CEILING_DBFS`` at the
next gain, that gain is lowered to meet it; a sample still over is held at the ceiling. The gains depend on the
samples alone, so the audio is the same streamed or not and whatever the backend's chunks.

The constants were chosen leaving one shared voice out (benchmarks/loudness_lovo.py): for each voice, the target
is the highest level whose ceiling the other voices' lines reach at most once in twenty (their peak-to-level ratios'
95th percentile), the prior the other voices' lines' median level, and the prior's weight and the slack those of a
small grid that keep the other voices' takes most even; each kept value is the median (or the most common) choice.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Optional

import numpy as np

# benchmarks/loudness_lovo.py, each chosen leaving one shared voice out (the docstring above says how).
TARGET_DBFS = -22.0
PRIOR_DBFS = -23.5  # the level believed before any is heard: the other voices' lines' median
PRIOR_S = 1.0  # worth this much speech: a line's first words do not set its gain alone
SLACK_DB = 2.0  # the last RECENT_FRAMES louder than the line so far by more than this lower the gain at once
RECENT_FRAMES = 10
CEILING_DBFS = -1.0
GATE_DBFS = -50.0
FRAME_S = 0.02
GAIN_RANGE_DB = (-20.0, 20.0)  # no more: a line of near-silence is not made loud


def active_level_dbfs(audio: np.ndarray, rate: int) -> Optional[float]:
    """The active-speech level of ``audio`` (dBFS; None when no frame is over the gate)."""
    frame = max(1, int(FRAME_S * rate))
    n = audio.size // frame
    if n == 0:
        return None
    energy = np.square(audio[: n * frame].astype(np.float64)).reshape(n, frame).mean(axis=1)
    active = energy[energy > 10 ** (GATE_DBFS / 10)]
    return 10 * math.log10(float(active.mean())) if active.size else None


class LevelKeeper:
    """One request's gain, 20 ms frame after frame (not shared: each request has its own). A frame's gain moves
    linearly from the last frame's to what the frames before it ask: the output depends on the samples alone, not on
    how the backend cut them into chunks."""

    def __init__(self, rate: int, target_dbfs: float = TARGET_DBFS, ceiling_dbfs: float = CEILING_DBFS,
                 prior_dbfs: float = PRIOR_DBFS, prior_s: float = PRIOR_S, slack_db: float = SLACK_DB) -> None:
        self.frame = max(1, int(FRAME_S * rate))
        self.target, self.ceiling, self.slack = target_dbfs, 10 ** (ceiling_dbfs / 20), slack_db
        self.gate = 10 ** (GATE_DBFS / 10) * self.frame  # a frame's sum of squares over the gate
        # The level heard so far (sum of squares and count of active frames), begun with the prior's worth of frames.
        self.frames = round(prior_s / FRAME_S)
        self.energy = 10 ** (prior_dbfs / 10) * self.frame * self.frames
        self.recent: deque[float] = deque(maxlen=RECENT_FRAMES)  # the last active frames' sums: a loud turn, at once
        self.start, self.end = 1.0, 1.0  # the gain at the current frame's start and end (unity until speech)
        self.spoke = False
        self.at = 0  # samples of the current frame seen
        self.sum, self.peak = 0.0, 0.0  # the current frame's sum of squares and peak, before the gain

    def _next_frame(self) -> None:
        if self.sum > self.gate:
            self.energy += self.sum
            self.frames += 1
            self.recent.append(self.sum)
            self.spoke = True
        want = self.end
        if self.spoke:
            level = 10 * math.log10(self.energy / (self.frames * self.frame))
            short = 10 * math.log10(sum(self.recent) / (len(self.recent) * self.frame))
            want = 10 ** (min(max(self.target - max(level, short - self.slack), GAIN_RANGE_DB[0]), GAIN_RANGE_DB[1]) / 20)
        if self.peak * want > self.ceiling:  # the frame just heard would have peaked over: lower the next
            want = self.ceiling / self.peak
        self.start, self.end = self.end, want
        self.at, self.sum, self.peak = 0, 0.0, 0.0

    def process(self, audio_T: np.ndarray) -> np.ndarray:
        """The chunk at the kept level (float32, the same length)."""
        out = np.empty(audio_T.size, np.float32)
        i = 0
        while i < audio_T.size:
            n = min(self.frame - self.at, audio_T.size - i)
            x = audio_T[i:i + n].astype(np.float64)
            ramp = self.start + (self.end - self.start) * (np.arange(self.at, self.at + n) + 1) / self.frame
            out[i:i + n] = np.clip(x * ramp, -self.ceiling, self.ceiling)
            self.sum += float(np.dot(x, x))
            self.peak = max(self.peak, float(np.abs(x).max()))
            self.at += n
            i += n
            if self.at == self.frame:
                self._next_frame()
        return out
