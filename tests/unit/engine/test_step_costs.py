"""Step costs after the start-up sweep: the sweep keeps the fixed/per-row split, recent steps set the level."""

from __future__ import annotations

import random

import pytest

from tts_app.backends.base import StepEstimate
from tts_app.engine.step_costs import StepCosts

EST = StepEstimate("latents2", 0.16, 0.03)
# Pocket TTS's pipelined step on 2 cores by rows, as its start-up sweep measured it (seconds): not a line.
STEP_S = {1: 0.098, 2: 0.149, 4: 0.159, 8: 0.30}


def _swept() -> StepCosts:
    costs = StepCosts()
    for n in (1, 1, 2, 2, 4, 4, 8, 8):
        costs.learn([EST] * n, STEP_S[n])
    return costs


def _serve(costs: StepCosts, slowdown: float, steps: int = 600) -> None:
    """Service as admission keeps it: steps of one or two rows, 10 % of noise."""
    rnd = random.Random(7)
    for _ in range(steps):
        n = rnd.choice((1, 2))
        costs.learn([EST] * n, slowdown * STEP_S[n] * rnd.uniform(0.9, 1.1))


@pytest.mark.parametrize("slowdown", [1.0, 2.0, 0.5])
def test_the_sweep_keeps_the_split_while_service_sets_the_level(slowdown: float) -> None:
    costs = _swept()
    costs.anchor()
    _serve(costs, slowdown)
    for n in (1, 2):  # what service shows, at its level
        assert costs.predict([EST] * n) == pytest.approx(slowdown * STEP_S[n], rel=0.1)
    # What service never showed: eight rows, within 15 % of the sweep's (scaled), where service alone says +53 %.
    assert costs.predict([EST] * 8) == pytest.approx(slowdown * STEP_S[8], rel=0.15)


def test_without_the_anchor_service_alone_loses_the_split() -> None:
    """What the anchor is for: the same service with the sweep forgotten prices eight rows far too high."""
    costs = _swept()
    _serve(costs, 1.0)
    assert costs.predict([EST] * 8) > 1.3 * STEP_S[8]
