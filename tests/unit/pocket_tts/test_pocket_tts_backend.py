"""The Pocket TTS backend through the engine contract, on a tiny random checkpoint in the released layout:
a row equals itself alone (batched, refilled into freed slots, beside rows of other voices and lengths),
streamed windows equal one whole decode, voices cached per clip, saved voices loaded, slots freed."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from tests.support.pocket_tts_tiny import write_tiny_checkpoint
from tts_app.backends.base import RowInput
from tts_app.backends.params import SpeechParams
from tts_app.backends.pocket_tts import PocketBackend
from tts_app.models.pocket_tts.text import max_frames
from tts_app.models.pocket_tts.weights import load_pocket
from tts_app.text.errors import TextError

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = [
    "Hello there, how are you today?",
    "Short one.",
    "a somewhat longer sentence, spoken slowly and clearly by the voice. And a second sentence follows it here!",
]
ATOL = 1e-5  # rows batched run the same arithmetic in wider matrix products


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return load_pocket(write_tiny_checkpoint(tmp_path_factory.mktemp("pocket") / "ckpt"))


def _clip(seed: int) -> SimpleNamespace:
    g = np.random.default_rng(seed)
    t = np.arange(16000) / 16000
    audio = (0.3 * np.sin(2 * np.pi * (120 + 40 * seed) * t) + 0.05 * g.standard_normal(t.size)).astype(np.float32)
    return SimpleNamespace(reference_audio=audio, reference_sample_rate=16000, content_hash=f"clip{seed}")


def _rows() -> list[RowInput]:
    return [
        RowInput(1, TEXTS[0], SpeechParams(seed=5)),
        RowInput(2, TEXTS[1], SpeechParams(seed=6, voice=_clip(1))),
        RowInput(3, TEXTS[2], SpeechParams(seed=7, voice=_clip(2))),
        RowInput(4, TEXTS[0], SpeechParams(seed=8, voice=_clip(1))),
    ]


def _drive(backend: PocketBackend, rows: list[RowInput]) -> list[np.ndarray]:
    """Admit rows as slots free up (the engine's way), step the live ones, release finished ones."""
    audio: dict[int, list[np.ndarray]] = {r.request_id: [] for r in rows}
    waiting, live = list(rows), []
    while waiting or live:
        n = min(backend.free_slots, len(waiting))
        if n:
            admitted, waiting = waiting[:n], waiting[n:]
            live += list(zip(admitted, backend.prepare(admitted)))
        outs = backend.step([s for _, s in live])
        for (row, state), out in zip(live, outs):
            assert out.audio.dtype == np.float32 and out.audio.ndim == 1
            audio[row.request_id].append(out.audio)
            if out.done:
                backend.release(state)
        live = [(r, s) for (r, s), out in zip(live, outs) if not out.done]
    return [np.concatenate(audio[r.request_id]) for r in rows]


def _close(a: np.ndarray, b: np.ndarray, what: str) -> None:
    assert a.shape == b.shape, f"{what}: {a.shape} vs {b.shape}"
    err = float(np.abs(a - b).max()) if a.size else 0.0
    assert err <= ATOL, f"{what}: max diff {err:.3g}"


def test_batched_and_refilled_rows_equal_each_row_alone(model):
    solo = [_drive(PocketBackend(model, max_batch=1), [r])[0] for r in _rows()]
    assert all(a.size > 0 for a in solo)
    assert len({a.size for a in solo}) > 1, "the rows should end at different steps"
    for max_batch in (4, 2):  # all at once; two slots refilled as rows end
        together = _drive(PocketBackend(model, max_batch=max_batch), _rows())
        for i, (a, b) in enumerate(zip(together, solo)):
            _close(a, b, f"row {i} with max_batch {max_batch}")


def test_window_sizes_do_not_change_the_audio(model):
    """Streamed in windows of 1, 2 and 8 latents, or decoded in one call: the same audio."""
    rows = _rows()[:3]
    base = _drive(PocketBackend(model, max_batch=3, latents_per_step=1), rows)
    for size in (2, 8):
        for i, (a, b) in enumerate(zip(base, _drive(PocketBackend(model, max_batch=3, latents_per_step=size), rows))):
            _close(a, b, f"row {i}, windows of {size}")
    backend = PocketBackend(model, max_batch=1, latents_per_step=1000)
    states = backend.prepare([rows[1]])
    while not states[0].row.done:  # generate the whole chunk, then decode it in one Mimi call
        backend.generator.step([states[0].row])
    row = states[0].row
    whole = backend.generator.decode([row])[0].numpy()
    _close(whole, base[1], "one decode of every latent")


def test_the_seed_decides_the_speech(model):
    backend = PocketBackend(model, max_batch=2)
    a, b = _drive(backend, [RowInput(1, TEXTS[0], SpeechParams(seed=1)), RowInput(2, TEXTS[0], SpeechParams(seed=2))])
    assert a.shape != b.shape or not np.allclose(a, b)


def test_a_clip_is_analysed_once_and_saved_voices_load(model):
    backend = PocketBackend(model, max_batch=4)
    assert backend.voice_names == ["alba"]
    states = backend.prepare(_rows())
    assert len(backend.voices) == 2  # clips 1 and 2; row 4 reused clip 1's state (one visitor: None)
    assert states[1].voice is states[3].voice
    assert states[0].voice is backend.builtin["alba"]
    for s in states:
        backend.release(s)
    assert backend.free_slots == 4


def test_long_text_is_spoken_chunk_after_chunk_in_one_slot(model):
    backend = PocketBackend(model, max_batch=1)
    text = " ".join(f"Sentence number {i} is here." for i in range(12))
    state = backend.prepare([RowInput(1, text, SpeechParams(seed=3))])[0]
    assert len(state.chunks) >= 2
    steps = 0
    while not backend.step([state])[0].done:
        steps += 1
        assert backend.free_slots == 0 or state.row is None
    assert state.next_chunk == len(state.chunks) and backend.free_slots == 1


def test_cancelled_rows_free_their_slots(model):
    backend = PocketBackend(model, max_batch=2)
    states = backend.prepare(_rows()[:2])
    backend.step(states)
    assert backend.free_slots == 0
    for s in states:
        backend.release(s)
        backend.release(s)  # twice is harmless
    assert backend.free_slots == 2
    assert backend.generator.mimi_pool.num_live == 0


@pytest.mark.parametrize("text", ["", "   ", 5])
def test_bad_text_is_a_one_line_error(model, text):
    with pytest.raises(TextError):
        PocketBackend(model, max_batch=1).check_text(text)


def test_voice_state_of_a_clip_is_deterministic(model):
    from tts_app.models.pocket_tts.voice import voice_state

    clip = _clip(3)
    wav = torch.from_numpy(clip.reference_audio)[None]
    a, b = voice_state(model, wav, 16000), voice_state(model, wav, 16000)
    assert a.length == b.length > 1
    assert all(torch.equal(x[0], y[0]) for x, y in zip(a.kv, b.kv))


def test_text_without_sentence_ends_is_cut_to_fit_a_slot(model):
    """Thousands of tokens with no punctuation the official cut could use: cut by count, every chunk fits."""
    from tts_app.backends.pocket_tts import MAX_CHUNK_TOKENS

    backend = PocketBackend(model, max_batch=1)
    chunks = backend.check_text("word " * 1500)
    assert len(chunks) > 1 and all(0 < len(c.ids) <= MAX_CHUNK_TOKENS for c in chunks)
    marks = backend.check_text("." * 3000)
    assert all(len(c.ids) <= MAX_CHUNK_TOKENS for c in marks)


def _endless(model, **kwargs) -> PocketBackend:
    """A backend whose end of speech never comes: every chunk runs to its cap."""
    backend = PocketBackend(model, max_batch=1, **kwargs)
    backend.generator.eos_threshold = float("inf")
    return backend


def test_max_seconds_caps_a_request_across_its_chunks(model):
    """TTS_APP_MAX_SECONDS: the request ends cleanly when its latents over all chunks reach the cap; what it
    spoke is the start of what it would have spoken without the cap (a chunk cut short, the next not begun)."""
    text = "Short one. " * 8 + "Hello there, how are you today? " * 6
    row = RowInput(1, text, SpeechParams(seed=4))
    free = _endless(model)
    chunks = free.check_text(text)
    rate, spl = model.config.mimi.frame_rate, free.samples_per_latent
    first_cap = max_frames(len(chunks[0].ids), rate)
    assert len(chunks) >= 3
    whole = _drive(free, [row])[0]
    assert whole.size == sum(max_frames(len(c.ids), rate) for c in chunks) * spl
    cap = first_cap + 5  # into the second chunk
    capped_backend = _endless(model, max_seconds=cap / rate)
    assert capped_backend.max_latents == cap
    assert capped_backend.audio_estimate_s(chunks) == cap / rate < free.audio_estimate_s(chunks)  # queue ETAs know the cap
    capped = _drive(capped_backend, [row])[0]
    assert capped.size == cap * spl
    # The cut chunk's last window is narrower than the same latents' window uncut: equal to float rounding.
    np.testing.assert_allclose(capped, whole[:capped.size], rtol=0, atol=1e-6)
    assert capped_backend.free_slots == 1 and capped_backend.generator.mimi_pool.num_live == 0


def test_max_seconds_shorter_than_one_latent_still_speaks_one(model):
    out = _drive(_endless(model, max_seconds=1e-6), [RowInput(1, TEXTS[1], SpeechParams(seed=4))])[0]
    assert out.size == PocketBackend(model, max_batch=1).samples_per_latent


def test_a_saved_voice_by_name_speaks_as_its_voice_state(tmp_path):
    """ModelVoice("bob") (what the API sends for the checkpoint's own voice name) speaks exactly as a request
    whose voice state is bob's file, and not as the default voice."""
    from tts_app.backends.model_voice import ModelVoice
    from tts_app.models.pocket_tts.voice import load_voice_file

    ckpt = write_tiny_checkpoint(tmp_path / "ckpt", more_voices=("bob",))
    model = load_pocket(ckpt)
    named = PocketBackend(model, max_batch=1)
    assert named.voice_names == ["alba", "bob"]
    by_name = _drive(named, [RowInput(1, TEXTS[0], SpeechParams(seed=9, voice=ModelVoice("bob")))])[0]
    as_state = PocketBackend(model, max_batch=1)
    as_state.builtin = {"alba": load_voice_file(ckpt / "voices" / "bob.safetensors", model.config.flow_lm.num_layers)}
    np.testing.assert_array_equal(by_name, _drive(as_state, [RowInput(1, TEXTS[0], SpeechParams(seed=9))])[0])
    default = _drive(PocketBackend(model, max_batch=1), [RowInput(1, TEXTS[0], SpeechParams(seed=9))])[0]
    assert default.shape != by_name.shape or not np.array_equal(default, by_name)
    with pytest.raises(TextError, match="no saved voice 'carol'; it has: alba, bob"):
        named.prepare([RowInput(1, TEXTS[0], SpeechParams(voice=ModelVoice("carol")))])


@pytest.mark.parametrize("endless", [False, True])
def test_remaining_audio_counts_what_is_still_to_come(model, endless: bool):
    """Admission counts on a stream's end: the audio still to come is the official guess of the chunks while they
    run short of it, up to each chunk's cap once one runs past it (an endless chunk: never less than what came),
    and 0 at the end."""
    text = "Hello there, how are you today? Short one."
    backend = _endless(model) if endless else PocketBackend(model, max_batch=1)
    (state,) = backend.prepare([RowInput(1, text, SpeechParams(seed=3))])
    chunks = backend.check_text(text)
    rate = model.config.mimi.frame_rate
    assert backend.remaining_audio_s(state) == pytest.approx(backend.audio_estimate_s(chunks), abs=1.5 / rate)
    outs, left = [], []
    while not outs or not outs[-1].done:
        outs.append(backend.step([state])[0])
        left.append(backend.remaining_audio_s(state))
    assert left[-1] == 0.0
    heard = np.cumsum([o.audio.size for o in outs]) / backend.sample_rate
    total = heard[-1]
    if endless:  # the truth is every cap: once the last chunk runs past its guess, the estimate is never below it
        caps = [max_frames(len(c.ids), rate) / rate for c in chunks]
        assert total == pytest.approx(sum(caps))
        past_guess = sum(caps[:-1]) + caps[-1] - 2.0
        late = [(est, h) for est, h in zip(left, heard) if h >= past_guess]
        assert late and all(est >= total - h - 1e-9 for est, h in late)
        assert any(est < total - h for est, h in zip(left, heard))  # before, the guess (end of speech usually comes)
    backend.release(state)


def test_a_clips_voice_state_is_the_visitors_own(model, monkeypatch):
    """Two visitors: B giving the same clip as A gets a state made for B (B cannot use, or time, A's cached one);
    each visitor's states are bounded by its own entries."""
    from tts_app.backends import pocket_tts as pocket

    made = []
    real = pocket.voice_state
    monkeypatch.setattr(pocket, "voice_state", lambda *args: made.append(1) or real(*args))
    backend = PocketBackend(model, max_batch=2)
    for client in ("A", "B", "A"):
        backend.release(backend.prepare([RowInput(1, "Hi.", SpeechParams(seed=1, voice=_clip(1), client=client))])[0])
    assert len(made) == 2 and backend.voices.keys("A") == backend.voices.keys("B") and len(backend.voices) == 2
    for i in range(pocket.VOICE_ENTRIES + 3):  # B's uploads: B's own oldest go, A's stays
        backend.release(backend.prepare([RowInput(1, "Hi.", SpeechParams(seed=1, voice=_clip(10 + i), client="B"))])[0])
    assert len(backend.voices.keys("B")) == pocket.VOICE_ENTRIES and len(backend.voices.keys("A")) == 1
