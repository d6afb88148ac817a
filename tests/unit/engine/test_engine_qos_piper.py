"""The listener-first policy on the embedded voice: windows that grow stay exact."""

from __future__ import annotations

import numpy as np

from tts_app.engine import Engine
from tts_app.engine.qos_settings import QosSettings
from tts_app.backends.params import SpeechParams

LONG = ("The old lighthouse keeper walked slowly along the narrow path that led from the village "
        "down to the rocks where the waves broke against the stones every single evening of the year. "
        "Then he rested.")


def test_grown_windows_give_the_whole_decode(piper_backend, monkeypatch):
    # A file steps in the widest windows (640 frames; a stream's no longer grow: issue 49); the audio stays exact.
    keys: list[str] = []
    estimate = piper_backend.estimate_step
    monkeypatch.setattr(piper_backend, "estimate_step", lambda state: keys.append(estimate(state).key) or estimate(state))
    with Engine(piper_backend, qos=QosSettings(low_s=1e-6)) as grown:
        handle = grown.submit(LONG, SpeechParams(seed=4, stream=False))
        chunks = list(handle)
    with Engine(piper_backend, policy="fifo") as fifo:
        whole = fifo.submit(LONG, SpeechParams(seed=4)).result(timeout=120)
    streamed = np.concatenate(chunks)
    assert streamed.shape == whole.shape
    assert np.abs(streamed - whole).max() <= 1e-4
    assert any(int(k.split("w")[-1]) > 200 for k in keys if "w" in k), keys  # a window past the usual 160 frames ran
    est = piper_backend.audio_estimate_s(piper_backend.check_text(LONG))
    assert 0.6 < est / (whole.size / piper_backend.sample_rate) < 1.6  # the queue's ETAs start from this


def test_small_windows_for_a_listener_holding_little_give_the_whole_decode(piper_backend, monkeypatch):
    # A listener who never holds enough (low_s out of reach) gets every window at the first window's
    # size: its next audio is due soon, and a short window comes sooner. The audio stays the whole decode.
    keys: list[str] = []
    estimate = piper_backend.estimate_step
    monkeypatch.setattr(piper_backend, "estimate_step", lambda state: keys.append(estimate(state).key) or estimate(state))
    with Engine(piper_backend, qos=QosSettings(low_s=1e9)) as small:
        chunks = list(small.submit(LONG, SpeechParams(seed=4)))
        stepped = list(keys)
    with Engine(piper_backend, policy="fifo") as fifo:
        whole = fifo.submit(LONG, SpeechParams(seed=4)).result(timeout=120)
    streamed = np.concatenate(chunks)
    assert streamed.shape == whole.shape
    assert np.abs(streamed - whole).max() <= 1e-4
    windows = {int(k.split("w")[-1]) for k in stepped if k.startswith(("w", "text+w"))}
    assert windows and max(windows) <= 96, stepped  # 64 frames (a last one up to 79): never the usual 160
