"""Seconds a row's step costs, learnt online from measured steps, per kind of step (window size)."""

from __future__ import annotations

from typing import Sequence

from ..backends.base import StepEstimate

_MAX_RATIO = 10.0  # one odd step (a page fault, a first shape) moves an estimate at most this much


class StepCosts:
    """Per key (the backend's name for a window size): seconds for one row's share of a batched step.

    A measured step of rows with keys k_i is compared with the prediction sum(c[k_i]); every key in it
    is scaled by the same ratio, fully at its first measurement and then as a moving average, so the
    estimates follow the machine (a loaded or a faster one) without constants.
    """

    def __init__(self, smoothing: float = 0.2) -> None:
        self.smoothing = smoothing
        self._cost: dict[str, float] = {}
        self._seen: dict[str, int] = {}

    def row_cost(self, est: StepEstimate) -> float:
        return self._cost.get(est.key, est.cost_s)

    def predict(self, ests: Sequence[StepEstimate]) -> float:
        return sum(self.row_cost(e) for e in ests)

    def learned(self, key: str) -> bool:
        return self._seen.get(key, 0) > 0

    def learn(self, ests: Sequence[StepEstimate], seconds: float) -> None:
        predicted = self.predict(ests)
        if predicted <= 0 or seconds <= 0 or not ests:
            return
        ratio = min(_MAX_RATIO, max(1.0 / _MAX_RATIO, seconds / predicted))
        for key in {e.key for e in ests}:
            current = self.row_cost(next(e for e in ests if e.key == key))
            weight = 1.0 if self._seen.get(key, 0) == 0 else self.smoothing
            self._cost[key] = current * ratio**weight
            self._seen[key] = self._seen.get(key, 0) + 1

    def snapshot(self) -> dict[str, float]:
        return dict(self._cost)
