"""Say it (the Pronunciation tab): one word, spoken as the visitor's own engine work, cancelled when the event ends."""

import asyncio
from types import SimpleNamespace

import gradio as gr
import pytest

from tests.support.fake_backend import FakeBackend
from tts_app.backends.params import SpeechParams
from tts_app.catalog import shared_engine
from tts_app.engine import Engine
from tts_app.web.ui.pronunciation import panel
from tts_app.web.ui.session.active_runs import ActiveRuns

VISITOR = SimpleNamespace(session_hash="visitor-a", client=SimpleNamespace(host="10.1.2.3"))


class _Recording(Engine):
    """A served engine that keeps the params it was given."""

    def __init__(self, step_sleep_s: float = 0.0) -> None:
        super().__init__(FakeBackend(step_sleep_s=step_sleep_s), max_batch_size=4, require_client=True)
        self.asked: list[SpeechParams] = []
        self.handles: list = []

    def submit_many(self, texts, params=None, *, in_order=True):
        self.asked.append(params)
        self.handles.extend(super().submit_many(texts, params, in_order=in_order))
        return self.handles[-len(texts):]


@pytest.fixture
def engine(monkeypatch):
    made: list[_Recording] = []

    def use(step_sleep_s: float = 0.0) -> _Recording:
        made.append(_Recording(step_sleep_s))
        monkeypatch.setattr(shared_engine, "get_engine", lambda: made[-1])
        return made[-1]

    yield use
    for e in made:
        e.close()


def test_the_word_is_spoken_as_the_visitors_work(engine):
    e = engine()
    rate, audio = asyncio.run(panel.say_it("Nguyen", "", VISITOR, ActiveRuns()))  # the fake model reads no lexicon
    assert rate == e.sample_rate and audio.size
    (params,) = e.asked
    assert params.client == "addr:10.1.2.3"


def test_a_long_word_is_refused_in_one_line_before_the_engine(engine):
    e = engine()
    with pytest.raises(gr.Error, match="at most 64 characters; this one has 4,000") as refused:
        asyncio.run(panel.say_it("a" * 4000, "", VISITOR, ActiveRuns()))
    assert "\n" not in refused.value.message and not e.asked


def test_a_cancelled_event_cancels_its_request(engine):
    """Gradio's /cancel cancels the event's task: the engine request goes with it, and the run record too."""
    e = engine(step_sleep_s=0.05)
    runs = ActiveRuns()

    async def go():
        task = asyncio.ensure_future(panel.say_it("Supercalifragilistic", "", VISITOR, runs))
        while not e.handles:
            await asyncio.sleep(0.01)
        assert runs.open_runs("visitor-a") == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert e.handles[-1].cancel_asked and runs.open_runs("visitor-a") == 0


def test_a_say_it_that_times_out_cancels_its_request(engine, monkeypatch):
    e = engine(step_sleep_s=0.5)
    monkeypatch.setattr(panel, "SAY_IT_TIMEOUT_S", 0.2)
    with pytest.raises(gr.Error, match="busy"):
        asyncio.run(panel.say_it("Supercalifragilistic", "", VISITOR, ActiveRuns()))
    assert e.handles[-1].cancel_asked
