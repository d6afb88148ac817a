"""A tiny deterministic backend for engine tests: exact outputs, no model."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from tts_app.backends.base import Backend, StepOutput


@dataclass
class FakeRow:
    rng: np.random.Generator
    steps_left: int
    text: str


class FakeBackend(Backend):
    """One step per word; each step yields 100 samples drawn from the row's seed.

    Text containing BOOM fails in prepare, CRASH fails in step; SLOW sleeps per step.
    """

    name = "fake"
    sample_rate = 1000
    max_text_chars = 2000

    def __init__(self, step_sleep_s: float = 0.0) -> None:
        self.step_sleep_s = step_sleep_s
        self.prepared: list[int] = []
        self.released = 0
        self.batches: list[int] = []

    def prepare(self, rows):
        if any("BOOM" in r.text for r in rows):
            raise RuntimeError("text stage exploded")
        self.prepared.append(len(rows))
        return [FakeRow(np.random.default_rng(r.seed), len(r.text.split()), r.text) for r in rows]

    def step(self, states, emit=None):
        """Rows advance one by one and are emitted as they go (like the CPU decoder); a row whose
        text has "CRASH" fails the step when its turn comes, after the rows before it were emitted."""
        self.batches.append(len(states))
        if self.step_sleep_s or any("SLOW" in s.text for s in states):
            time.sleep(self.step_sleep_s or 0.01)
        out = []
        for s in states:
            if "CRASH" in s.text:
                raise RuntimeError("decoder exploded")
            s.steps_left -= 1
            out.append(StepOutput(s.rng.standard_normal(100).astype(np.float32), s.steps_left <= 0))
            if emit is not None:
                emit(len(out) - 1, out[-1])
        return out

    def release(self, state):
        self.released += 1


def expected(text: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.standard_normal(100).astype(np.float32) for _ in text.split()])
