"""The listener-first policy on the fake model with a simulated clock: deadlines, growing windows,
admission by capacity, ETAs, classes of work, fair shares, starvation freedom.

Only the fake backend's steps move the simulated clock, and arrivals happen inside steps (on the
engine's worker thread), so every figure here is the same on any machine, however loaded.
"""

from __future__ import annotations


import numpy as np
import pytest

from tests.support.fake_backend import FakeBackend, SimClock, expected
from tts_app.backends.base import WIDEST_WINDOW, RowInput
from tts_app.engine import Engine, EngineBusy
from tts_app.engine import deadlines
from tts_app.engine.qos_settings import QosSettings
from tts_app.engine.request import Request
from tts_app.engine.scheduler import Scheduler
from tts_app.engine.step_costs import StepCosts
from tts_app.backends.params import SpeechParams

WORDS = 60  # 6 s of audio per stream


def words(n: int, tag: str = "w") -> str:
    return " ".join([tag] * n)


def sim_engine(policy: str = "deadline", qos: QosSettings | None = None, max_batch_size: int = 16, **costs):
    """An engine whose steps cost ``fixed_s + word_s * words`` simulated seconds."""
    clock = SimClock()
    backend = FakeBackend(clock=clock, fixed_s=costs.get("fixed_s", 0.01), word_s=costs.get("word_s", 0.02))
    qos = qos if qos is not None else QosSettings(max_queue_wait_s=1e9)
    engine = Engine(backend, max_batch_size=max_batch_size, max_queue=256, policy=policy, qos=qos, clock=clock)
    return engine, backend, clock


def priced(price: float) -> StepCosts:
    """Step costs measured at two batch sizes, ``price`` seconds of step per second of audio at both (rows pay all)."""
    costs = StepCosts()
    costs.learn(1, price, 1.0)
    costs.learn(2, 2 * price, 2.0)
    return costs


def run_all(handles, texts, seed=0):
    for h, text in zip(handles, texts):
        np.testing.assert_array_equal(h.result(timeout=30), expected(text, seed))


# -- the pure policy ------------------------------------------------------------
def _req(rid: int, play_deadline: float | None, stream: bool = True, submitted: float = 0.0) -> Request:
    r = Request(RowInput(rid, "w", SpeechParams()), id=rid, stream=stream, sample_rate=1000)
    r.submitted_at, r.play_deadline, r.admitted_at = submitted, play_deadline, submitted
    return r


def _plan(rows, now, row_s, q):
    return [r.id for r in deadlines.plan(rows, now, lambda r, n: row_s, q)]


def test_plan_takes_the_nearest_deadlines_within_the_step_s_horizon():
    q = QosSettings(step_s=0.25)
    rows = [_req(1, 10.5), _req(2, 10.35), _req(3, 10.9), _req(4, 12.0)]
    # 0.25 s of work: the two nearest rows (0.2 s); the third can wait for the next step and still end in time
    assert _plan(rows, 10.0, 0.1, q) == [2, 1]


def test_every_listener_who_cannot_wait_steps_past_the_horizon():
    """Overload on a loaded CPU: listeners whose audio a later step would bring too late all step now (a
    small step would save nobody and pay the fixed part again); a listener who can wait, waits."""
    q = QosSettings(step_s=0.25)
    rows = [_req(1, 10.2), _req(2, 10.3), _req(3, 10.7), _req(4, 15.0)]
    assert _plan(rows, 10.0, 0.3, q) == [1, 2, 3]  # a row's step 0.3 s, more than the horizon
    assert _plan([_req(1, 10.45), _req(2, 12.0), _req(3, 15.0)], 10.0, 0.3, q) == [1]


def test_a_newcomer_s_first_audio_is_due_one_step_after_admission_and_goes_by_its_deadline():
    q = QosSettings(step_s=0.25)
    new = _req(3, None, submitted=9.9)  # admitted at 9.9: due at 10.15
    assert deadlines.deadline(new, q) == pytest.approx(10.15)
    assert _plan([_req(1, 10.6), _req(2, 10.1), new], 10.0, 0.05, q) == [2, 3, 1]


def test_a_new_stream_s_first_window_goes_first_where_every_listener_can_spare_it():
    """A late first audio is a wait, a late next window a stall: a newcomer goes before listeners due sooner only
    where none of them would then be late."""
    q = QosSettings()  # the newcomer's first audio is due 0.25 s after its admission
    assert _plan([_req(1, 10.2), _req(2, 10.9), _req(3, None, submitted=10.0)], 10.0, 0.01, q) == [3, 1, 2]
    assert _plan([_req(1, 10.015), _req(2, 10.9), _req(3, None, submitted=10.0)], 10.0, 0.01, q) == [1, 3, 2]


def test_a_page_s_later_lines_wait_until_its_first_line_has_stepped():
    q = QosSettings()
    first, second = _req(1, None, submitted=10.0), _req(2, None, submitted=10.0)
    second.after, second.group = first, first.id
    assert _plan([first, second], 10.0, 0.01, q) == [1]
    first.batch_sizes.append(2)
    first.play_deadline = 10.7
    assert _plan([first, second], 10.0, 0.01, q) == [1, 2]


def test_windows_are_small_while_the_listener_holds_little_and_a_file_s_the_widest():
    q = QosSettings(low_s=1.0)
    listener = _req(1, None)
    assert deadlines.window_level(listener, 10.0, q) == 0  # before its first audio: the small first window
    for held, level in ((0.5, 0), (1.2, 1), (2.5, 1), (30.0, 1)):  # no doubling past low_s (it changed nothing: issue 49)
        listener.play_deadline = 10.0 + held
        assert deadlines.window_level(listener, 10.0, q) == level, held
    assert deadlines.window_level(listener, 10.0, QosSettings(low_s=0.0)) == 1  # the rule off: the usual window
    assert deadlines.window_level(_req(2, None, stream=False), 10.0, q) == WIDEST_WINDOW  # nobody waits on a file's next audio


def test_rows_holding_plenty_skip_while_a_listener_is_in_need():
    q = QosSettings()
    needy, rich, file_row = _req(1, 10.2), _req(2, 10.0 + q.plenty_s + 1), _req(3, None, stream=False, submitted=9.5)
    assert _plan([rich, needy, file_row], 10.0, 0.01, q) == [1]  # the rich row and the file (not yet overdue) skip
    # Nobody in need: nothing is held back (no compute is left idle).
    assert set(_plan([rich, _req(4, 10.0 + q.low_s + 0.5)], 10.0, 0.01, q)) == {2, 4}


def test_an_overdue_file_steps_even_while_streams_are_in_need():
    q = QosSettings()
    overdue = _req(3, None, stream=False, submitted=10.0 - q.plenty_s - 0.1)
    assert _plan([_req(1, 10.2), overdue], 10.0, 0.01, q) == [3, 1]


def test_files_alone_step_together_whatever_their_gap():
    """Eight sessions' whole files (the page's streaming off) under the deadline default were stepped one
    at a time: their step gaps capped the step. Without a listener waiting, all step together."""
    files = [_req(i, None, stream=False, submitted=9.9) for i in range(1, 9)]
    assert sorted(_plan(files, 10.0, 0.6, QosSettings())) == list(range(1, 9))


# -- the engine, simulated time -----------------------------------------------------
def _stall_and_starts(handles):
    return [h.stall_s for h in handles], [h.metrics.time_to_first_audio_s for h in handles]


def test_a_burst_twice_the_capacity_stalls_nobody_under_deadlines_but_everyone_under_fifo():
    texts = [words(WORDS) for _ in range(16)]
    results = {}
    for policy in ("fifo", "deadline"):
        engine, _backend, _clock = sim_engine(policy)
        with engine:
            handles = engine.submit_many(texts, in_order=False)
            run_all(handles, texts)
            results[policy] = _stall_and_starts(handles)
    fifo_stalls, _ = results["fifo"]
    stalls, _ = results["deadline"]
    assert sum(s > 0 for s in fifo_stalls) >= 8  # the old schedule: every row steps every step, all stutter
    assert max(stalls) < 1e-9  # admitted streams are fed in time; the others wait in the queue


def test_admission_stops_at_the_measured_capacity_and_the_eta_is_honest():
    engine, backend, clock = sim_engine()
    etas: dict[int, float] = {}
    places_seen: list[int] = []

    def on_step():
        places_seen.append(sum(1 for r in engine._scheduler.running if r.stream))
        if len(backend.batches) == 30:  # costs learnt: ask the queue what it expects
            for r in engine._scheduler.waiting:
                etas[r.id] = clock() + engine._eta(r)

    backend.on_step = on_step
    texts = [words(WORDS) for _ in range(12)]
    with engine:
        handles = engine.submit_many(texts, in_order=False)
        run_all(handles, texts)
        stats = engine.stats()
    # Learnt: a step of n words costs 0.01 + 0.02 n s for 0.1 n s of audio; the places n <= 0.85 / price(n).
    places = max(n for n in range(1, 17) if n * (0.01 + 0.02 * n) / (0.1 * n) <= QosSettings().load_margin)
    assert max(places_seen) <= stats["stream_places"] == places
    started = {h.id: h._req.admitted_at for h in handles}
    assert etas, "some requests were still queued at step 30"
    for rid, eta in etas.items():
        assert abs(started[rid] - eta) <= 0.3 * max(started[rid] - 0.0, 1.0), (rid, eta, started[rid])


def test_a_stream_s_windows_stay_usual_a_file_s_are_the_widest_and_the_audio_is_unchanged():
    """Windows doubling with what a listener holds changed no row of scheduler_ablation.py (issue 49): a stream keeps
    the usual window; a file, whose next audio nobody waits on, steps in the backend's widest (4 words here)."""
    engine, backend, _clock = sim_engine(word_s=0.005, fixed_s=0.001)
    text = words(200)
    with engine:
        chunks = list(engine.submit(text, SpeechParams(seed=7)))
        file_chunks = list(engine.submit(text, SpeechParams(seed=7, stream=False)))
    for pieces in (chunks, file_chunks):
        np.testing.assert_array_equal(np.concatenate(pieces), expected(text, 7))
    assert {c.size // 100 for c in chunks} == {1}
    assert max(c.size // 100 for c in file_chunks) == 4 and len(file_chunks) <= 200 // 4 + 1


def test_a_file_uses_the_capacity_streams_leave_and_is_never_starved():
    # A margin that leaves streams 15 % short of the machine: the file uses that 15 %.
    engine, backend, clock = sim_engine(qos=QosSettings(load_margin=0.85, max_queue_wait_s=1e9))
    texts = [words(WORDS) for _ in range(12)]
    with engine:
        streams = engine.submit_many(texts, in_order=False)
        doc = engine.submit(words(100), SpeechParams(seed=3, stream=False))
        run_all(streams, texts)
        np.testing.assert_array_equal(doc.result(timeout=30), expected(words(100), 3))
        admitted_streams = [h for h in streams if h._req.admitted_at == 0.0]
    assert max(h.stall_s for h in admitted_streams) < 1e-9  # the file never made a listener wait
    assert doc._req.finished_at < max(h._req.finished_at for h in streams)  # and it did not wait for them all


def test_no_row_starves_when_more_is_admitted_than_the_machine_feeds():
    # An operator who overrides the margin (or wrong costs) overloads the machine: every row still moves.
    engine, backend, clock = sim_engine(qos=QosSettings(load_margin=10.0, max_queue_wait_s=1e9))
    texts = [words(40, f"t{i}") for i in range(16)]
    with engine:
        handles = engine.submit_many(texts, in_order=False)
        run_all(handles, texts)
    last = {t: 0 for t in texts}
    worst_gap = 0
    for i, step in enumerate(backend.stepped):
        for t in step:
            worst_gap = max(worst_gap, i - last[t])
            last[t] = i
    assert worst_gap <= 16  # at most one row of each other stream between two steps of a row


def test_a_wait_past_the_limit_is_refused_with_a_retry_time():
    engine, backend, clock = sim_engine(qos=QosSettings(max_queue_wait_s=5.0))
    refusals: list[EngineBusy] = []
    accepted = []
    internal = []

    def on_step():
        if len(backend.batches) == 20:
            for _ in range(20):
                try:
                    accepted.append(engine.submit(words(WORDS), SpeechParams(client=f"visitor{len(accepted) + len(refusals)}")))
                except EngineBusy as exc:
                    refusals.append(exc)
            internal.append(engine.submit(words(WORDS)))

    backend.on_step = on_step
    with engine:
        first = engine.submit_many([words(WORDS) for _ in range(4)], in_order=False)
        for h in first:
            h.result(timeout=30)
        for h in accepted + internal:
            h.result(timeout=30)
    assert accepted and refusals
    assert all(exc.retry_after_s is not None and exc.retry_after_s > 0 for exc in refusals)
    assert "capacity" in str(refusals[0])
    assert internal, "the app's own work (no client) is queued, not refused"


def test_one_client_cannot_take_every_slot_or_queue_place():
    engine, backend, clock = sim_engine(max_batch_size=8)  # client share 0.25: 2 slots, 64 queue places
    texts = [words(WORDS) for _ in range(64)]
    with engine:
        flood = engine.submit_many(texts, SpeechParams(client="flooder"), in_order=False)
        with pytest.raises(EngineBusy, match="this client"):
            engine.submit(words(5), SpeechParams(client="flooder"))
        other = engine.submit(words(5), SpeechParams(seed=1, client="visitor"))
        np.testing.assert_array_equal(other.result(timeout=30), expected(words(5), 1))
        assert other._req.admitted_at - other._req.submitted_at < 1.0  # it did not wait for the flooder's queue
        for h in flood:
            h.cancel()
    assert max(backend.batches) <= 3


def test_the_page_figures_show_each_line_s_stall():
    from tts_app.web.ui.common.run_figures import FIGURE_HEADERS, RunFigures

    engine, _backend, _clock = sim_engine("fifo")
    texts = [words(WORDS) for _ in range(8)]
    with engine:
        handles = engine.submit_many(texts, in_order=False)
        run_all(handles, texts)
    figures = RunFigures()
    for i, h in enumerate(handles):
        figures.add_line(i + 1, texts[i], h.metrics.as_dict())
    table = figures.table()
    assert FIGURE_HEADERS[-1] == "stall (s)"
    assert [row[-1] for row in table[:-1]] == [round(h.stall_s, 3) for h in handles]
    assert table[-1][-1] == pytest.approx(sum(h.stall_s for h in handles), abs=0.01) and table[-1][-1] > 0
    assert figures.summary()["stall_s"] == table[-1][-1]


def test_a_page_s_lines_are_one_listener_they_start_together_and_are_due_in_turn():
    engine, backend, _clock = sim_engine(qos=QosSettings(client_share=0.5, max_queue_wait_s=1e9), max_batch_size=8)
    lines = [words(30, f"l{i}") for i in range(3)]
    due: dict[int, float] = {}

    def on_step():
        if len(backend.batches) == 1:
            rows = {r.id: r for r in engine._scheduler.running}
            due.update({rid: deadlines.deadline(r, engine.qos) for rid, r in rows.items()})

    backend.on_step = on_step
    with engine:
        handles = engine.submit_many(lines, SpeechParams(client="page:one"))  # a share of four rows: all three at once
        run_all(handles, lines)
    assert len({h._req.admitted_at for h in handles}) == 1  # admitted together
    first, second, third = (h.id for h in handles)
    # Line 2 is due when line 1 (3 s of audio) has been heard, line 3 after line 2 as well.
    assert due[second] > due[first] + 2.5 and due[third] > due[second] + 2.5
    assert max(h.stall_s for h in handles[1:]) < 1e-9


@pytest.mark.parametrize("policy", ["fifo", "deadline"])
def test_a_page_s_lines_take_its_visitor_s_share_of_slots_and_one_queue_place(policy: str):
    """Issue 32 item 4: a page's 50 lines took 16 of 16 slots (later lines of a run joined past the
    client's share) and 34 queue places; now the run holds its visitor's share of rows and one place."""
    engine, backend, _clock = sim_engine(policy, qos=QosSettings(max_queue_wait_s=1e9), max_batch_size=16)
    seen: list[int] = []
    backend.on_step = lambda: seen.append(sum(r.client == "page" for r in engine._scheduler.running))
    lines = [words(WORDS, f"l{i}") for i in range(50)]
    with engine:
        page = engine.submit_many(lines, SpeechParams(client="page"))
        more = engine.submit_many(lines[:2], SpeechParams(client="page"))  # a second run of the same visitor: a place of its own
        others = [engine.submit(words(5), SpeechParams(seed=1, client=f"visitor{i}")) for i in range(12)]
        for h in others:
            np.testing.assert_array_equal(h.result(timeout=30), expected(words(5), 1))
        if policy == "fifo":  # (deadline admits by the machine's stream places, which these fill)
            # Nobody waited for the page's lines. (Measured from each submission: the worker's steps move
            # the simulated clock while this thread is still submitting.)
            assert all(h._req.admitted_at - h._req.submitted_at < 1.0 for h in others)
        for h in page + more:
            h.cancel()
    assert max(seen) == 4  # 16 slots x client share 0.25


def test_the_servers_policy_comes_from_its_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from tts_app.engine import app_policy

    monkeypatch.delenv("TTS_APP_ENGINE_POLICY", raising=False)
    assert app_policy() == "deadline"  # the server's default: listeners first (issue 34)
    monkeypatch.setenv("TTS_APP_ENGINE_POLICY", "fifo")
    assert app_policy() == "fifo"
    monkeypatch.setenv("TTS_APP_ENGINE_POLICY", "lottery")
    with pytest.raises(ValueError, match="TTS_APP_ENGINE_POLICY must be one of fifo, deadline"):
        app_policy()


def test_the_eta_counts_a_page_s_lines_as_one_place_as_admission_does():
    """The server's deadline default met issue 32's page runs: a page's 50 lines hold one stream place
    and their visitor's share of rows, but the queue's ETA counted each held or queued line as a place
    of its own, so another visitor's request was told "would wait about 98 s" (503) while admission
    would have taken it at once. The ETA now simulates places by group, as ``admit`` does."""
    q = QosSettings(client_share=0.25, max_queue_wait_s=1e9)
    sched = Scheduler(16, 256, "deadline", q)
    load = priced(q.load_margin / 4.5)  # 4 stream places
    assert sched.stream_places(load) == 4
    page = []
    for i in range(50):
        r = Request(RowInput(i, "w", SpeechParams()), id=1000 + i, stream=True, client="A", sample_rate=1000)
        r.group, r.after, r.audio_est_s = 1000, page[-1] if page else None, 5.0
        page.append(r)
    for r in page:
        sched.add(r)
    running = sched.admit(load, 0.0)
    sched.start(running)
    assert len(running) == 4  # the visitor's share of the 16 slots, in one place
    other = Request(RowInput(0, "w", SpeechParams()), id=2000, stream=True, client="B", sample_rate=1000)
    other.group, other.audio_est_s = 2000, 5.0
    assert sched.eta([other], 0.0, load, extra=[other]) == {2000: 0.0}
    sched.add(other)
    assert other in sched.admit(load, 0.0)  # and admission agrees


def test_a_cancelled_row_does_not_make_the_next_request_wait():
    """A client that leaves a stream early (pocket-tts's HTTP test, under the deadline default): its row
    is cancelled at the engine's next step, and a request sent meanwhile must not be told to wait for
    that row's 100 s of audio on a machine with one stream place."""
    sched = Scheduler(8, 256, "deadline", QosSettings(max_queue_wait_s=1e9))
    load = priced(3.7)  # slower than real time: one place
    assert sched.stream_places(load) == 1
    left = Request(RowInput(0, "w", SpeechParams()), id=3000, stream=True, client="A", sample_rate=1000)
    left.group, left.audio_est_s = 3000, 100.0
    sched.add(left)
    sched.start(sched.admit(load, 0.0))
    nxt = Request(RowInput(0, "w", SpeechParams()), id=3001, stream=True, client="A", sample_rate=1000)
    nxt.group, nxt.audio_est_s = 3001, 1.0
    assert sched.eta([nxt], 0.0, load, extra=[nxt])[3001] > 100.0  # a live row ahead: an honest long wait
    left.cancel_requested = True
    assert sched.eta([nxt], 0.0, load, extra=[nxt]) == {3001: 0.0}


def test_a_request_admission_would_take_now_needs_no_queue_place():
    """The queue-place check reads the predicate through the ETA: two visitors at their share of the slots filled
    the queue with requests that wait for their own rows, and a third visitor, whom a free slot would take at once,
    was told the engine is busy."""
    sched = Scheduler(12, 2, "fifo", QosSettings(client_share=0.4, max_queue_wait_s=1e9))  # 4 rows, 1 queue place a client
    costs = priced(0.01)
    for client in ("a", "b"):
        rows = []
        for i in range(5):
            r = Request(RowInput(i, "w", SpeechParams()), stream=True, client=client, sample_rate=1000)
            r.group, r.audio_est_s = r.id, 5.0
            rows.append(r)
        sched.start(rows[:4])
        sched.waiting.extend(rows[4:])
    visitor = Request(RowInput(0, "w", SpeechParams()), stream=True, client="c", sample_rate=1000)
    visitor.group, visitor.audio_est_s = visitor.id, 5.0
    with pytest.raises(EngineBusy, match="busy"):
        sched.check_room([visitor])  # 2 of 2 places taken, 4 of 12 slots free
    etas = sched.eta([visitor], 0.0, costs, extra=[visitor])
    assert etas == {visitor.id: 0.0}
    sched.check_room([visitor], {rid for rid, eta in etas.items() if eta == 0.0})  # no place needed
    sched.waiting.append(visitor)
    assert sched.admit(costs, 0.0) == [visitor]
