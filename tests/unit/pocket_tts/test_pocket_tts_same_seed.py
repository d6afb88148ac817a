"""Same seed, same audio (issue 47, item 4), on a tiny random checkpoint through the backend's engine contract.

Why two seed-3 requests once differed on a loaded machine: the first-audio plan is made from step timings, so from
the machine's load, and it chose whether a new row's first latents were decoded by Mimi one at a time or in one
window. Mimi's streaming decode of the same latents in windows cut otherwise sums in another order (every conv and
product of it: about 1e-7), and 16-bit samples turn that into other bits. The backend now decodes every first-audio
latent as it is made whatever the plan, which only says when the audio goes out: a request alone is bit-exact
whichever plan its timings give.

Batch mates and the GEMM route change the rounding, not the speech: BLAS kernels sum a row's products in another
order for another row count (MKL on the AMD EPYC here: fewer than 4 rows vs 4 or more; OpenBLAS: 1, 2-6, 7-12, 16,
17 or more), and OpenBLAS and MKL differ from each other. Padding every product to one row count would make the
latents batch-invariant, at 2-3x the cost of a lone stream's products (measured: 2.4 ms for one row of the flow LM's
[1024, 4096] on MKL, 5-6 ms for 4 or 8), so the rows stay as they are: the same request beside 1, 3 and 7 mates, on
either route, has as many samples, within 1e-5 (measured at most 1e-7 here, 9e-8 at the released size).
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np
import pytest

from tests.support.pocket_tts_tiny import write_tiny_checkpoint
from tests.support.internals import reset_small_gemm
from tts_app.backends.base import FirstAudioPlan, RowInput
from tts_app.backends.params import SpeechParams
from tts_app.backends.pocket_tts import PocketBackend
from tts_app.models.layers import small_gemm
from tts_app.models.pocket_tts.weights import load_pocket

ATOL = 1e-5  # another row count or library: the same sums in another order
TEXTS = ["Hello there, how are you today?", "Short one.", "It costs 3.50 dollars; really, it does: yes.",
         "a somewhat longer sentence, spoken slowly and clearly by the voice. And a second sentence follows it here!"]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return load_pocket(write_tiny_checkpoint(tmp_path_factory.mktemp("pocket") / "ckpt", more_voices=("bob",)))


@pytest.fixture(params=["torch", "openblas"])
def route(request):
    """Each GEMM route the load-time timing may pick, forced."""
    reset_small_gemm()
    small_gemm.calibrate(request.param)
    yield request.param
    reset_small_gemm()


def _clip(seed: int) -> SimpleNamespace:
    g = np.random.default_rng(seed)
    t = np.arange(16000) / 16000
    audio = (0.3 * np.sin(2 * np.pi * (120 + 40 * seed) * t) + 0.05 * g.standard_normal(t.size)).astype(np.float32)
    return SimpleNamespace(reference_audio=audio, reference_sample_rate=16000, content_hash=f"clip{seed}")


TARGET = RowInput(0, TEXTS[0], SpeechParams(seed=3, voice=_clip(9)))


def _mates(n: int) -> list[RowInput]:
    return [RowInput(i + 1, TEXTS[(i + 1) % len(TEXTS)], SpeechParams(seed=10 + i, voice=_clip(i % 3) if i % 2 else None))
            for i in range(n)]


def _plan(backend: PocketBackend, rows: int, each: bool | None) -> FirstAudioPlan | None:
    """The plan the engine's first-audio costs may give a step (None: the backend's own default): a quiet machine's
    (``each``: a latent at a time, handed out at once) or a loaded one's (whole, at the last latent)."""
    if each is None:
        return None
    return FirstAudioPlan((1, rows), time.perf_counter, each=each, hold=0 if each else backend.first_latents - 1)


def _drive(backend: PocketBackend, target: RowInput, mates: list[RowInput], late: int = 0, each: bool | None = None) -> np.ndarray:
    """The engine's way: rows admitted as slots free up (the target ``late`` steps after its mates), stepped, released,
    each step with the first-audio plan ``each`` (see _plan); returns the target's audio."""
    audio: list[np.ndarray] = []
    waiting, live, steps = list(mates), [], 0
    pending: RowInput | None = target
    while waiting or live or pending is not None:
        if pending is not None and steps >= late and backend.free_slots:
            live += list(zip([pending], backend.prepare([pending])))
            pending = None
        n = min(backend.free_slots, len(waiting))
        if n:
            admitted, waiting = waiting[:n], waiting[n:]
            live += list(zip(admitted, backend.prepare(admitted)))
        steps += 1
        if not live:
            continue
        outs = backend.step([s for _, s in live], plan=_plan(backend, len(live), each))
        for (row, state), out in zip(live, outs):
            if row is target:
                audio.append(out.audio)
            if out.done:
                backend.release(state)
        live = [(r, s) for (r, s), out in zip(live, outs) if not out.done]
    return np.concatenate(audio)


def test_a_request_alone_is_bit_exact_whichever_plan_the_load_gives(model, route) -> None:
    quiet = _drive(PocketBackend(model, max_batch=8), TARGET, [], each=True)
    loaded = _drive(PocketBackend(model, max_batch=8), TARGET, [], each=False)
    assert quiet.size > 0 and np.array_equal(quiet, loaded)
    backend = PocketBackend(model, max_batch=8)  # no engine plan, twice on one backend
    assert np.array_equal(_drive(backend, TARGET, []), _drive(backend, TARGET, [])) and np.array_equal(quiet, _drive(backend, TARGET, []))


def test_batch_mates_change_the_rounding_not_the_speech(model, route) -> None:
    backend = PocketBackend(model, max_batch=8)
    alone = _drive(backend, TARGET, [])
    for mates, late in ((1, 0), (3, 0), (7, 0), (7, 3)):  # 3 steps late: it joins rows already speaking
        beside = _drive(backend, TARGET, _mates(mates), late)
        assert beside.shape == alone.shape, (mates, late)
        assert float(np.abs(beside - alone).max()) <= ATOL, (mates, late)


def test_the_gemm_route_changes_the_rounding_not_the_speech(model) -> None:
    spoken = {}
    for name in ("torch", "openblas"):
        reset_small_gemm()
        small_gemm.calibrate(name)
        spoken[name] = _drive(PocketBackend(model, max_batch=8), TARGET, _mates(3))
    reset_small_gemm()
    assert spoken["torch"].shape == spoken["openblas"].shape
    assert float(np.abs(spoken["torch"] - spoken["openblas"]).max()) <= ATOL
