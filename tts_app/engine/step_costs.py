"""What the machine's steps cost: a table by batch size, learnt from the engine's own steps on its clock.

For each batch size n the engine keeps decayed sums of its steps' seconds and of the audio they made (all rows); their
ratio is the price of a second of audio at that size, whatever a stream costs (text stages, small first windows, a
step's fixed part, a GPU's nearly free rows): no model of where a step's time goes. Between and beyond the measured
sizes the price follows the two nearest as ``a + b / n`` (a fixed part shared by n rows; a, b >= 0); with one size
measured, a larger one costs as much a second of audio (the cautious reading) and ``explores`` is True, so admission
lets a second stream make the larger step to measure. Nothing measured: the backend's prior (``StepEstimate``).
"""

from __future__ import annotations

import bisect
from typing import Sequence

from tts_app.backends.base import StepEstimate

_KEEP = 0.98  # a size's sums shrink by this at each new step of that size: ~50 steps, several sentences of a stream (0.9 under-priced a text stage every 10th step)


class StepCosts:
    """``price(n)``: step seconds per second of audio made, for steps of ``n`` rows."""

    def __init__(self, prior: float | None = None) -> None:
        self._prior = prior  # the backend's price of a steady window, until a step is measured
        self._sizes: list[int] = []  # measured batch sizes, sorted
        self._sums: dict[int, tuple[float, float]] = {}  # rows -> (decayed step seconds, decayed audio seconds)
        self._rates: dict[int, float] = {}  # rate(n) since the last step learnt (the ETA asks it thousands of times)

    def learn(self, rows: int, seconds: float, audio_s: float) -> None:
        """One measured step of ``rows`` rows that took ``seconds`` and made ``audio_s`` of audio (all rows)."""
        if rows < 1 or seconds <= 0 or audio_s <= 0:
            return
        self._rates.clear()
        if rows not in self._sums:
            bisect.insort(self._sizes, rows)
        s, a = self._sums.get(rows, (0.0, 0.0))
        self._sums[rows] = (_KEEP * s + seconds, _KEEP * a + audio_s)

    @property
    def explores(self) -> bool:
        """True while fewer than two batch sizes were measured (a fixed part cannot be told from the rows' yet)."""
        return len(self._sizes) < 2

    def price(self, rows: int) -> float | None:
        """Seconds of step per second of audio at ``rows`` rows (the prior, None too, before any step was measured)."""
        sizes, n = self._sizes, max(1, rows)
        if not sizes:
            return self._prior
        at = {m: s / a for m, (s, a) in self._sums.items()}
        if n in at:
            return at[n]
        if len(sizes) == 1:
            return at[sizes[0]] * (1.0 if n > sizes[0] else sizes[0] / n)
        i = min(max(bisect.bisect_left(sizes, n), 1), len(sizes) - 1)
        lo, hi = sizes[i - 1], sizes[i]
        b = max(0.0, (at[lo] - at[hi]) / (1 / lo - 1 / hi))
        return max(0.0, at[hi] - b / hi) + b / n

    def rate(self, rows: int) -> float:
        """Seconds of audio a second the machine makes while ``rows`` rows step together (inf: nothing measured)."""
        if rows not in self._rates:
            self._rates[rows] = float("inf") if not (p := self.price(rows)) or p <= 0 else 1.0 / p
        return self._rates[rows]

    def predict(self, ests: Sequence[StepEstimate], rows: int | None = None) -> float:
        """Seconds a step of ``ests`` takes, in a step of ``rows`` rows (default: as many as ``ests``)."""
        if not self._sizes:
            return sum(e.cost_s for e in ests)
        return self.price(rows or len(ests)) * sum(e.audio_s for e in ests)

    def snapshot(self) -> dict[str, float]:
        """Price (step seconds per audio second) by measured batch size, as ``rows:N``."""
        return {f"rows:{n}": s / a for n, (s, a) in self._sums.items()}
