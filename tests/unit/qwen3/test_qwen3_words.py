"""Qwen3-TTS gives no word timings of its own: the engine's words for it come from aligning its audio.

The tiny checkpoint's random weights make noise, not speech, which no aligner can place: its
words are shared out by length (``"even"``) and only their structure is checked. To check the
aligned path through the engine, the same backend plays the embedded voice's speech in place
of its codec's output (accuracy on real speech: tests/unit/align/test_align.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import resample_poly

from tts_app.models.qwen3.streaming import CodecWindows

from tests.support.qwen3_tiny import CharTokenizer
from tts_app.backends.qwen3 import Qwen3Backend
from tts_app.captions.subtitles import as_json, to_srt
from tts_app.engine import Engine
from tts_app.models.qwen3.codec import CodecDecoder
from tts_app.models.qwen3.sampling import SamplingParams
from tests.support.qwen3_talker import tiny_talker
from tts_app.text.words import written_words
from tts_app.backends.params import SpeechParams

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

FRAMES = 400  # 24 samples a frame at 24 kHz: 0.4 s of audio
SPEECH_FRAME = 1920  # samples a frame when the codec's place is taken by real speech (the real codec's 80 ms)


def _engine(frames: int = FRAMES, frames_per_step: int = 100) -> Engine:
    cfg, codec_cfg, talker = tiny_talker(seed=1)
    sampling = SamplingParams(min_new_tokens=frames, max_new_tokens=frames)
    backend = Qwen3Backend(cfg, talker, CodecDecoder(codec_cfg).eval(), CharTokenizer(), sampling=sampling,
                           max_seq_len=frames + 200, frames_per_step=frames_per_step)
    return Engine(backend, max_batch_size=2)


def _speak(engine: Engine, text: str) -> tuple[np.ndarray, list]:
    handle = engine.submit(text, SpeechParams(seed=3))
    audio = np.concatenate([c.audio for c in handle.chunks()])
    return audio, handle.words


def _check_structure(words, text: str, audio_s: float) -> None:
    assert [w.word for w in words] == written_words(text)  # one per input word
    starts = [w.start for w in words]
    assert starts == sorted(starts) and all(a.end <= b.start + 1e-9 for a, b in zip(words, words[1:]))
    assert starts[0] >= 0 and words[-1].end <= audio_s + 0.011  # PocketSphinx's last frame may round up 10 ms
    assert to_srt(words).count("-->") >= 1


@pytest.mark.parametrize("text", ["Hello there, general.", "Rice is often served in round bowls; 5 of them!"])
def test_qwen3_noise_gets_a_word_each_marked_even(text: str) -> None:
    engine = _engine()
    try:
        audio, words = _speak(engine, text)
    finally:
        engine.close()
    assert audio.size == FRAMES * 24
    _check_structure(words, text, audio.size / engine.sample_rate)
    assert [w["source"] for w in as_json(words)] == ["even"] * len(words)


def test_qwen3_speech_is_aligned_clause_by_clause_through_the_engine(piper_backend, monkeypatch) -> None:
    text = "The birch canoe slid on the smooth planks, and glue the sheet to the dark blue background."
    piper = Engine(piper_backend, max_batch_size=1)
    try:
        handle = piper.submit(text, SpeechParams(seed=0))
        speech = resample_poly(handle.result(timeout=300), 24000 // 50, piper.sample_rate // 50).astype(np.float32)
        model_words = handle.words
    finally:
        piper.close()
    played = [0]

    def play_speech(windows, codes, new_frames):  # the codec's place: the next frames of real speech
        out = []
        for n in new_frames:
            out.append(speech[played[0] : played[0] + n * SPEECH_FRAME])
            played[0] += n * SPEECH_FRAME
        return out

    monkeypatch.setattr(CodecWindows, "decode", play_speech)
    engine = _engine(-(-speech.size // SPEECH_FRAME), frames_per_step=4)
    try:
        handle = engine.submit(text, SpeechParams(seed=3))
        chunks = list(handle.chunks())
        words = handle.words
    finally:
        engine.close()
    _check_structure(words, text, speech.size / 24000)
    assert all(w.source == "aligned" for w in words)
    errors = np.abs([w.start - m.start for w, m in zip(words, model_words)])
    assert errors.mean() <= 0.06, errors
    first_with_words = next(i for i, c in enumerate(chunks) if c.words)
    assert first_with_words < len(chunks) - 1 and chunks[first_with_words].words[-1].word == "planks,"


def test_alignment_can_be_turned_off(monkeypatch) -> None:
    monkeypatch.setenv("TTS_APP_ALIGN_WORDS", "0")
    engine = _engine()
    try:
        handle = engine.submit("Hello there.", SpeechParams(seed=3))
        handle.result(timeout=300)
        assert handle.words == []
    finally:
        engine.close()


def test_qwen3_captions_over_http(tmp_path) -> None:
    """``python app.py`` with a tiny checkpoint: /v1/audio/speech/captioned gives Qwen3 a word per input word,
    each with its source, and SRT cues; the embedded voice's words say they are the model's own."""
    import httpx
    from tests.support.app_server import serve_app

    from tests.support.qwen3_tiny import write_checkpoint
    from tests.support.qwen3_tiny import tiny_backend as _backend

    pytest.importorskip("safetensors.torch", reason="safetensors not installed (requirements-gpu.txt)")
    (tmp_path / "ckpt").mkdir()
    write_checkpoint(_backend(), tmp_path / "ckpt")
    env = {"TTS_APP_QWEN3_PATH": str(tmp_path / "ckpt"), "TTS_APP_QWEN3_MAX_SECONDS": "1",
           "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}
    text = "Hello there, general Kenobi."
    with serve_app(tmp_path / "app.log", env, ready=True) as (base, _process), httpx.Client(base_url=base, timeout=600) as http:
        r = http.post("/v1/audio/speech/captioned", json={"model": "qwen3-local", "input": text})
        assert r.status_code == 200, r.text
        body = r.json()
        words = body["words"]
        assert body["sample_rate"] == 24000  # Qwen3's, not the embedded voice's 22050
        assert [w["word"] for w in words] == written_words(text)
        assert {w["source"] for w in words} <= {"aligned", "even"}
        starts = [w["start"] for w in words]
        assert starts == sorted(starts) and all(w["start"] <= w["end"] for w in words)
        r = http.post("/v1/audio/speech/captioned", json={"model": "qwen3-local", "input": text, "response_format": "srt"})
        assert r.status_code == 200 and "-->" in r.text and "Kenobi." in r.text
        r = http.post("/v1/audio/speech/captioned", json={"input": "Hello there."})
        assert r.status_code == 200 and {w["source"] for w in r.json()["words"]} == {"model"}
