"""Finding pauses in audio as it streams in: where a finished clause can be cut off and aligned."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FRAME_S = 0.01
_QUIET = 0.03  # a frame is quiet below this fraction of the loudest frame's level so far (-30 dB)
_FLOOR = 1e-4  # ... and always below this level (digital silence)


@dataclass
class PauseFinder:
    """Scans a growing buffer frame by frame; each frame is looked at once."""

    sample_rate: int
    min_pause_s: float = 0.2
    peak: float = 0.0
    scanned: int = 0  # frames of the buffer already looked at
    run_start: int = -1  # first frame of the quiet run going on at ``scanned`` (-1: none)

    @property
    def hop(self) -> int:
        return max(1, int(round(self.sample_rate * FRAME_S)))

    def levels(self, audio: np.ndarray) -> np.ndarray:
        """RMS level of each whole frame of ``audio``."""
        n = audio.size // self.hop
        frames = audio[: n * self.hop].reshape(n, self.hop).astype(np.float64)
        return np.sqrt(np.mean(frames * frames, axis=1))

    def next_cut(self, buffer: np.ndarray) -> tuple[int, int] | None:
        """(where to cut, where the quiet began) for the first pause of ``min_pause_s`` not yet reported, or None."""
        level = self.levels(buffer[self.scanned * self.hop :])
        if level.size:
            self.peak = max(self.peak, float(level.max()))
        quiet = level < max(self.peak * _QUIET, _FLOOR)
        need = max(1, int(round(self.min_pause_s / FRAME_S)))
        for i, q in enumerate(quiet, start=self.scanned):
            if not q:
                self.run_start = -1
                continue
            self.run_start = i if self.run_start < 0 else self.run_start
            if i - self.run_start + 1 == need:
                self.scanned = i + 1
                return (self.run_start + need // 2) * self.hop, self.run_start * self.hop  # cut mid-pause
        self.scanned += quiet.size
        return None

    def quietest(self, buffer: np.ndarray) -> tuple[int, int]:
        """(cut, quiet from) at the quietest frame of the buffer's second half: a cut where no pause came."""
        level = self.levels(buffer)
        half = level.size // 2
        at = half + int(np.argmin(level[half:])) if level.size else 0
        return at * self.hop, at * self.hop

    def trim(self, samples: int) -> None:
        """The buffer lost its first ``samples`` (a multiple of the hop, or rounded down to one)."""
        frames = samples // self.hop
        self.scanned = max(0, self.scanned - frames)
        self.run_start = self.run_start - frames if self.run_start >= frames else -1

    def speech_extent(self, audio: np.ndarray) -> tuple[int, int]:
        """[first, last) sample of the non-quiet frames of ``audio`` (the whole of it when all is quiet)."""
        level = self.levels(audio)
        loud = np.flatnonzero(level >= max(self.peak * _QUIET, _FLOOR))
        if not loud.size:
            return 0, audio.size
        return int(loud[0]) * self.hop, min(audio.size, int(loud[-1] + 1) * self.hop)
