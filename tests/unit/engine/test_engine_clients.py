"""Every piece of a served engine's work names its client, and a caller that gives up cancels its request (issue 46, hole 1)."""

import asyncio
import threading
import time

import pytest

from tests.support.fake_backend import FakeBackend
from tts_app.backends.params import SpeechParams
from tts_app.engine import ClientMissing, Engine, EngineBusy, RequestStatus
from tts_app.web.engine_calls import submitted


@pytest.fixture
def served():
    e = Engine(FakeBackend(step_sleep_s=0.02), max_batch_size=4, max_queue=8, require_client=True)
    yield e
    e.close()


@pytest.mark.parametrize("params", [None, SpeechParams(), SpeechParams(seed=3, client=""), SpeechParams(stream=False, client=None)])
def test_a_served_engine_refuses_work_that_names_no_client(served, params):
    with pytest.raises(ClientMissing, match="names its client"):
        served.submit("a b", params)
    with pytest.raises(ClientMissing):
        served.submit_many(["a", "b"], params)
    assert served.stats()["submitted"] == 0 and served.stats()["queued"] == 0


def test_named_work_counts_in_its_clients_share(served):
    """One client holds a quarter of the slots (one of four) and of the queue places (two of eight): past
    them it is refused, that client alone."""
    long = " ".join(["w"] * 200)
    held = []
    with pytest.raises(EngineBusy, match="this client"):
        for i in range(8):
            held.append(served.submit(long, SpeechParams(seed=i, client="addr:10.0.0.1")))
    assert 2 <= len(held) <= 3  # two queue places, and one slot if the worker admitted the first meanwhile
    other = served.submit("a b", SpeechParams(client="addr:10.0.0.2"))
    assert other.result(timeout=30).size
    for handle in held:
        handle.cancel()


def test_a_wait_that_times_out_cancels_the_request(served):
    handle = served.submit(" ".join(["w"] * 500), SpeechParams(client="addr:10.0.0.1"))
    with pytest.raises(TimeoutError):
        handle.result(timeout=0.05)
    assert handle.cancel_asked
    for _ in range(200):
        if handle.status is RequestStatus.CANCELLED:
            break
        time.sleep(0.02)
    assert handle.status is RequestStatus.CANCELLED  # its slot freed within a step, not after 500 words


def test_a_cancelled_awaiter_cancels_the_request(served):
    async def go():
        handle = served.submit(" ".join(["w"] * 500), SpeechParams(client="addr:10.0.0.1"))
        task = asyncio.ensure_future(handle.aresult())
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return handle

    handle = asyncio.run(go())
    assert handle.cancel_asked


def test_a_caller_cancelled_during_its_submission_cancels_what_was_submitted(served):
    """The submission runs on a thread; the coroutine cancelled meanwhile must not leave its request running."""
    release, made = threading.Event(), []

    def slow_submit():
        release.wait(5)
        made.append(served.submit(" ".join(["w"] * 500), SpeechParams(client="addr:10.0.0.1")))
        return made[-1]

    async def go():
        task = asyncio.ensure_future(submitted(slow_submit))
        await asyncio.sleep(0.05)
        task.cancel()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(100):  # the thread's result arrives after the cancellation
            if made:
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.05)

    asyncio.run(go())
    assert made and made[0].cancel_asked
