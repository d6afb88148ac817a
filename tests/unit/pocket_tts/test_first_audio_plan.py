"""The plan for handing out a step's first audio (tts_app/engine/first_audio.py), without a model: exact plans
from given costs, and a listener simulated through each plan never runs dry when the costs hold."""

from __future__ import annotations

import time

import pytest

from tts_app.backends.base import FirstAudioPlan
from tts_app.engine.first_audio import RAMP_SHARE, FirstAudioCosts, plan_first_audio

LATENT_S = 0.08
K = 3
CLOCK = time.perf_counter  # the engine's clock (plans compare equal with the same one)


def costs(flow_s: float, decode_one_s: float | None, decode_all_s: float | None, after_s: float) -> FirstAudioCosts:
    return FirstAudioCosts(flow_s=flow_s, decode_one_s=decode_one_s, decode_all_s=decode_all_s, after_s=after_s)


def listen(plan: FirstAudioPlan, c: FirstAudioCosts) -> tuple[float, float]:
    """(first audio handed out, seconds a listener started at it runs dry before the window after it), from the
    first latent's making on, when every step costs what ``c`` says."""
    t, handed, arrivals = 0.0, 0, []
    for n in range(K):
        t += c.flow_s if n else 0.0
        if plan.each or n == K - 1:
            t += c.decode_one_s if plan.each else c.decode_all_s
        if plan.hands_out(n, K - 1) and (plan.each or n == K - 1):
            arrivals.append((t, (n + 1 - handed) * LATENT_S))
            handed = n + 1
    arrivals.append((t + c.after_s, 2 * LATENT_S))  # the window after the first audio
    dry, stall = arrivals[0][0], 0.0
    for at, audio in arrivals:
        stall += max(0.0, at - dry)
        dry = max(dry, at) + audio
    return arrivals[0][0], stall


def test_unmeasured_counts_decode_a_latent_at_a_time_and_hand_out_at_the_end() -> None:
    """Nothing measured yet: decode each latent to measure it, hand out the whole first audio at its end (as late
    as in one piece: no listener runs dry on a guess)."""
    assert plan_first_audio({}, (1, 1), K, LATENT_S, CLOCK) == FirstAudioPlan((1, 1), CLOCK, each=True, hold=K - 1)


def test_a_lone_latent_s_mimi_call_not_measured_is_priced_as_the_whole_first_audio_s() -> None:
    fast, slow = costs(0.02, None, 0.03, 0.1), costs(0.04, None, 0.06, 0.15)
    assert plan_first_audio({(1, 1): fast}, (1, 1), K, LATENT_S, CLOCK) == FirstAudioPlan((1, 1), CLOCK, each=True, hold=0)  # 2 x 50 + 100 ms fits
    assert plan_first_audio({(1, 1): slow}, (1, 1), K, LATENT_S, CLOCK) == FirstAudioPlan((1, 1), CLOCK, each=False, hold=K - 1)


def test_a_fast_lone_request_gets_each_latent_as_it_is_made() -> None:
    c = costs(0.026, 0.012, 0.028, 0.117)  # one row on the 2-core AVX-512 machine (2026-11-28)
    plan = plan_first_audio({(1, 1): c}, (1, 1), K, LATENT_S, CLOCK)
    assert plan == FirstAudioPlan((1, 1), CLOCK, each=True, hold=0)
    first, stall = listen(plan, c)
    assert first == pytest.approx(0.012) and stall == 0


def test_a_burst_whose_latents_cost_what_they_play_gets_its_first_audio_whole() -> None:
    """4 rows: a latent made and decoded per 80 ms. Handed out a latent at a time, the listener would run dry."""
    c = costs(0.040, 0.040, 0.054, 0.189)
    plan = plan_first_audio({(4, 4): c}, (4, 4), K, LATENT_S, CLOCK)
    assert plan == FirstAudioPlan((4, 4), CLOCK, each=False, hold=K - 1)
    assert listen(plan, c)[1] == 0
    assert listen(FirstAudioPlan((4, 4), CLOCK, each=True, hold=0), c)[1] > 0.05, "the plan not taken runs dry"


def test_in_between_the_first_latent_waits_for_the_second() -> None:
    """Starting at the first latent leaves too little for the window after it; starting at the second is still
    sooner than the whole first audio decoded at once."""
    c = costs(0.030, 0.010, 0.040, 0.170)
    plan = plan_first_audio({(1, 1): c}, (1, 1), K, LATENT_S, CLOCK)
    assert plan == FirstAudioPlan((1, 1), CLOCK, each=True, hold=1)
    first, stall = listen(plan, c)
    assert stall == 0 and first < listen(FirstAudioPlan((1, 1), CLOCK, each=False, hold=K - 1), c)[0]
    assert listen(FirstAudioPlan((1, 1), CLOCK, each=True, hold=0), c)[1] > 0


def test_an_unmeasured_key_borrows_the_nearest_larger_one_s_costs() -> None:
    fast, slow = costs(0.01, 0.005, 0.01, 0.05), costs(0.05, 0.05, 0.06, 0.2)
    measured = {(1, 1): fast, (8, 8): slow}
    assert plan_first_audio(measured, (6, 6), K, LATENT_S, CLOCK).each is False
    assert plan_first_audio(measured, (1, 1), K, LATENT_S, CLOCK).hold == 0
    assert plan_first_audio({(1, 1): fast}, (2, 2), K, LATENT_S, CLOCK) == FirstAudioPlan((2, 2), CLOCK, each=True, hold=K - 1), "none larger: measure"


def test_a_newcomer_joining_running_streams_is_not_priced_as_a_lone_start() -> None:
    """A lone start's costs say a latent at a time; one request starting beside running ones borrows a step with as
    many rows (its flow-LM passes and the step after its first audio are longer), then learns its own."""
    lone, two = costs(0.026, 0.012, 0.028, 0.117), costs(0.035, 0.024, 0.053, 0.158)
    measured = {(1, 1): lone, (2, 2): two}
    assert plan_first_audio(measured, (1, 1), K, LATENT_S, CLOCK).hold == 0
    joining = plan_first_audio(measured, (1, 2), K, LATENT_S, CLOCK)
    assert joining == FirstAudioPlan((1, 2), CLOCK, each=False, hold=K - 1)
    measured[(1, 2)] = costs(0.043, None, 0.031, 0.205)  # what a newcomer beside one running stream measured
    assert plan_first_audio(measured, (1, 2), K, LATENT_S, CLOCK).each is False
    assert plan_first_audio(measured, (1, 1), K, LATENT_S, CLOCK).hold == 0, "a lone start keeps its own costs"


def test_every_plan_leaves_the_share_to_spare_or_hands_out_whole() -> None:
    """Over a grid of costs: a plan that starts early keeps the window after within RAMP_SHARE of the first audio."""
    for flow in (0.005, 0.02, 0.04, 0.06):
        for one in (0.003, 0.01, 0.03):
            for after in (0.03, 0.1, 0.2, 0.3):
                c = costs(flow, one, one * 1.5, after)
                plan = plan_first_audio({(1, 1): c}, (1, 1), K, LATENT_S, CLOCK)
                if plan.each and plan.hold < K - 1:
                    assert (K - 1 - plan.hold) * (flow + one) + after <= RAMP_SHARE * K * LATENT_S
                    assert listen(plan, c)[1] == 0


def test_feeding_keeps_running_averages_of_what_was_measured() -> None:
    c = FirstAudioCosts()
    c.feed(FirstAudioPlan((1, 1), CLOCK, True, 0, flow_s=0.02, decode_one_s=0.01), after_s=0.1)
    assert (c.flow_s, c.decode_one_s, c.decode_all_s, c.after_s) == (0.02, 0.01, None, 0.1)
    c.feed(FirstAudioPlan((1, 1), CLOCK, False, 2, flow_s=0.04, decode_all_s=0.03), after_s=0.2)
    assert c.flow_s == pytest.approx(0.026) and c.decode_one_s == 0.01 and c.decode_all_s == 0.03
    assert c.after_s == pytest.approx(0.13)


def test_the_engine_keeps_the_costs_and_times_the_window_after_on_its_clock() -> None:
    """The plan is the engine's (issue 49): it keeps what each step measured, by its key, and times the window after
    the first audio from the plan's hand-out to the step's end on its own clock; no request starting, no plan."""
    from tts_app.engine.first_audio import FirstAudio

    now = [10.0]
    first = FirstAudio((K, LATENT_S), lambda: now[0])
    assert first.plan(0, 3) is None
    plan = first.plan(1, 1)
    assert plan == FirstAudioPlan((1, 1), first.clock, each=True, hold=K - 1)  # nothing measured yet
    plan.flow_s, plan.decode_one_s, plan.ended_at = 0.01, 0.005, 10.05
    first.feed(plan, 10.08)
    assert first.costs[(1, 1)].after_s == pytest.approx(0.03)
    assert first.plan(1, 1).hold == 0  # 2 x 15 ms + 30 ms: each latent as it is made
