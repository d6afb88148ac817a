"""The step costs: a table of measured prices (step seconds per second of audio) by batch size."""

from __future__ import annotations

import pytest

from tts_app.backends.base import StepEstimate
from tts_app.engine.step_costs import StepCosts


def test_nothing_measured_prices_by_the_backend_s_prior() -> None:
    costs = StepCosts(prior=0.2)
    assert costs.price(1) == costs.price(16) == 0.2 and costs.explores
    assert costs.predict([StepEstimate("k", 0.5, 0.07)] * 2) == pytest.approx(0.14)  # each row's own prior


def test_a_size_s_price_is_its_steps_seconds_over_their_audio_and_follows_the_machine() -> None:
    costs = StepCosts()
    for _ in range(5):
        costs.learn(4, 0.4, 2.0)  # 0.2 s of step a second of audio
    assert costs.price(4) == pytest.approx(0.2) and costs.rate(4) == pytest.approx(5.0)
    for _ in range(200):
        costs.learn(4, 0.8, 2.0)  # the machine slowed down by half
    assert costs.price(4) == pytest.approx(0.4, rel=0.02)


def test_one_size_measured_prices_larger_batches_as_dearly_and_explores() -> None:
    costs = StepCosts()
    costs.learn(2, 0.2, 1.0)
    assert costs.price(8) == pytest.approx(0.2) and costs.explores  # every second on the rows: the cautious reading
    assert costs.price(1) == pytest.approx(0.4)  # fewer rows: the same step for less audio


@pytest.mark.parametrize("fixed_s, row_s", [(0.0, 0.02), (0.08, 0.0005), (0.03, 0.01)])
def test_between_and_beyond_measured_sizes_the_price_follows_a_fixed_part_and_rows(fixed_s: float, row_s: float) -> None:
    """A CPU-like machine (every row costs), a GPU-like one (the step costs, rows nearly free) and one between:
    two measured sizes give every other size's price exactly (a step of n rows, 0.1 s of audio a row)."""
    costs = StepCosts()
    for n in (1, 4):
        costs.learn(n, fixed_s + row_s * n, 0.1 * n)
    assert not costs.explores
    for n in (2, 3, 16, 64):
        assert costs.price(n) == pytest.approx((fixed_s + row_s * n) / (0.1 * n), rel=1e-6), n
    assert costs.predict([StepEstimate("k", 0.1, 1.0)] * 16) == pytest.approx(fixed_s + row_s * 16, rel=1e-6)


def test_a_larger_batch_measured_dearer_per_audio_is_never_priced_below_zero() -> None:
    costs = StepCosts()
    costs.learn(1, 0.1, 1.0)
    costs.learn(2, 0.3, 1.0)  # noise: two rows dearer per second of audio than one
    assert costs.price(8) == pytest.approx(0.3)  # no fixed part to share: the dearer size's price
