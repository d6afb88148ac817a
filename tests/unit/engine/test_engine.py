"""The engine with a fake model: seeds, determinism, limits, cancellation, failures, shutdown."""

import asyncio
import threading
import time

import numpy as np
import pytest

from tests.support.fake_backend import FakeBackend, expected
from tts_app.engine import Engine, EngineBusy, EngineClosed, RequestCancelled, RequestStatus
from tts_app.backends.params import SpeechParams


@pytest.fixture
def engine():
    e = Engine(FakeBackend(), max_batch_size=4, max_queue=64)
    yield e
    e.close()


def test_each_request_gets_its_own_seeded_audio(engine):
    texts = [" ".join(["w"] * n) for n in (1, 3, 7, 2, 9, 4)]
    handles = [engine.submit(t, SpeechParams(seed=i)) for i, t in enumerate(texts)]
    for i, (t, h) in enumerate(zip(texts, handles)):
        np.testing.assert_array_equal(h.result(timeout=10), expected(t, i))
        assert h.status is RequestStatus.FINISHED


def test_streamed_chunks_equal_the_result(engine):
    h = engine.submit("a b c d e", SpeechParams(seed=3))
    chunks = list(h)
    assert len(chunks) == 5
    np.testing.assert_array_equal(np.concatenate(chunks), h.result())


def test_async_forms(engine):
    async def go():
        h = engine.submit("a b c", SpeechParams(seed=1))
        chunks = [c async for c in h.astream()]
        whole = await engine.submit("a b c", SpeechParams(seed=1)).aresult()
        return np.concatenate(chunks), whole

    streamed, whole = asyncio.run(go())
    np.testing.assert_array_equal(streamed, whole)
    np.testing.assert_array_equal(whole, expected("a b c", 1))


def test_continuous_batching_refills_slots_and_compacts():
    backend = FakeBackend()
    with Engine(backend, max_batch_size=3, policy="fifo") as e:
        hs = [e.submit(" ".join(["w"] * n), SpeechParams(seed=n)) for n in (1, 6, 6, 2)]
        for h in hs:
            h.result(timeout=10)
    # Three start together; the 1-word row leaves after one step (compaction) and
    # the fourth request takes its slot mid-generation (refill).
    assert backend.batches[0] == 3
    assert hs[3].metrics.batch_sizes[0] == 3
    assert hs[0].metrics.batch_sizes == [3]
    assert backend.prepared[:2] == [3, 1]
    assert max(backend.batches) <= 3
    assert backend.released == 4


def test_a_pages_first_line_goes_first_in_every_step_while_it_is_made():
    """The listener hears line 1 while the others are made: in every step it is made first (a CPU decoder
    hands rows out in step order), so its next window never waits for the later lines' first ones."""
    backend = FakeBackend()
    with Engine(backend, max_batch_size=8, policy="deadline") as e:
        texts = ["a b c", "d e", "f g h", "i"]
        hs = e.submit_many(texts, SpeechParams(seed=3))
        for h, text in zip(hs, texts):
            np.testing.assert_array_equal(h.result(timeout=10), expected(text, 3))
    line_1 = [step for step in backend.stepped if "a b c" in step]
    assert len(line_1) == 3 and all(step[0] == "a b c" for step in line_1), backend.stepped


def test_a_later_line_whose_line_before_is_done_is_not_held_back():
    """When the line before has finished, the listener is waiting for this one: it goes before a row whose
    listener holds audio."""
    backend = FakeBackend(step_sleep_s=0.01)
    with Engine(backend, max_batch_size=2, policy="deadline") as e:  # two slots
        other = e.submit("x " * 40, SpeechParams(seed=1))
        deadline = time.monotonic() + 10
        while not backend.stepped:  # the other visitor's row is decoding
            assert time.monotonic() < deadline
            time.sleep(0.002)
        hs = e.submit_many(["a", "b c"], SpeechParams(seed=4))  # one slot left: line 2 waits for line 1
        for h in hs:
            h.result(timeout=10)
        other.cancel()
    with_b = [step for step in backend.stepped if "b c" in step]
    assert with_b and with_b[0][0] == "b c", backend.stepped  # not behind the other row


def test_fifo_admission_under_load():
    with Engine(FakeBackend(), max_batch_size=2) as e:
        hs = [e.submit("a b", SpeechParams(seed=i)) for i in range(20)]
        for h in hs:
            h.result(timeout=10)
    admitted = [h._req.admitted_at for h in hs]
    assert admitted == sorted(admitted)


def test_queue_limit_raises_engine_busy():
    stepped = threading.Event()
    with Engine(FakeBackend(step_sleep_s=0.05, on_step=stepped.set), max_batch_size=1, max_queue=3) as e:
        first = e.submit("a b c d", SpeechParams(seed=0))
        assert stepped.wait(10)  # the worker took the first one: it runs, the queue is empty
        queued = [e.submit("a", SpeechParams(seed=i)) for i in range(3)]
        with pytest.raises(EngineBusy, match="busy"):
            e.submit("a", SpeechParams(seed=9))
        assert e.stats()["rejected"] == 1
        assert queued[-1].queue_position() == 2
        for h in [first, *queued]:
            h.result(timeout=10)


def test_text_over_the_limit_is_refused(engine):
    with pytest.raises(ValueError, match="limit is 2000"):
        engine.submit("x " * 1500)
    with pytest.raises(ValueError, match="empty"):
        engine.submit("   ")


def test_cancel_mid_stream_frees_the_slot_within_a_step():
    cancelled = threading.Event()
    backend = FakeBackend(on_step=lambda: cancelled.wait(10))  # each step ends only once the test has cancelled
    with Engine(backend, max_batch_size=1) as e:
        long_text = " ".join(["w"] * 500)
        h = e.submit(long_text, SpeechParams(seed=0))
        waiting = e.submit("a b", SpeechParams(seed=1))
        it = iter(h)
        next(it)
        h.cancel()
        cancelled.set()
        np.testing.assert_array_equal(waiting.result(timeout=5), expected("a b", 1))
        assert h.status is RequestStatus.CANCELLED
        with pytest.raises(RequestCancelled):
            h.result(timeout=1)
        # Steps, not seconds: the step running at the cancel, and none after it, of the 500 it asked for.
        assert len(h._chunks) <= 2 and backend.stepped.count([long_text]) <= 2, len(h._chunks)


def test_a_caller_that_goes_away_cancels(engine):
    h = engine.submit(" ".join(["w"] * 150) + " SLOW", SpeechParams(seed=0))
    it = iter(h)
    next(it)
    it.close()  # e.g. the browser tab closed and the generator was dropped
    with pytest.raises(RequestCancelled):
        h.result(timeout=5)


def test_failing_rows_fail_alone(engine):
    good = [engine.submit("a b c", SpeechParams(seed=i)) for i in range(3)]
    bad_prepare = engine.submit("BOOM now", SpeechParams(seed=0))
    bad_step = engine.submit("CRASH now please", SpeechParams(seed=0))
    more = engine.submit("d e", SpeechParams(seed=5))
    for i, h in enumerate(good):
        np.testing.assert_array_equal(h.result(timeout=10), expected("a b c", i))
    with pytest.raises(RuntimeError, match="text stage exploded"):
        bad_prepare.result(timeout=10)
    with pytest.raises(RuntimeError, match="decoder exploded"):
        bad_step.result(timeout=10)
    np.testing.assert_array_equal(more.result(timeout=10), expected("d e", 5))
    assert engine.stats()["failed"] == 2


def test_close_with_requests_in_flight_ends_cleanly():
    before = threading.active_count()
    e = Engine(FakeBackend(step_sleep_s=0.01), max_batch_size=2)
    hs = [e.submit(" ".join(["w"] * 300), SpeechParams(seed=i)) for i in range(5)]
    time.sleep(0.05)
    e.close()
    for h in hs:
        with pytest.raises(EngineClosed):
            h.result(timeout=5)
    assert threading.active_count() == before
    with pytest.raises(EngineClosed):
        e.submit("a")


def test_metrics_per_request_and_aggregate(engine):
    h = engine.submit("a b c d", SpeechParams(seed=0))
    h.result(timeout=10)
    m = h.metrics
    assert m.audio_s == pytest.approx(0.4)
    assert 0 <= m.queue_wait_s <= m.time_to_first_audio_s <= m.total_s
    assert m.rtf == pytest.approx(m.total_s / m.audio_s)
    assert len(m.batch_sizes) == 4
    assert set(m.as_dict()) >= {"queue_wait_s", "time_to_first_audio_s", "total_s", "audio_s", "rtf", "batch_sizes"}
    s = engine.stats()
    assert s["finished"] >= 1 and s["steps"] >= 4 and s["audio_s"] >= 0.4


class _SlowTextBackend(FakeBackend):
    """Parsing takes a while (as normalisation and phonemes do), so one-by-one submits would
    let the worker start the first line alone."""

    def check_text(self, text, params=None):
        time.sleep(0.05)
        return super().check_text(text, params)


def test_submit_many_enters_the_queue_together():
    backend = _SlowTextBackend()
    with Engine(backend, max_batch_size=8, max_queue=16) as e:
        handles = e.submit_many(["a b c", "d e", "f g h i"], SpeechParams(seed=3))
        for h, text in zip(handles, ["a b c", "d e", "f g h i"]):
            assert np.array_equal(h.result(timeout=10), expected(text, 3))
    assert backend.prepared == [3]  # one text stage for the three lines
    assert backend.batches[:2] == [1, 3]  # the first line's first window, then all three share the steps


def test_submit_many_queues_all_or_none():
    stepped = threading.Event()
    with Engine(FakeBackend(step_sleep_s=0.05, on_step=stepped.set), max_batch_size=1, max_queue=3) as e:
        from tts_app.engine import LineRejected

        with pytest.raises(LineRejected, match="empty") as caught:
            e.submit_many(["fine", "   ", "also fine"])
        assert caught.value.index == 1
        first = e.submit("a b c d", SpeechParams(seed=0))
        assert stepped.wait(10)  # running: the queue is empty again
        with pytest.raises(EngineBusy, match="busy"):
            e.submit_many(["a", "b", "c", "d"], in_order=False)  # four listeners do not fit in a queue of three
        assert e.stats()["queued"] == 0 and e.stats()["submitted"] == 1  # none of them queued
        e.submit_many(["a", "b", "c", "d"]).pop().result(timeout=10)  # one run's lines: one place (later lines wait inside it)
        first.result(timeout=10)
        assert e.stats()["submitted"] == 5


class _GatedBackend(FakeBackend):
    """Emits each row as it goes, but holds the step after the first row until the test opens the gate."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.shared_step_ended = threading.Event()  # set once a step of more than one row has returned

    def step(self, states, emit=None):
        def held(i, out):
            emit(i, out)
            if i == 0 and len(states) > 1:
                self.gate.wait(5.0)  # a hang guard: the test opens the gate

        out = super().step(states, held if emit is not None else None)
        if len(states) > 1:
            self.shared_step_ended.set()
        return out


def test_a_row_emitted_mid_step_reaches_its_handle_before_the_step_ends():
    backend = _GatedBackend()
    with Engine(backend, max_batch_size=4) as e:
        first, second = e.submit_many(["a b", "c d"], SpeechParams(seed=0))
        chunks = iter(first)
        np.testing.assert_array_equal(next(chunks), expected("a", 0))
        assert not backend.shared_step_ended.is_set(), "the row came only when its step ended"
        assert not second.done
        backend.gate.set()
        np.testing.assert_array_equal(first.result(timeout=10), expected("a b", 0))
        np.testing.assert_array_equal(second.result(timeout=10), expected("c d", 0))


def test_rows_emitted_before_a_failing_row_are_not_run_twice(engine):
    # In one step: two good rows are emitted, then a row fails the step; the retry runs only the rows
    # not emitted yet, so the good rows advance once per step and their audio is exact.
    handles = engine.submit_many(["a b c", "d e f", "CRASH here", "g h"], SpeechParams(seed=3))
    for h, text in zip([handles[0], handles[1], handles[3]], ["a b c", "d e f", "g h"]):
        np.testing.assert_array_equal(h.result(timeout=10), expected(text, 3))
    with pytest.raises(RuntimeError, match="decoder exploded"):
        handles[2].result(timeout=10)


class _PooledBackend(FakeBackend):
    max_batch_size = 6  # a model that allocated six KV slots

    def slot_bytes(self) -> int:
        return 3_000_000


def test_the_slots_come_from_the_setting_at_most_the_model_s_pool_and_the_memory_a_slot_is_logged(monkeypatch, caplog):
    monkeypatch.setenv("TTS_APP_ENGINE_SLOTS", "12")
    with Engine(FakeBackend()) as e:
        assert e.stats()["max_batch_size"] == 12
    with caplog.at_level("INFO", logger="tts_app.engine.engine"):
        with Engine(_PooledBackend()) as e:
            assert e.stats()["max_batch_size"] == 6
    assert "6 slots, about 3.0 MB of memory a slot" in caplog.text
    monkeypatch.delenv("TTS_APP_ENGINE_SLOTS")
    with Engine(FakeBackend()) as e:
        assert e.stats()["max_batch_size"] == 32  # the default: 0.75 C of the fastest CPU measured (28 streams)
