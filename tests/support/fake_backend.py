"""A tiny deterministic backend for engine tests: exact outputs, no model."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from tts_app.backends.base import Backend, StepEstimate, StepOutput

WORD_S = 0.1  # each word is 100 samples at 1 kHz


class SimClock:
    """Simulated seconds: only the fake backend's steps move it, so a policy test is deterministic."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


@dataclass
class FakeRow:
    rng: np.random.Generator
    steps_left: int
    text: str
    words_per_step: int = 1
    words_done: int = 0


class FakeBackend(Backend):
    """One word per step (more once the engine grows the row's window); each word yields 100 samples
    drawn from the row's seed, so the audio does not depend on how the words were grouped into steps.

    Text containing BOOM fails in prepare, CRASH fails in step; SLOW sleeps per step. With ``clock``
    (a SimClock), a step costs ``fixed_s + word_s * words`` simulated seconds and then calls
    ``on_step`` (a test's arrivals), all on the engine's worker thread. ``calibrate``: the engine may
    step calibration rows at start (``calibration_text``). ``sentence_s``: a row pays that much more
    for the step that starts each sentence of ``sentence_words`` words (Piper's text stage of a chunk),
    a cost the steady estimate does not show. ``first_s``: a step holding any row's first word pays that
    much once more (Pocket TTS's first latents before its pipeline), keyed apart ("first+...").
    """

    name = "fake"
    sample_rate = 1000
    max_text_chars = 2000

    def __init__(
        self,
        step_sleep_s: float = 0.0,
        clock: SimClock | None = None,
        fixed_s: float = 0.0,
        word_s: float = 0.0,
        on_step: Callable[[], None] | None = None,
        calibrate: bool = False,
        sentence_s: float = 0.0,
        sentence_words: int = 10,
        first_s: float = 0.0,
    ) -> None:
        self.first_s = first_s
        self.step_sleep_s = step_sleep_s
        self.sentence_s, self.sentence_words = sentence_s, sentence_words
        self.calibrate = calibrate
        self.clock, self.fixed_s, self.word_s, self.on_step = clock, fixed_s, word_s, on_step
        self.prepared: list[int] = []
        self.released = 0
        self.batches: list[int] = []
        self.stepped: list[list[str]] = []  # the texts of each step's rows, in step order

    def prepare(self, rows):
        if any("BOOM" in r.text for r in rows):
            raise RuntimeError("text stage exploded")
        self.prepared.append(len(rows))
        return [FakeRow(np.random.default_rng(r.params.seed), len(r.text.split()), r.text) for r in rows]

    def step(self, states, emit=None):
        """Rows advance one by one and are emitted as they go (like the CPU decoder); a row whose
        text has "CRASH" fails the step when its turn comes, after the rows before it were emitted."""
        self.batches.append(len(states))
        self.stepped.append([s.text for s in states])
        if self.step_sleep_s or any("SLOW" in s.text for s in states):
            time.sleep(self.step_sleep_s or 0.01)
        if self.clock is not None:
            starting = self.first_s if any(s.words_done == 0 for s in states) else 0.0
            self.clock.t += self.fixed_s + starting + sum(self._row_cost(s) for s in states)
        out = []
        for s in states:
            if "CRASH" in s.text:
                raise RuntimeError("decoder exploded")
            n = min(s.words_per_step, s.steps_left)
            s.steps_left -= n
            s.words_done += n
            audio = np.concatenate([s.rng.standard_normal(100).astype(np.float32) for _ in range(n)])
            out.append(StepOutput(audio, s.steps_left <= 0))
            if emit is not None:
                emit(len(out) - 1, out[-1])
        if self.on_step is not None:
            self.on_step()
        return out

    def _sentences_started(self, state: FakeRow) -> int:
        """Sentences whose first word the row's next step makes."""
        n = min(state.words_per_step, state.steps_left)
        return sum(1 for w in range(state.words_done, state.words_done + n) if w % self.sentence_words == 0)

    def _row_cost(self, state: FakeRow) -> float:
        return self.word_s * min(state.words_per_step, state.steps_left) + self.sentence_s * self._sentences_started(state)

    def estimate_step(self, state):
        n = min(state.words_per_step, max(1, state.steps_left))
        text = "text+" if self.sentence_s and self._sentences_started(state) else ""
        text = "first+" + text if self.first_s and state.words_done == 0 else text
        return StepEstimate(f"{text}words{state.words_per_step}", WORD_S * n, self.word_s * n + self.fixed_s)

    def steady_estimate(self):
        return StepEstimate("words1", WORD_S, self.word_s + self.fixed_s)

    def calibration_text(self):
        return " ".join(["calibrate"] * 8) if self.calibrate else None

    def audio_estimate_s(self, parsed):
        return WORD_S * len(str(parsed).split())

    def remaining_audio_s(self, state):
        return WORD_S * state.steps_left

    def set_window_level(self, state, level):
        state.words_per_step = 2 ** min(max(0, level - 1), 2)  # as the real backends, 4x at most

    def release(self, state):
        self.released += 1


def expected(text: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.standard_normal(100).astype(np.float32) for _ in text.split()])


class ClockedBackend(Backend):
    """A real backend whose steps cost ``row_s`` simulated seconds per row (and ``on_step`` runs after
    each), so the engine's policy meets a real model's rows on a deterministic clock."""

    def __init__(self, inner: Backend, clock: SimClock, row_s: float, on_step: Callable[[], None] | None = None) -> None:
        self.inner, self.clock, self.row_s, self.on_step = inner, clock, row_s, on_step
        self.name, self.sample_rate, self.max_text_chars = inner.name, inner.sample_rate, inner.max_text_chars
        self.capabilities = inner.capabilities
        self.stepped: list[list[int]] = []  # the request ids of each step's rows

    def check_text(self, text, params=None):
        return self.inner.check_text(text, params)

    def prepare(self, rows):
        states = self.inner.prepare(rows)
        self._ids = getattr(self, "_ids", {})
        self._ids.update({id(s): r.request_id for s, r in zip(states, rows)})
        return states

    def step(self, states, emit=None):
        self.stepped.append([self._ids[id(s)] for s in states])
        self.clock.t += self.row_s * len(states)
        out = self.inner.step(states, emit)
        if self.on_step is not None:
            self.on_step()
        return out

    @property
    def emits_rows(self):
        return self.inner.emits_rows

    def estimate_step(self, state):
        return self.inner.estimate_step(state)

    def steady_estimate(self):
        return self.inner.steady_estimate()

    def release(self, state):
        self.inner.release(state)


class FailsMidway(FakeBackend):
    """Decodes two steps (a word each), then fails every step after (a decoder that breaks mid-request)."""

    def step(self, states, emit=None):
        if len(self.batches) >= 2:
            raise RuntimeError("decoder exploded")
        return super().step(states, emit)
