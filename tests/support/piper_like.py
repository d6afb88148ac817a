"""A simulated CPU that steps like the embedded Piper voice: no model, a SimClock, exact costs.

Each request is sentences of 150-250 latent frames (12 ms each). A sentence's text stage costs
``TEXT_S`` (in ``prepare`` for a newcomer, else at the start of the step that opens it); its first
window is 64 frames flowed with ``REACH`` frames of context, its second window flows the rest; the
decoder pays per call and per frame; rows are handed out in groups of 1, 1, 2, 4 ... as Piper's CPU
decoder does. The figures are the 2-core CPU's of 2026-11-27 (capacity about 13.4 audio-s/s), so a
policy test sees the burst that stalled listeners there, on any machine, in simulated seconds.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from random import Random
from typing import Callable

import numpy as np

from tests.support.fake_backend import SimClock
from tts_app.backends.base import Backend, StepEstimate, StepOutput
from tts_app.models.piper.windows import Window, plan_windows

FRAME = 12  # samples a latent frame, at 1 kHz
TEXT_S, STEP_S = 0.025, 0.003
FLOW_CALL_S, FLOW_FRAME_S, REACH = 0.005, 0.00016, 32
DECODE_CALL_S, DECODE_FRAME_S = 0.003, 0.0005
FIRST, USUAL = 64, 160


@dataclass
class Row:
    sentences: list[int]
    next_sentence: int = 0
    frames: int = 0
    plan: list[Window] = field(default_factory=list)
    next_window: int = 0
    flowed: int = 0
    window: int = USUAL

    @property
    def needs_text(self) -> bool:
        return self.next_window >= len(self.plan) and self.next_sentence < len(self.sentences)


class PiperLikeBackend(Backend):
    """Texts are sentences joined by "."; each sentence's length is drawn from its text (deterministic)."""

    name = "piper-like"
    sample_rate = 1000
    max_text_chars = 100_000

    def __init__(self, clock: SimClock, on_step: Callable[[], None] | None = None, speed: float = 1.0) -> None:
        """``speed``: every cost divided by it (2.75: the AVX-512 Intel machine of issue 49, C about 37 audio-s/s)."""
        self.clock, self.on_step, self.k = clock, on_step, 1.0 / speed

    def check_text(self, text, params=None):
        rng = Random(zlib.crc32(text.encode()))
        return tuple(rng.randint(150, 250) for _ in text.split("."))

    def prepare(self, rows):
        states = [Row(list(r.parsed)) for r in rows]
        self.clock.t += TEXT_S * len(states) * self.k
        for s in states:
            self._open(s)
        return states

    def _open(self, s: Row) -> None:
        s.frames, s.next_sentence = s.sentences[s.next_sentence], s.next_sentence + 1
        s.plan, s.next_window, s.flowed = plan_windows(s.frames, s.window, FIRST), 0, 0

    def _flow_to(self, s: Row) -> int:
        """Frames flowed after the next window: its own for a sentence's first window, else the whole rest."""
        end = s.plan[s.next_window].end
        if end <= s.flowed:
            return s.flowed
        return end if not s.flowed and s.frames - end > 2 * REACH else s.frames

    def _cost(self, s: Row) -> float:
        w = s.plan[s.next_window]
        cost = DECODE_CALL_S + DECODE_FRAME_S * (w.end - w.start)
        upto = self._flow_to(s)
        if upto > s.flowed:
            cost += FLOW_CALL_S + FLOW_FRAME_S * (upto - s.flowed + (REACH if s.flowed == 0 else 0))
        return cost

    def step(self, states, emit=None):
        self.clock.t += STEP_S * self.k
        for s in states:
            if s.needs_text:
                self.clock.t += TEXT_S * self.k
                self._open(s)
        bounds = [0, 1]
        while bounds[-1] < len(states):
            bounds.append(min(len(states), 2 * bounds[-1]))
        outs: list[StepOutput] = []
        for a, b in zip(bounds, bounds[1:]):
            for s in states[a:b]:
                self.clock.t += self._cost(s) * self.k
                s.flowed = self._flow_to(s)
            for s in states[a:b]:
                w = s.plan[s.next_window]
                s.next_window += 1
                done = s.next_window >= len(s.plan) and s.next_sentence >= len(s.sentences)
                outs.append(StepOutput(np.zeros((w.end - w.start) * FRAME, np.float32), done))
                if emit is not None:
                    emit(len(outs) - 1, outs[-1])
        if self.on_step is not None:
            self.on_step()
        return outs

    @property
    def emits_rows(self) -> bool:
        return True

    def handed_out_after(self, position: int) -> float:
        return 1 << position.bit_length()

    def estimate_step(self, s):
        if s.needs_text:
            cost = TEXT_S + DECODE_CALL_S + DECODE_FRAME_S * FIRST + FLOW_CALL_S + FLOW_FRAME_S * (FIRST + REACH)
            return StepEstimate(f"text+w{FIRST}", FIRST * FRAME / 1000, cost * self.k)
        w = s.plan[s.next_window]
        return StepEstimate(f"w{-(-(w.end - w.start) // 32) * 32}", (w.end - w.start) * FRAME / 1000, self._cost(s) * self.k)

    def steady_estimate(self):
        return StepEstimate(f"w{USUAL}", USUAL * FRAME / 1000, (DECODE_CALL_S + DECODE_FRAME_S * USUAL) * self.k)

    def audio_estimate_s(self, parsed):
        return sum(parsed) * FRAME / 1000

    def remaining_audio_s(self, s):
        left = sum(s.sentences[s.next_sentence :])
        if s.next_window < len(s.plan):
            left += s.frames - s.plan[s.next_window].start
        return left * FRAME / 1000

    def set_window_level(self, s, level):
        """As Piper's: 64 frames at level 0, 160 at 1, then doubling; the open sentence planned again after its first window."""
        window = FIRST if level <= 0 else USUAL * 2 ** min(level - 1, 2)
        if window == s.window:
            return
        s.window = window
        keep = max(1, s.next_window)
        if keep < len(s.plan):
            start = s.plan[keep].start
            s.plan = s.plan[:keep] + [Window(start + w.start, start + w.end, w.last) for w in plan_windows(s.frames - start, window, window)]
