"""Seconds a step costs, learnt online from measured steps: a fixed part per step, and a part per row
for each kind of step (the backend's key: a window size)."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from tts_app.backends.base import StepEstimate

_MAX_RATIO = 10.0  # one odd step (a page fault, a first shape) moves an estimate at most this much


@dataclass(frozen=True)
class StreamLoad:
    """What streams cost the machine, in seconds of compute per second of audio: ``per_stream`` for
    each stream's own rows, ``per_step`` for the step overhead they share when they step together."""

    per_stream: float
    per_step: float

    def places(self, margin: float) -> float:
        """How many streams stepping together fit in ``margin`` of the machine (inf when free)."""
        if self.per_stream <= 0:
            return math.inf
        return (margin - self.per_step) / self.per_stream

    def seconds_for(self, audio_s: float, sharing: int) -> float:
        """Wall time to make ``audio_s`` of one row's audio while ``sharing`` rows share every step."""
        return audio_s * (self.per_step + max(1, sharing) * self.per_stream)


class StepCosts:
    """Step time = fixed + sum of the rows' costs (per key), fitted by normalised least mean squares.

    A key's first measurement scales the prediction to the measured time (the backend's prior may be
    far off: another machine); after that every step nudges the fixed part and each of its keys by
    its share of the error, so steps of different batch sizes separate the two. No constants: the
    estimates follow the machine, loaded or not.
    """

    def __init__(self, rate: float = 0.3) -> None:
        self.rate = rate
        self.fixed_s = 0.0
        self._cost: dict[str, float] = {}
        self._seen: Counter = Counter()

    def row_cost(self, est: StepEstimate) -> float:
        return self._cost.get(est.key, est.cost_s)

    def predict(self, ests: Sequence[StepEstimate]) -> float:
        return self.fixed_s + sum(self.row_cost(e) for e in ests)

    def learn(self, ests: Sequence[StepEstimate], seconds: float) -> None:
        predicted = self.predict(ests)
        if predicted <= 0 or seconds <= 0 or not ests:
            return
        counts = Counter(e.key for e in ests)
        priors = {e.key: self.row_cost(e) for e in ests}
        new = [k for k in counts if self._seen[k] == 0]
        if new:  # first sight of a key: the whole surprise goes to the new keys, in proportion
            ratio = min(_MAX_RATIO, max(1.0 / _MAX_RATIO, seconds / predicted))
            for k in new:
                self._cost[k] = priors[k] * ratio
        else:
            error = seconds - predicted
            norm = 1.0 + sum(n * n for n in counts.values())
            self.fixed_s = max(0.0, self.fixed_s + self.rate * error / norm)
            for k, n in counts.items():
                self._cost[k] = max(priors[k] / _MAX_RATIO, priors[k] + self.rate * error * n / norm)
        self._seen.update(counts.keys())

    def stream_load(self, steady: StepEstimate) -> StreamLoad:
        """A stream stepping ``steady`` windows: its real-time load (see StreamLoad)."""
        if steady.audio_s <= 0:
            return StreamLoad(math.inf, 0.0)
        return StreamLoad(self.row_cost(steady) / steady.audio_s, self.fixed_s / steady.audio_s)

    def snapshot(self) -> dict[str, float]:
        return {"fixed": self.fixed_s, **self._cost}
