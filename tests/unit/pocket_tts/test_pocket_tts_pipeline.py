"""The Pocket TTS backend's two stages side by side (the flow LM making a step's latents while Mimi decodes the
latents made before it), on the tiny random checkpoint: the audio is exactly that of the stages run one after the
other in the same windows, the first audio comes from the first step, cancelling mid-pipeline frees everything,
the step estimates say what each step gives, and the stage threads leave the process's thread count alone."""

from __future__ import annotations

import dataclasses
import threading
import time

import numpy as np
import pytest
import torch

from tests.support.pocket_tts_tiny import write_tiny_checkpoint
from tts_app.backends.base import RowInput
from tts_app.engine.first_audio import FirstAudio, FirstAudioCosts
from tts_app.backends.params import SpeechParams
from tts_app.backends.pocket_tts import PocketBackend
from tts_app.models.layers.stage_thread import StageThread
from tts_app.models.pocket_tts.weights import load_pocket

pytestmark = pytest.mark.usefixtures("one_thread")

LONG = " ".join(f"Sentence number {i} is here." for i in range(12))  # several chunks


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return load_pocket(write_tiny_checkpoint(tmp_path_factory.mktemp("pocket") / "ckpt"))


def _stream(backend: PocketBackend, row: RowInput) -> list[np.ndarray]:
    """The backend's steps for one request, each step's audio."""
    state = backend.prepare([row])[0]
    out = []
    while True:
        step = backend.step([state])[0]
        out.append(step.audio)
        if step.done:
            backend.release(state)
            return out


def _one_after_another(backend: PocketBackend, row: RowInput) -> np.ndarray:
    """The stages one after the other in this thread, in the backend's windows: the first chunk's first latents
    (``first_latents``) one by one, a later chunk's first latent alone, then ``latents_per_step`` at a time."""
    gen = backend.generator
    state = backend.prepare([row])[0]
    pieces = []
    while True:
        r = state.row
        for _ in range(backend.first_latents if not pieces else 1):
            gen.step([r])
            pieces.append(gen.decode([r])[0])
        while not r.done:
            for _ in range(backend.latents_per_step):
                if not r.done:
                    gen.step([r])
            pieces.append(gen.decode([r])[0])
        backend.release(state)
        if state.next_chunk == len(state.chunks):
            return torch.cat(pieces).numpy()
        backend._start_chunks([state])


@pytest.mark.parametrize("text", ["Hello there, how are you today?", LONG])
def test_pipelined_audio_equals_the_stages_one_after_another(model, text):
    row = RowInput(1, text, SpeechParams(seed=11))
    backend = PocketBackend(model, max_batch=1)
    steps = _stream(backend, row)
    serial = _one_after_another(PocketBackend(model, max_batch=1), row)
    spl = model.config.mimi.samples_per_latent
    assert steps[0].size == (backend.first_latents + backend.latents_per_step) * spl, "the first step: the first latents and the next window"
    assert serial.size > 4 * spl
    if text == LONG:
        # At a chunk's end its last latents and the next chunk's first may share one Mimi call (two rows of one
        # product): the same arithmetic in a wider product, equal to float rounding.
        np.testing.assert_allclose(np.concatenate(steps), serial, rtol=0, atol=1e-6)
    else:
        np.testing.assert_array_equal(np.concatenate(steps), serial)


# Costs measured with 2 requests starting together: a latent made and decoded in a fifth of the 80 ms it lasts (each
# latent goes out as it is made), in all of it (the first audio goes out whole), or none yet (decoded a latent at a
# time to measure that, and handed out whole).
FAST = FirstAudioCosts(flow_s=0.010, decode_one_s=0.006, decode_all_s=0.010, after_s=0.050)
SLOW = FirstAudioCosts(flow_s=0.050, decode_one_s=0.030, decode_all_s=0.040, after_s=0.150)


@pytest.mark.parametrize(("costs", "pieces"), [(FAST, "each"), (SLOW, "whole"), (None, "whole")], ids=["fast", "slow", "unmeasured"])
def test_a_new_request_s_first_audio_is_handed_out_before_the_pipeline_runs(model, costs, pieces):
    """With the engine's ``emit``, a request's first latents are decoded and handed out before the two stages start
    (its listener waits for nothing else): a latent at a time when the costs say the window after them still comes
    in time, else whole; the step returns the window made next, and the audio is the same as without emit, step by
    step (a first audio decoded at once: the same arithmetic in a wider product, equal to float rounding)."""
    rows = [RowInput(i, text, SpeechParams(seed=5 + i)) for i, text in enumerate(["Hello there, how are you today?", LONG])]
    plain = PocketBackend(model, max_batch=2)
    plain_states = plain.prepare(rows)
    first_plain = [o.audio for o in plain.step(plain_states)]
    eager = PocketBackend(model, max_batch=2)
    first = FirstAudio(eager.first_audio_shape(), time.perf_counter)  # the engine's planner
    if costs is not None:
        first.costs[(2, 2)] = dataclasses.replace(costs)  # a copy: the step feeds what it measures into it
    plan = first.plan(2, 2)
    states = eager.prepare(rows)
    handed: list[tuple[int, np.ndarray, bool]] = []
    started = eager.mimi.submit  # the pipeline's start: Mimi's stage gets its first job

    def spy(*args):
        handed.append((-1, np.zeros(0), False))
        return started(*args)

    eager.mimi.submit = spy
    outs = eager.step(states, emit=lambda i, out: handed.append((i, out.audio, out.done)), plan=plan)
    first.feed(plan, time.perf_counter())
    assert eager.first_latents > 1, "the test needs a first audio of several latents"
    k, spl = eager.first_latents, eager.samples_per_latent
    pieces_per_row = k if pieces == "each" else 1
    assert [i for i, _, _ in handed] == [0, 1] * pieces_per_row + [-1], "both first audios before the pipeline"
    for i in (0, 1):
        mine = [(audio, done) for j, audio, done in handed[:-1] if j == i]
        assert [a.size for a, _ in mine] == [k * spl // pieces_per_row] * pieces_per_row
        assert not any(done for _, done in mine)
        np.testing.assert_allclose(np.concatenate([a for a, _ in mine]), first_plain[i][:k * spl], rtol=0, atol=1e-6)
        np.testing.assert_allclose(outs[i].audio, first_plain[i][k * spl:], rtol=0, atol=1e-6)
        assert outs[i].audio.size == eager.latents_per_step * spl, "the next window by the step's end"
    # The steps after it are the same too (the latents made beside the pipeline's decode are the next step's).
    for _ in range(2):
        for a, b in zip(plain.step(plain_states), eager.step(states, emit=lambda i, out: None)):
            np.testing.assert_allclose(a.audio, b.audio, rtol=0, atol=1e-6)
    # The step measured what the next plan is made from, for 2 requests starting together.
    seen = first.costs[(2, 2)]
    assert seen.flow_s is not None and seen.after_s is not None and seen.decode_one_s is not None
    assert (seen.decode_all_s is not None) == (costs is not None), "a first audio decoded at once: given or measured"


def test_cancelling_mid_pipeline_frees_every_slot(model):
    backend = PocketBackend(model, max_batch=2)
    states = backend.prepare([RowInput(1, LONG, SpeechParams(seed=1)), RowInput(2, LONG, SpeechParams(seed=2))])
    backend.step(states)
    backend.step(states)
    assert all(len(s.row.latents) > s.row.decoded for s in states), "latents made ahead wait for the next step"
    while states[0].draining is None:  # until a chunk ended in the flow LM and waits for its last decode
        backend.step(states)
    assert backend.generator.mimi_pool.num_live >= 3
    for s in states:
        backend.release(s)
        backend.release(s)
    assert backend.free_slots == 2 and backend.generator.mimi_pool.num_live == 0 and backend.generator.rows == []
    again = backend.prepare([RowInput(3, "Short one.", SpeechParams(seed=3))])  # the freed slots serve anew
    assert backend.step(again)[0].audio.size == (backend.first_latents + backend.latents_per_step) * model.config.mimi.samples_per_latent


def test_estimates_say_what_each_step_gives(model):
    """Every step's audio is what ``estimate_step`` said before it: the first latents and the window after them, the
    latents made ahead, an ended chunk's last latents beside the next chunk's first."""
    backend = PocketBackend(model, max_batch=2)
    states = backend.prepare([RowInput(1, LONG, SpeechParams(seed=1)), RowInput(2, "Short one.", SpeechParams(seed=2))])
    keys, live = set(), list(states)
    while live:
        est = [backend.estimate_step(s) for s in live]
        outs = backend.step(live)
        for e, o in zip(est, outs):
            assert o.audio.size == round(e.audio_s * backend.sample_rate)
            assert e.cost_s > 0 or o.audio.size == 0
            keys.add(e.key)
        for s, o in zip(live, outs):
            if o.done:
                backend.release(s)
        live = [s for s, o in zip(live, outs) if not o.done]
    first = f"latents{backend.first_latents + 2 * backend.latents_per_step}"  # + the window the flow LM makes ahead
    assert backend.steady_estimate().key in keys and first in keys
    assert f"latents{1 + backend.latents_per_step}" in keys, "a later chunk starts with its first latent alone"


def test_a_stage_thread_keeps_its_own_thread_count_and_not_the_process_s():
    before = torch.get_num_threads()
    stage = StageThread("test-stage", before + 2)
    try:
        assert stage.run(torch.get_num_threads) == before + 2
        seen = []
        later = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
        later.start()
        later.join()
        assert seen == [before] and torch.get_num_threads() == before
        assert stage.run(torch.get_num_threads) == before + 2
        with pytest.raises(ZeroDivisionError):
            stage.run(lambda: 1 / 0)
    finally:
        stage.close()
