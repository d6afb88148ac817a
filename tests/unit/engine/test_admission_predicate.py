"""One predicate admits, and the queue's ETA replays it: on any engine state the ETA says "now" exactly for
the requests admission takes (issue 49: admission was written twice, kept in step by hand)."""

from __future__ import annotations

from collections import deque

from hypothesis import given, settings
from hypothesis import strategies as st

from tts_app.backends.base import RowInput
from tts_app.backends.params import SpeechParams
from tts_app.engine.qos_settings import QosSettings
from tts_app.engine.request import Request, RequestStatus
from tts_app.engine.scheduler import Scheduler
from tts_app.engine.step_costs import StepCosts

NOW = 100.0
_row = st.fixed_dictionaries({
    "stream": st.booleans(),
    "client": st.sampled_from([None, "a", "b", "c"]),
    "held": st.floats(0.0, 12.0),
    "heard": st.booleans(),
    "left": st.floats(0.0, 20.0),
    "joins_previous": st.booleans(),  # a later line of the previous request's group
    "cancelled": st.integers(0, 9),  # 0: cancelled (one in ten)
})

_SPEC = {"stream": True, "client": None, "held": 0.0, "heard": False, "left": 0.0, "joins_previous": False, "cancelled": 1}


def _requests(specs: list[dict], first_id: int, running: bool) -> list[Request]:
    out: list[Request] = []
    for i, spec in enumerate(specs):
        r = Request(RowInput(first_id + i, "w", SpeechParams()), id=first_id + i, stream=spec["stream"], client=spec["client"],
                    sample_rate=1000)
        r.submitted_at = r.admitted_at = NOW - 1.0
        r.audio_est_s = r.remaining_est_s = spec["left"]
        prev = out[-1] if out else None
        if spec["joins_previous"] and prev is not None and prev.client == r.client and prev.stream == r.stream:
            r.group, r.after = prev.group, prev
        else:
            r.group = r.id
        if running:
            r.status = RequestStatus.RUNNING
            r.play_deadline = NOW + spec["held"] if spec["heard"] and r.stream else None
        else:
            r.admitted_at = None
        r.cancel_requested = spec["cancelled"] == 0
        out.append(r)
    return out


@settings(max_examples=300, deadline=None)
@given(
    running=st.lists(_row, max_size=12),
    waiting=st.lists(_row, max_size=12),
    slots=st.integers(1, 16),
    policy=st.sampled_from(["deadline", "fifo"]),
    price_1=st.floats(0.01, 3.0),
    shared=st.floats(0.0, 1.0),  # how much of a step is a fixed part its rows share
    share=st.sampled_from([0.25, 0.5, 1.0]),
    two_sizes=st.booleans(),
)
def test_the_eta_says_now_exactly_when_admission_admits(running, waiting, slots, policy, price_1, shared, share, two_sizes):
    sched = Scheduler(slots, 256, policy, QosSettings(client_share=share, max_queue_wait_s=1e9))
    costs = StepCosts()
    costs.learn(1, price_1, 1.0)
    if two_sizes:
        costs.learn(4, price_1 * (shared + (1 - shared) * 4), 4.0)
    sched.running = [r for r in _requests(running, 1, True)][:slots]
    queued = _requests(waiting, 1000, False)
    sched.waiting.extend(r for r in queued if not r.cancel_requested)  # admission runs after cancelled ones are dropped
    etas = sched.eta(list(sched.waiting), NOW, costs)
    told_now = {rid for rid, eta in etas.items() if eta == 0.0}
    admitted = {r.id for r in sched.admit(costs, NOW)}
    assert told_now == admitted
    assert all(eta > 0.0 for rid, eta in etas.items() if rid not in admitted)


def test_the_eta_counts_the_room_a_fast_machine_fills_listeners_buffers_with():
    """A listener fed at twice real time gains a second of audio each second: a second stream the load check refuses
    now fits once that listener holds enough room, well before its row ends (the ETA that forgot buffers after
    ``now`` said the row's end, 10 s: the Poisson run's ETA error p95 6.1 in benchmarks/stream_qos_sim.py)."""
    sched = Scheduler(8, 16, "deadline", QosSettings(max_queue_wait_s=1e9))
    costs = StepCosts()
    costs.learn(1, 0.5, 1.0)
    costs.learn(2, 1.0, 2.0)  # 2 audio-s/s at any size: one stream place at load_margin 0.85
    heard, new = _requests([dict(_SPEC, heard=True, held=0.0, left=20.0), dict(_SPEC, left=10.0)], 1, True)
    new.status, new.admitted_at, new.play_deadline, new.audio_est_s, new.remaining_est_s = RequestStatus.WAITING, None, None, 10.0, None
    sched.running, sched.waiting = [heard], deque([new])
    eta = sched.eta([new], NOW, costs)[new.id]
    assert sched.admit(costs, NOW) == []  # refused now: the listener holds nothing yet
    assert 3.0 < eta < 8.0  # it must first hold plenty_s (3 s) past what the newcomer needs; its row ends at 10 s
