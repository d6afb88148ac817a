"""Admission by what listeners hold: the fluid check, and a stream past the place count let in by it."""

from __future__ import annotations

from tts_app.backends.base import RowInput
from tts_app.backends.params import SpeechParams
from tts_app.engine.scheduler import Scheduler, listeners_fed
from tts_app.engine.qos_settings import QosSettings
from tts_app.engine.request import Request, RequestStatus
from tts_app.engine.step_costs import StepCosts


def test_listeners_fed_is_the_fluid_deadline_check():
    assert listeners_fed([(0.0, 10.0)] * 2, rate=2.0)  # two from nothing, made as fast as heard
    assert not listeners_fed([(0.0, 10.0)] * 3, rate=2.0)  # a third: someone runs dry at once
    # Held audio carries the shortfall: three listeners need 30 s of audio, made in 15 s at 2 audio-s/s;
    # 6 s held by two of them lasts until then, 1 s does not.
    assert listeners_fed([(6.0, 10.0), (6.0, 10.0), (0.0, 10.0)], rate=2.0)
    assert not listeners_fed([(1.0, 10.0), (1.0, 10.0), (0.0, 10.0)], rate=2.0)
    # A listener about to end leaves its share to the others.
    assert listeners_fed([(0.0, 1.0), (1.0, 10.0), (1.0, 10.0)], rate=2.0)
    assert not listeners_fed([(0.0, 1.0), (1.0, 10.0), (1.0, 10.0)], rate=1.9)
    assert listeners_fed([], rate=0.0) and not listeners_fed([(0.0, 1.0)], rate=0.0)


def _stream(rid: int, held_until: float | None, left_s: float) -> Request:
    r = Request(RowInput(rid, "w", SpeechParams()), id=rid, stream=True, sample_rate=1000)
    r.group, r.submitted_at, r.admitted_at = rid, 0.0, 0.0
    r.play_deadline, r.remaining_est_s = held_until, left_s
    return r


def test_a_stream_past_the_places_comes_in_while_the_listeners_hold_enough():
    # A machine that feeds two streams (0.45 s of compute a second of audio each, margin 1): the count says 2.
    load = StepCosts()
    load.learn(1, 0.45, 1.0)
    load.learn(2, 0.9, 2.0)  # two sizes measured, every second on the rows
    sched = Scheduler(max_batch_size=8, max_queue=8, qos=QosSettings(load_margin=1.0))
    assert sched.stream_places(load) == 2
    for held in (3.5, 11.0):  # held beyond plenty_s (3 s): 0.5 s and 8 s
        sched.running = [_stream(1, 10.0 + held, 6.0), _stream(2, 10.0 + held, 6.0)]
        for r in sched.running:
            r.status = RequestStatus.RUNNING
        sched.waiting.clear()
        sched.add(_stream(3, None, 6.0))
        admitted = sched.admit(load, now=10.0)
        # 0.5 s held each: a third listener from nothing runs someone dry; 8 s each carries all three.
        assert [r.id for r in admitted] == ([] if held < 4 else [3]), held
        eta = sched.eta(list(sched.waiting), 10.0, load)
        assert all(v > 0 for v in eta.values())  # the queue's ETA waits for what admission waits for
