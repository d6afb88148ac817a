"""The page's live player starts when the engine says its stream is safe.

A run's audio is held back from its live channel until a 1x player started now is predicted never to
run dry: the line being made (the first unfinished one, in the order they are heard) is ``safe`` by
its engine handle (it holds ``qos.low_s`` of audio ahead of a player started at its first chunk, or it
is finished), or every line is finished. A loaded machine therefore starts the player a little later
instead of letting it stutter; an idle one opens with the first line's second window. A run that never
gets ahead (a machine slower than real time) is not held past ``MAX_HOLD_S`` of its first audio.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

MAX_HOLD_S = 3.0  # at most this long after the first audio; the player's own start rule takes over then


class SafeStart:
    """Segments for the live channel: none until the run is safe, then everything held and all after."""

    def __init__(self, handles: Sequence[Any], max_hold_s: float = MAX_HOLD_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._handles = handles
        self._max_hold_s = max_hold_s
        self._clock = clock
        self._held: list[np.ndarray] = []
        self._first_at: float | None = None
        self.open = False
        self.held_s: float | None = None  # how long the first audio waited for the safe signal (a figure)

    def _safe(self) -> bool:
        for handle in self._handles:
            if not handle.done:
                return bool(handle.safe)
        return True

    def feed(self, segments: Sequence[np.ndarray] = ()) -> list[np.ndarray]:
        """Take this step's segments [T] each; return those the channel gets now (called with none on a
        quiet tick, so a run that reached its hold limit is released without new audio)."""
        if self.open:
            return list(segments)
        now = self._clock()
        if segments and self._first_at is None:
            self._first_at = now
        self._held.extend(segments)
        if not self._held or self._first_at is None:
            return []
        if self._safe() or now - self._first_at >= self._max_hold_s:
            self.open = True
            self.held_s = now - self._first_at
            released, self._held = self._held, []
            return released
        return []

    def flush(self) -> list[np.ndarray]:
        """What is still held (the run ended or stopped): the listener gets it all."""
        self.open = True
        released, self._held = self._held, []
        return released
