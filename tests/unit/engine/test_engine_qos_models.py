"""The listener-first policy on real models' rows (Qwen3-TTS and Chatterbox tiny checkpoints) with a
simulated clock: a row far ahead of its listener skips steps while newcomers need them, no row starves,
and each row's audio is the one it gets alone (the rows skipped do not change it)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.fake_backend import ClockedBackend, SimClock
from tests.support.qwen3_tiny import tiny_backend as qwen3_tiny
from tts_app.engine import Engine
from tts_app.engine.qos_settings import QosSettings
from tts_app.models.qwen3.sampling import SamplingParams
from tts_app.backends.params import SpeechParams
from tests.support.internals import wait_calibrated

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = ["the first stream, long", "second", "third one", "and a fourth"]
# The tiny checkpoints give milliseconds of audio (a codec frame: 1 ms): the policy's times scaled down 100x.
TINY_QOS = QosSettings(margin_s=0.0015, first_audio_target_s=0.003, low_s=0.01, plenty_s=0.03, step_horizon_s=0.0025,
                       usual_from_s=0.015, batch_gap_s=0.02, grow_at_s=(), max_queue_wait_s=1e9)


def _run(backend, clock, late_at_step: int):
    """TEXTS[0] alone, then the rest arrive together once it is well ahead of its listener."""
    engine = Engine(backend, max_batch_size=4, max_wait_ms=0, qos=TINY_QOS, clock=clock)
    late: list = []

    def on_step():
        if len(backend.stepped) == late_at_step:
            late.extend(engine.submit_many(TEXTS[1:], SpeechParams(seed=3), in_order=False))

    backend.on_step = on_step
    with engine:
        first = engine.submit(TEXTS[0], SpeechParams(seed=3))
        audio = [first.result(timeout=120)]
        assert len(late) == 3, "the first row ended before the others came"
        audio += [h.result(timeout=120) for h in late]
        return first, late, audio, engine.stats()


def test_qwen3_rows_ahead_of_their_listener_skip_steps_and_none_starves():
    clock = SimClock()
    inner = qwen3_tiny(max_batch=4, frames_per_step=2)
    inner.sampling = SamplingParams(max_new_tokens=120, min_new_tokens=120)
    backend = ClockedBackend(inner, clock, row_s=0.0002)  # a row's step (2 ms of audio) costs 0.2 ms
    first, late, audio, stats = _run(backend, clock, late_at_step=30)
    steps_with_late = [s for s in backend.stepped if any(h.id in s for h in late)]
    skipped = [s for s in steps_with_late if first.id not in s]
    assert skipped, "the first row, far ahead, stepped with every newcomer"
    assert first.stall_s < 1e-9 and max(h.stall_s for h in late) < 1e-9
    assert stats["step_costs"], "no step cost was learnt"
    # Skipped steps change nothing: every row equals its solo run.
    solo_clock = SimClock()
    solo = Engine(ClockedBackend(qwen3_tiny(max_batch=4, frames_per_step=2), solo_clock, 0.0002), max_batch_size=1,
                  max_wait_ms=0, policy="fifo", clock=solo_clock)
    solo.backend.inner.sampling = inner.sampling
    with solo:
        for text, got in zip(TEXTS, audio):
            alone = solo.submit(text, SpeechParams(seed=3)).result(timeout=120)
            assert alone.shape == got.shape  # the same tokens: the same frames
            assert np.abs(alone - got).max() <= 1e-4  # batched float sums differ in the last bits only


def test_qwen3_start_up_calibration_frees_its_rows_and_changes_no_audio(monkeypatch: pytest.MonkeyPatch):
    """The GPU's start-up calibration, run here on the CPU: batches of 1, 2 and 4 calibration rows are
    stepped and released (every KV slot free again), the step costs are separated, and a request after
    it gives the audio an engine without calibration gives."""
    plain = qwen3_tiny(max_batch=4, frames_per_step=2)
    with Engine(plain, max_batch_size=4, max_wait_ms=0) as engine:
        assert wait_calibrated(engine, timeout=60)  # none: a CPU backend learns its costs in service
        assert engine.stats()["step_costs"] == {}
        alone = engine.submit(TEXTS[0], SpeechParams(seed=3)).result(timeout=120)
    backend = qwen3_tiny(max_batch=4, frames_per_step=2)
    monkeypatch.setattr(backend, "calibration_text", lambda: "calibrate")
    with Engine(backend, max_batch_size=4, max_wait_ms=0) as engine:
        assert wait_calibrated(engine, timeout=120)
        assert engine._costs.separated("frames2") and backend.free_slots == 4
        audio = engine.submit(TEXTS[0], SpeechParams(seed=3)).result(timeout=120)
    np.testing.assert_array_equal(audio, alone)
