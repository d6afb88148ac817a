"""What the engine logs at INFO over simulated minutes: at most one short summary a minute, a client's refusal
once a minute, the stats dict only at DEBUG (issue 50 item 8). Clocks are simulated: nothing sleeps."""

from __future__ import annotations

import logging
import threading

import pytest

from tests.support.fake_backend import FakeBackend, SimClock
from tests.support.held_backend import HOLD_S
from tts_app.backends.params import SpeechParams
from tts_app.engine import Engine, EngineBusy
from tts_app.engine import engine as engine_module
from tts_app.engine.operator_log import MAX_CLIENTS, MinuteSummary, RefusalLog, Totals

LOGGER = logging.getLogger("tests.operator_log")


def _info(caplog: pytest.LogCaptureFixture, name: str = "tests.operator_log") -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.INFO and r.name == name]


def test_a_busy_minute_is_one_line_and_a_quiet_one_none(caplog: pytest.LogCaptureFixture) -> None:
    clock = SimClock()
    summary = MinuteSummary(LOGGER, clock)
    with caplog.at_level(logging.DEBUG, logger=LOGGER.name):
        for second in range(10 * 60):  # ten simulated minutes, a step a second: busy for five, then quiet
            clock.t = float(second)
            done = min(second, 5 * 60)  # a request finished each busy second
            summary.tick(Totals(finished=done, audio_s=2.0 * done), queued=0, running=int(second < 5 * 60),
                         details=lambda: {"step_costs": {"k": 1}})
    lines = _info(caplog)
    assert len(lines) == 5, lines  # minutes 1-5; the quiet ones after say nothing
    assert lines[0] == "engine, last 1 min: 60 requests done, 120 s of audio, 0 refused, 0 failed; now 1 running, 0 queued"
    assert all(len(line) < 160 for line in lines)
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert len(debug) == 9 and all("step_costs" in line for line in debug)  # the whole dict: DEBUG only


def test_the_stats_dict_is_not_computed_unless_debug_is_on(caplog: pytest.LogCaptureFixture) -> None:
    clock = SimClock()
    summary = MinuteSummary(LOGGER, clock)
    clock.t = 61.0
    with caplog.at_level(logging.INFO, logger=LOGGER.name):
        assert summary.tick(Totals(finished=1), 0, 0, details=lambda: pytest.fail("computed at INFO"))


def test_a_flood_of_refusals_from_one_client_is_one_line_a_minute(caplog: pytest.LogCaptureFixture) -> None:
    clock = SimClock()
    refusals = RefusalLog(LOGGER, clock)
    with caplog.at_level(logging.INFO, logger=LOGGER.name):
        for tick in range(3 * 600):  # three simulated minutes, ten refusals a second
            clock.t = tick / 10
            refusals.refused("addr:198.51.100.1", "the engine is at capacity")
        refusals.refused("addr:198.51.100.2", "the engine is at capacity")  # another client: its own line
    lines = _info(caplog)
    assert lines == ["refused addr:198.51.100.1: the engine is at capacity",
                     "refused addr:198.51.100.1: the engine is at capacity (599 more refused in the last 60 s)",
                     "refused addr:198.51.100.1: the engine is at capacity (599 more refused in the last 60 s)",
                     "refused addr:198.51.100.2: the engine is at capacity"]


def test_the_clients_remembered_are_bounded() -> None:
    clock = SimClock()
    refusals = RefusalLog(LOGGER, clock)
    assert all(refusals.refused(f"addr:{i}", "cause") for i in range(MAX_CLIENTS + 10))
    assert len(refusals._last) == MAX_CLIENTS
    assert refusals.refused("addr:0", "cause")  # the oldest was forgotten: logged again, never an unbounded table


def test_a_serving_engine_logs_at_most_a_line_a_minute(caplog: pytest.LogCaptureFixture) -> None:
    """Ten simulated minutes of requests one after another (each step costs 5 simulated seconds): the only
    INFO lines after the start are the summaries, at most one a minute, and no stats dict."""
    clock = SimClock()
    engine = Engine(FakeBackend(clock=clock, fixed_s=5.0), max_batch_size=2, clock=clock)
    try:
        with caplog.at_level(logging.INFO, logger="tts_app.engine"):
            caplog.clear()
            seed = 0
            while clock.t < 10 * 60:
                engine.submit("two words", SpeechParams(seed=seed)).result(timeout=30)
                seed += 1
    finally:
        engine.close()
    lines = _info(caplog, "tts_app.engine.engine")
    assert 1 <= len(lines) <= int(clock.t // 60), lines
    assert all(line.startswith("engine, last 1 min: ") and "step_costs" not in line for line in lines), lines


class _Stuck(FakeBackend):
    """Holds its first step until ``go`` is set: the one slot stays taken and the queue stays as filled."""

    def __init__(self) -> None:
        super().__init__()
        self.stepping, self.go = threading.Event(), threading.Event()

    def step(self, states, emit=None):
        self.stepping.set()
        if not self.go.wait(HOLD_S):
            raise RuntimeError("the test never let the backend go")
        return super().step(states, emit)


def test_a_refused_client_is_logged_once_a_minute_with_its_cause(caplog: pytest.LogCaptureFixture) -> None:
    clock = SimClock()
    backend = _Stuck()
    engine = Engine(backend, max_batch_size=1, max_queue=4, clock=clock)
    try:
        engine.submit("first", SpeechParams(client="addr:10.0.0.1"))
        assert backend.stepping.wait(HOLD_S)  # in the slot, held: nothing more is admitted
        with pytest.raises(EngineBusy):
            for filler in range(2, 100):  # one queue place each, until the queue is full
                engine.submit("filler", SpeechParams(client=f"addr:10.0.0.{filler}"))
        with caplog.at_level(logging.INFO, logger="tts_app.engine"):
            caplog.clear()
            for tick in range(2 * 120):  # two simulated minutes, two refusals a second
                clock.t = 1.0 + tick / 2
                with pytest.raises(EngineBusy):
                    engine.submit("hello", SpeechParams(client="addr:198.51.100.1"))
    finally:
        backend.go.set()
        engine.close()
    lines = _info(caplog, "tts_app.engine.engine")
    assert len(lines) == 2 and all(line.startswith("refused addr:198.51.100.1: ") for line in lines), lines
    assert "119 more refused" in lines[1]


def test_an_idle_engine_still_reports_its_last_busy_minute(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """Work, then nothing: the summary comes when the idle worker wakes, not at the next request (which may
    be hours away)."""
    monkeypatch.setattr(engine_module, "IDLE_WAKE_S", 0.01)  # real seconds between the idle worker's looks
    clock = SimClock()
    engine = Engine(FakeBackend(clock=clock, fixed_s=1.0), max_batch_size=2, clock=clock)
    try:
        with caplog.at_level(logging.INFO, logger="tts_app.engine"):
            caplog.clear()
            engine.submit("two words", SpeechParams(seed=1)).result(timeout=30)
            assert _info(caplog, "tts_app.engine.engine") == []  # within its first minute: nothing yet
            clock.t += 61.0
            deadline = threading.Event()
            for _ in range(3000):  # a hang guard, not a timing: the worker looks every 0.01 s
                if _info(caplog, "tts_app.engine.engine") or deadline.wait(0.01):
                    break
    finally:
        engine.close()
    (line,) = _info(caplog, "tts_app.engine.engine")
    assert line.startswith("engine, last 1 min: 1 requests done, ")
