"""The engine's plan for the first audio of requests starting together, for a backend that makes it before its step
(``Backend.first_audio_shape``: Pocket TTS): a latent at a time or in one piece, and from which latent on. The backend
follows the plan and writes in it what its parts took, on the engine's clock; the engine keeps those costs by
(requests starting, rows live): other live rows lengthen a dense flow pass (a newcomer beside a running stream,
priced as a lone one, ran dry for 0.05-0.07 s). Each latent handed out alone starts the listener sooner but costs
every starting row a decode of its own, so the plan is the earliest start, of either way, after which the window
after the first audio still comes with ``RAMP_SHARE`` of the first audio to spare.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from tts_app.backends.base import FirstAudioPlan

# The window after the first audio must come within this share of the first audio's length: a step's time varies
# by about 10 % on a quiet 2-core CPU (2026-11-28, steps of one to eight rows).
RAMP_SHARE = 0.9
_NEW_WEIGHT = 0.3  # a running average's weight of each new measurement


@dataclass
class FirstAudioCosts:
    """Seconds measured in steps with a given count of requests starting among a given count of live rows (running
    averages)."""

    flow_s: Optional[float] = None  # one flow-LM pass of their latents
    decode_one_s: Optional[float] = None  # one Mimi call of one latent each
    decode_all_s: Optional[float] = None  # one Mimi call of their whole first audio
    after_s: Optional[float] = None  # the first audio handed out -> the step's end (the window after it)

    def feed(self, step: FirstAudioPlan, after_s: float) -> None:
        for name, new in (("flow_s", step.flow_s), ("decode_one_s", step.decode_one_s),
                          ("decode_all_s", step.decode_all_s), ("after_s", after_s)):
            old = getattr(self, name)
            if new is not None:
                setattr(self, name, new if old is None else old + _NEW_WEIGHT * (new - old))


def plan_first_audio(costs: dict[tuple[int, int], FirstAudioCosts], key: tuple[int, int], latents: int,
                     latent_s: float, clock: Callable[[], float]) -> FirstAudioPlan:
    """The plan for ``key`` = (requests starting together, rows live in the generator) with a first audio of
    ``latents`` latents of ``latent_s`` seconds each, from ``costs`` measured by such keys (a key not measured yet
    borrows the nearest one with at least as many of both: a step of more rows costs more). With nothing measured,
    the latents are decoded one at a time (measured) and handed out together at the end (as late as in one piece,
    so that nobody runs dry on a guess)."""
    last = latents - 1
    starting, in_step = key
    measured = sorted((n - in_step, b - starting, (b, n)) for (b, n), c in costs.items()
                      if b >= starting and n >= in_step and c.after_s is not None and c.flow_s is not None)
    c = costs[measured[0][2]] if measured else None
    # A lone latent's Mimi call not measured yet: it costs no more than the whole first audio's.
    decode_one_s = None if c is None else c.decode_one_s if c.decode_one_s is not None else c.decode_all_s
    if c is None or decode_one_s is None:  # (``measured`` holds only costs with a flow pass and a window after)
        return FirstAudioPlan(key, clock, each=True, hold=last)
    budget = RAMP_SHARE * latents * latent_s
    per_latent = c.flow_s + decode_one_s
    # Started at latent n, the listener holds all the first audio (each later latent comes in less than it plays
    # when per_latent <= latent_s); the window after it comes (last - n) latents and after_s later.
    hold = last
    if per_latent <= latent_s:
        hold = next((n for n in range(latents) if (last - n) * per_latent + c.after_s <= budget), last)
    start_each = decode_one_s + hold * per_latent
    start_once = last * c.flow_s + (c.decode_all_s if c.decode_all_s is not None else latents * decode_one_s)
    return FirstAudioPlan(key, clock, each=True, hold=hold) if start_each < start_once else FirstAudioPlan(key, clock, each=False, hold=last)


class FirstAudio:
    """One engine's first-audio costs, by (requests starting, rows live), and its plans for a backend's ``shape``."""

    def __init__(self, shape: tuple[int, float], clock: Callable[[], float]) -> None:
        self.latents, self.latent_s = shape
        self.clock = clock
        self.costs: dict[tuple[int, int], FirstAudioCosts] = {}

    def plan(self, starting: int, live: int) -> FirstAudioPlan | None:
        return plan_first_audio(self.costs, (starting, live), self.latents, self.latent_s, self.clock) if starting else None

    def feed(self, plan: FirstAudioPlan, step_end: float) -> None:
        """What a step of ``plan`` took, its window after the first audio timed to ``step_end`` (the engine's clock)."""
        if plan.ended_at is not None:
            self.costs.setdefault(plan.key, FirstAudioCosts()).feed(plan, step_end - plan.ended_at)
