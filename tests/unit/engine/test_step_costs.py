"""Step costs after the start-up sweep: the sweep keeps the fixed/per-row split, recent steps set the level."""

from __future__ import annotations

import random

import pytest

from tts_app.backends.base import StepEstimate
from tts_app.engine.step_costs import StepCosts, StreamLoad

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


# A CPU whose two-row step is dear for its size (seconds): no line runs through these points.
CURVE_S = {1: 0.07, 2: 0.15, 4: 0.17, 8: 0.25}


def _serve_curve(costs: StepCosts, curve: dict[int, float], sizes: tuple[int, ...], steps: int, seed: int = 3) -> None:
    rnd = random.Random(seed)
    for _ in range(steps):
        n = rnd.choice(sizes)
        costs.learn([EST] * n, curve[n] * rnd.uniform(0.95, 1.05))


def test_a_batch_size_dearer_than_the_line_is_priced_as_measured() -> None:
    costs = StepCosts()
    _serve_curve(costs, CURVE_S, (1, 2, 4, 8), 400)
    load = costs.stream_load(EST)
    line_2 = (load.per_step + 2 * load.per_stream) * EST.audio_s
    assert line_2 < 0.9 * CURVE_S[2]  # the line alone under-prices two rows ...
    assert 0.85 * EST.audio_s > line_2  # ... enough to take two streams at a margin of 0.85
    assert load.seconds_for(EST.audio_s, 2) == pytest.approx(CURVE_S[2], rel=0.05)  # as measured
    assert load.places(0.85) == 1  # two rows step 0.15 s for 0.16 s of audio: one stream only
    assert load.places(1.2) > 5  # where the machine has room for more rows, sizes on the line keep its count


def test_a_size_not_stepped_for_a_while_fades_back_to_the_line() -> None:
    costs = StepCosts()
    _serve_curve(costs, {1: 0.09, 2: 0.19, 4: 0.23}, (1, 2, 4), 200)
    assert costs.stream_load(EST).factor(2) > 1.1
    _serve_curve(costs, {1: 0.09, 2: 0.19, 4: 0.23}, (1, 4), 600)
    assert costs.stream_load(EST).factor(2) < 1.02


def test_sizes_on_a_line_keep_the_line_s_price() -> None:
    """A machine whose steps lie on a line within noise (Piper on a CPU, a GPU's nearly free rows)."""
    for fixed, row in ((0.001, 0.02), (0.05, 0.0005)):
        costs = StepCosts()
        _serve_curve(costs, {n: fixed + n * row for n in (1, 2, 3, 5, 8)}, (1, 2, 3, 5, 8), 400)
        assert costs.step_factors(EST.key) and set(costs.step_factors(EST.key)) == {1.0}


def test_places_fall_to_the_whole_streams_a_measured_size_feeds() -> None:
    line = StreamLoad(per_stream=0.25, per_step=0.2)  # 2.6 places at 0.85
    assert line.places(0.85) == pytest.approx(2.6)
    curved = StreamLoad(per_stream=0.25, per_step=0.2, step_factor=(1.0, 1.0, 1.3))  # 3 rows or more: 30 % dearer
    assert curved.places(0.85) == pytest.approx(2.6)  # two streams cost the line's
    assert StreamLoad(0.25, 0.2, step_factor=(1.0, 1.3)).places(0.85) == 1  # two rows: 0.91 s a second
    assert curved.seconds_for(2.0, 5) == pytest.approx(2.0 * (0.2 + 5 * 0.25) * 1.3)  # beyond: the last factor


def test_places_of_nearly_free_rows_are_solved_not_counted() -> None:
    """A GPU-like machine (rows nearly free) with one size priced up: billions of places, answered at once."""
    load = StreamLoad(per_stream=1e-12, per_step=0.2, step_factor=(1.0, 1.2))
    assert load.places(0.85) == pytest.approx((0.85 / 1.2 - 0.2) / 1e-12, rel=1e-6)
    assert StreamLoad(0.01, 0.5, step_factor=(1.0, 1.5, 1.5)).places(0.85) == 6  # (0.5 + 6 x 0.01) x 1.5 = 0.84
    tight = StreamLoad(per_stream=0.01, per_step=0.5, step_factor=(1.0, 1.7, 1.7))
    assert tight.places(0.85) == 1  # 2 rows: 0.52 s a second at the line, 0.88 as measured
    assert StreamLoad(0.01, 0.5, step_factor=(1.0, 1.0, 1.7)).places(0.85) == 2  # beyond 2, every size is too dear
