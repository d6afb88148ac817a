"""A new clip's voice state is prepared ahead of the engine's step loop (issue 47, item 6): by the page's own event
when the page gets the clip (``prepare_voice``, with a tiny random Pocket TTS engine registered as the operator's
loaded model), so that Generate finds it ready, for that visitor only, one such build per visitor at a time; and,
for a request that brings its clip (the API's way), in the submitting thread, so that a stream already playing keeps
getting its audio while the clip is encoded (in the backend's voice worker, at a lower priority than the streams). Builds are counted by a spy on ``voice_state``; a build is held open on
an event where a test needs one under way (no timing is asserted: the timeouts only end a hang)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import soundfile as sf
import torch

from tests.support.pocket_tts_tiny import write_tiny_checkpoint
from tests.unit.voice.test_voice_ingest import speech_like
from tts_app.backends import pocket_tts as pocket
from tts_app.backends.params import SpeechParams
from tts_app.backends.pocket_tts import PocketBackend
from tts_app.catalog import engines as catalog
from tts_app.engine import Engine
from tts_app.engine.input_processing import resolve_params
from tts_app.models.pocket_tts.weights import load_pocket
from tts_app.web.guards.client_identity import visitor_key
from tts_app.web.ui.speak.handlers import prepare_voice
from tts_app.web.ui.voices.voice_input import MODE_UPLOAD

pytestmark = pytest.mark.usefixtures("one_thread")

MODEL = "pocket-tts"
WAIT_S = 300  # a hang's end, not a timing


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return load_pocket(write_tiny_checkpoint(tmp_path_factory.mktemp("pocket") / "ckpt"))


class _Builds:
    """A spy on the backend's ``voice_state``: counts the builds, names their threads, and holds each one open
    until ``go`` is set (set by default)."""

    def __init__(self, real) -> None:
        self.real, self.threads, self.nice, self.go, self.started = real, [], [], threading.Event(), threading.Semaphore(0)
        self.go.set()

    def __call__(self, *args):
        self.threads.append(threading.current_thread().name)
        self.nice.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        self.started.release()
        assert self.go.wait(WAIT_S)
        return self.real(*args)


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> _Builds:
    spy = _Builds(pocket.voice_state)
    monkeypatch.setattr(pocket, "voice_state", spy)
    return spy


@pytest.fixture
def engine(model, monkeypatch: pytest.MonkeyPatch):
    """A Pocket TTS engine, registered as the operator's loaded ``pocket-tts`` (what the page's events look up)."""
    made = Engine(backend=PocketBackend(model, max_batch=4, max_seconds=2), max_batch_size=4)
    monkeypatch.setitem(catalog._engines, MODEL, made)
    yield made
    made.close()


def _request(host: str) -> SimpleNamespace:
    """What the page's events read of a Gradio request: the visitor's address and the session."""
    return SimpleNamespace(client=SimpleNamespace(host=host), session_hash=f"session-{host}", headers={})


def _clip(tmp_path: Path, seed: int) -> str:
    path = tmp_path / f"clip{seed}.wav"
    sf.write(path, speech_like(16000, 2.0, seed=seed), 16000)
    return str(path)


def test_the_page_prepares_a_clips_voice_state_when_it_gets_it(tmp_path, builds, engine) -> None:
    a, b = _request("10.0.0.1"), _request("10.0.0.2")
    clip = _clip(tmp_path, 1)
    prepare_voice(MODE_UPLOAD, None, clip, None, MODEL, request=a)
    backend = engine.backend
    assert len(builds.threads) == 1 and len(backend.voices.keys(visitor_key(a))) == 1
    # Generate, as the page resolves it for this visitor: the state is found ready, not built again.
    params = resolve_params(SpeechParams(seed=1, voice=clip, client=visitor_key(a)), backend)
    audio = engine.submit("Hello there.", params).result(timeout=WAIT_S)
    assert audio.size > 0 and np.isfinite(audio).all() and len(builds.threads) == 1
    # Visitor B with the same clip: B's own state, built for B; A's stays A's.
    prepare_voice(MODE_UPLOAD, None, clip, None, MODEL, request=b)
    assert len(builds.threads) == 2 and backend.voices.keys(visitor_key(b)) == backend.voices.keys(visitor_key(a))
    assert len(backend.voices) == 2


@pytest.mark.parametrize("model_id", ["no-such-model", "", None, 12345, "x" * 10_000])
def test_no_build_for_a_model_not_loaded_or_junk(tmp_path, builds, engine, model_id) -> None:
    prepare_voice(MODE_UPLOAD, None, _clip(tmp_path, 2), None, model_id, request=_request("10.0.0.3"))
    assert builds.threads == [] and len(engine.backend.voices) == 0


def test_a_visitor_prepares_one_clip_ahead_at_a_time(tmp_path, builds, engine) -> None:
    a = _request("10.0.0.4")
    first, second = _clip(tmp_path, 3), _clip(tmp_path, 4)
    builds.go.clear()
    held = threading.Thread(target=prepare_voice, args=(MODE_UPLOAD, None, first, None, MODEL), kwargs={"request": a})
    held.start()
    try:
        assert builds.started.acquire(timeout=WAIT_S)
        prepare_voice(MODE_UPLOAD, None, second, None, MODEL, request=a)  # A's first build is under way: skipped
        assert len(builds.threads) == 1
    finally:
        builds.go.set()
        held.join(WAIT_S)
    backend = engine.backend
    assert len(backend.voices.keys(visitor_key(a))) == 1 and backend.voices.building(visitor_key(a)) == 0
    # The Generate for the skipped clip builds it itself, once.
    params = resolve_params(SpeechParams(seed=2, voice=second, client=visitor_key(a)), backend)
    assert engine.submit("Hi.", params).result(timeout=WAIT_S).size > 0
    assert len(builds.threads) == 2 and len(backend.voices.keys(visitor_key(a))) == 2


def test_a_new_clip_is_encoded_outside_the_step_loop(tmp_path, builds, engine) -> None:
    """A request with a new clip, submitted while its build is held open: a stream of a saved voice submitted after
    it is spoken to its end meanwhile (the loop is not waiting on the clip), then the clip's request is spoken."""
    params = resolve_params(SpeechParams(seed=3, voice=_clip(tmp_path, 5), client="addr:api"), engine.backend)
    builds.go.clear()
    made: list = []
    submitting = threading.Thread(target=lambda: made.append(engine.submit("Hello there.", params)), name="api-request")
    submitting.start()
    try:
        assert builds.started.acquire(timeout=WAIT_S)
        other = engine.submit("One sentence here.", SpeechParams(seed=4, client="addr:other"))
        assert other.result(timeout=WAIT_S).size > 0
    finally:
        builds.go.set()
        submitting.join(WAIT_S)
    assert made[0].result(timeout=WAIT_S).size > 0
    # Built once, in the voice worker (the submitting thread waited for it), behind the streams' priority.
    assert len(builds.threads) == 1 and builds.threads[0].startswith("pocket-voice")
    assert builds.nice[0] >= os.getpriority(os.PRIO_PROCESS, 0) + pocket.VOICE_NICE or builds.nice[0] == 19


def _rel(a, b) -> float:
    return float((a.float() - b).norm() / b.norm())


def test_fast_precision_computes_a_clips_state_in_bf16_close_to_float32(model, monkeypatch) -> None:
    """``TTS_APP_PRECISION=fast`` on a CPU with bf16 instructions: the clip's state is made in bfloat16, kept in
    float32, within 2 % (relative) of float32's in every layer, cached apart from it; ``exact`` (the default): float32,
    as the official code's (tests/unit/pocket_tts/test_pocket_tts_official.py)."""
    from tts_app.models.piper.precision import decoder_kind
    from tts_app.models.pocket_tts.voice import voice_state

    if decoder_kind("fast") != "bf16":
        pytest.skip("this CPU has no bf16 instructions: fast is float32 here")
    clip = SimpleNamespace(reference_audio=speech_like(16000, 2.0, seed=6), reference_sample_rate=16000, content_hash="c6")
    exact = voice_state(model, torch.from_numpy(clip.reference_audio.astype(np.float32))[None], 16000)
    backend = PocketBackend(model, max_batch=2)
    for precision in ("exact", "fast"):
        monkeypatch.setenv("TTS_APP_PRECISION", precision)
        assert backend.prepare_voice(clip, "A")
    states = [backend.voices.peek("A", key) for key in backend.voices.keys("A")]
    assert backend.voices.keys("A") == ["c6:16000:32000", "c6:16000:32000:bf16"]
    assert all(k.dtype == exact.kv[0][0].dtype for k, _ in states[1].kv)
    # float32 both: equal but for the GEMM route the backend's start picked for small products (its rounding, 1e-5)
    assert all(torch.allclose(a, b, atol=1e-5) and torch.allclose(c, d, atol=1e-5) for (a, c), (b, d) in zip(states[0].kv, exact.kv))
    errors = [max(_rel(a, b), _rel(c, d)) for (a, c), (b, d) in zip(states[1].kv, exact.kv)]
    assert all(0 < e < 0.02 for e in errors), errors

