"""A long chunk is flowed in bounded calls, with the same audio as one call (issue 46, hole 4: at speed 0.25 one
call of 8,000 frames kept +129 MB of the runtime's buffers for the life of the process)."""

import numpy as np
import pytest

from tts_app.backends import piper
from tts_app.backends.params import SpeechParams
from tts_app.engine import Engine

TEXT = "The birch canoe slid on the smooth planks, and glue held the sheet to the dark blue background of the hall."


def test_bounded_flow_calls_speak_the_same_audio(piper_backend, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    flow = piper_backend.model.flow_frames

    def counted(z_p_CxT, start, end):
        calls.append(end - start)
        return flow(z_p_CxT, start, end)

    monkeypatch.setattr(piper_backend.model, "flow_frames", counted)
    with Engine(piper_backend, max_batch_size=1) as engine:
        monkeypatch.setattr(piper, "FLOW_CALL_FRAMES", 10**9)
        whole = engine.submit(TEXT, SpeechParams(seed=2, speed=0.25)).result(timeout=600)
        assert max(calls) > 256  # this chunk is long at speed 0.25: one call flowed it all before
        calls.clear()
        monkeypatch.setattr(piper, "FLOW_CALL_FRAMES", 256)
        bounded = engine.submit(TEXT, SpeechParams(seed=2, speed=0.25)).result(timeout=600)
    assert max(calls) <= 256 and len(calls) > 2
    np.testing.assert_array_equal(bounded, whole)
