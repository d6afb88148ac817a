"""SSML and normalisation through the engine on the embedded model: exact breaks, streaming parity, the switch."""

import numpy as np
import pytest

from tts_app.engine import Engine
from tts_app.text import parse_lexicon
from tts_app.backends.params import SpeechParams


@pytest.fixture(scope="module")
def engine(piper_backend):
    e = Engine(piper_backend, max_batch_size=4)
    yield e
    e.close()


def _zero_runs(audio: np.ndarray) -> list[int]:
    """Lengths of runs of exact zeros (inserted silence; the decoder itself never outputs exact 0.0 for long)."""
    z = np.concatenate([[0], (audio == 0.0).astype(np.int8), [0]])
    edges = np.flatnonzero(np.diff(z))
    return sorted((edges[1::2] - edges[::2]).tolist(), reverse=True)


@pytest.mark.parametrize("break_ms", [300, 1250])
def test_break_is_an_exact_silence_and_streaming_equals_whole(engine, piper_backend, break_ms):
    ssml = f'<speak>The first part<break time="{break_ms}ms"/>and the second part.</speak>'
    whole = engine.submit(ssml, SpeechParams(seed=3)).result(timeout=120)
    streamed = np.concatenate(list(engine.submit(ssml, SpeechParams(seed=3))))
    assert streamed.shape == whole.shape and np.array_equal(streamed, whole)
    want = round(break_ms / 1000 * piper_backend.sample_rate)
    hop = piper_backend.model.config.hop_length
    longest = _zero_runs(whole)[0]
    assert want <= longest <= want + hop  # the break, to within one frame of exact-zero decoder edge


def test_normalize_switch_changes_what_is_said(engine):
    text = "Call me at 5:30 pm on 3/14/2026."
    spoken = engine.submit(text).result(timeout=120)
    raw = engine.submit(text, SpeechParams(normalize=False)).result(timeout=120)
    words = engine.submit("Call me at five thirty PM on March fourteenth, twenty twenty six.").result(timeout=120)
    assert spoken.shape == words.shape and np.abs(spoken - words).max() <= 1e-4
    assert raw.shape != spoken.shape


def test_lexicon_through_the_engine(engine):
    lex = parse_lexicon({"tomato": "/təmˈɑːtoʊ/"})
    a = engine.submit("A tomato.", SpeechParams(lexicon=lex)).result(timeout=120)
    b = engine.submit('<speak>A <phoneme alphabet="ipa" ph="təmˈɑːtoʊ">tomato</phoneme>.</speak>').result(timeout=120)
    c = engine.submit("A tomato.").result(timeout=120)
    assert a.shape == b.shape and np.abs(a - b).max() <= 1e-4
    assert a.shape != c.shape


def test_bad_ssml_is_refused_at_submit(engine):
    with pytest.raises(ValueError, match="not well-formed"):
        engine.submit("<speak>Hi <b></speak>")


def test_a_long_pause_comes_as_silence_in_pieces_never_one_array(engine, piper_backend):
    """Issue 32 item 2: a pause was one np.zeros array (214 ten-second breaks at speed 0.25: 8,561 s in one)."""
    from tts_app.backends.piper import SILENCE_PIECE_S  # reason: the backend module is what this test is about

    ssml = '<speak>The first part<break time="10s"/><break time="10s"/>and the second.</speak>'
    chunks = list(engine.submit(ssml, SpeechParams(seed=3, speed=0.5)))  # 20 s of breaks: 40 s of silence at half speed
    whole = np.concatenate(chunks)
    rate = piper_backend.sample_rate
    hop = piper_backend.model.config.hop_length
    assert 40 * rate <= _zero_runs(whole)[0] <= 40 * rate + hop  # the whole pause, exact
    window = piper_backend.window_frames * 4 * hop  # the largest decoder window (grown 4x for a safe listener)
    assert max(c.size for c in chunks) <= window + SILENCE_PIECE_S * rate  # no chunk holds the pause in one array


def test_a_handle_read_with_forget_holds_no_audio_it_has_handed_out(engine):
    """The API's replies read with forget: the handle no longer keeps a float32 copy of all the audio."""
    import asyncio  # reason: only this test drives a handle from an event loop

    handle = engine.submit("A short line to read and let go.", SpeechParams(seed=1))

    async def read() -> int:
        return sum([c.size async for c in handle.astream(forget=True)])

    got = asyncio.run(read())
    assert got > 0 and handle.result(timeout=60).size == 0 and handle.done
