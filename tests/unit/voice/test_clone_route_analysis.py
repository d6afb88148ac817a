"""A clip sent to a model that clones (issue 47, item 6) is checked and cleaned as every clip is, but never goes
through the voice-matching analysis that only the embedded voice's filter uses (pitch and spectral statistics, the
class map and its recogniser): counted by spies on those two builders, through the engine with tiny random Pocket TTS
weights. Bad clips (silent, 0.3 s, 10 minutes, not audio) get the filter route's one-line reasons; 8 kHz, stereo and
clipped ones its report and warnings. The page's early analysis (``prepare_voice``) follows the Model picked."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tests.unit.voice.test_voice_ingest import speech_like
from tts_app.backends.params import SpeechParams
from tts_app.engine.input_processing import resolve_params
from tts_app.voice import ClipVoice, VoiceError, VoiceProfile, clear_profile_cache, load_reference
from tts_app.voice import profile as profile_module


class _Counted:
    """A spy: calls the real function and counts the calls."""

    def __init__(self, real) -> None:
        self.real, self.calls = real, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.real(*args, **kwargs)


class _Route:
    """What resolve_params reads of a backend: does a clip drive its filter."""

    def __init__(self, voice_filter: bool) -> None:
        self.voice_filter = voice_filter


CLONES, FILTER = _Route(False), _Route(True)


@pytest.fixture
def spies(monkeypatch: pytest.MonkeyPatch) -> dict[str, _Counted]:
    clear_profile_cache()  # a clip analysed by another test would not be analysed again: no call to count
    found = {name: _Counted(getattr(profile_module, name)) for name in ("analyze", "build_class_map")}
    for name, spy in found.items():
        monkeypatch.setattr(profile_module, name, spy)
    return found


def _clip(path: Path, seed: int = 0, rate: int = 16000, seconds: float = 3.0, channels: int = 1) -> Path:
    audio = speech_like(rate, seconds, seed=seed)
    sf.write(path, np.stack([audio] * channels, axis=1) if channels > 1 else audio, rate)
    return path


def test_a_clip_for_a_cloning_model_is_cloned_without_the_matching_analysis(tmp_path, spies) -> None:
    from tests.support.pocket_tts_tiny import write_tiny_checkpoint
    from tts_app.backends.piper import PiperBackend
    from tts_app.backends.pocket_tts import PocketBackend
    from tts_app.engine import Engine
    from tts_app.models.pocket_tts.weights import load_pocket

    assert PocketBackend.voice_filter is False and PiperBackend.voice_filter is True
    backend = PocketBackend(load_pocket(write_tiny_checkpoint(tmp_path / "ckpt")), max_batch=4, max_seconds=2)
    engine = Engine(backend=backend, max_batch_size=4)
    clip = _clip(tmp_path / "new.wav")
    try:
        params = resolve_params(SpeechParams(seed=1, voice=str(clip), voice_text="what it says", client="a"), engine.backend)
        audio = engine.submit("Hello there.", params).result(timeout=300)
    finally:
        engine.close()
    assert isinstance(params.voice, ClipVoice) and params.voice.report == load_reference(clip).report
    assert audio.size > 0 and np.isfinite(audio).all()
    assert len(backend.voices.keys("a")) == 1  # its voice state: computed from the clip, kept for this visitor
    assert {name: spy.calls for name, spy in spies.items()} == {"analyze": 0, "build_class_map": 0}
    # The same clip for the filter: analysed (the spies count), once, and its ClipVoice upgraded in place.
    matched = resolve_params(SpeechParams(voice=str(clip)), FILTER)
    assert isinstance(matched.voice, VoiceProfile) and spies["analyze"].calls == 1
    assert isinstance(resolve_params(params, FILTER).voice, VoiceProfile)
    assert resolve_params(params, CLONES) is params  # resolved for a cloning model: as it is


def test_a_built_in_voice_for_a_cloning_model_is_not_analysed(spies) -> None:
    params = resolve_params(SpeechParams(voice="lj_female_us"), CLONES)
    assert isinstance(params.voice, ClipVoice) and params.voice.name == "lj_female_us"
    assert spies["analyze"].calls == 0 and spies["build_class_map"].calls == 0


def _silent(path: Path) -> Path:
    sf.write(path, np.zeros(16000 * 3, np.float32), 16000)
    return path


def _too_long(path: Path) -> Path:
    with sf.SoundFile(path, "w", samplerate=8000, channels=1, subtype="PCM_16") as f:
        for _ in range(11):
            f.write(np.zeros(8000 * 60, np.int16))
    return path


def _not_audio(path: Path) -> Path:
    path.write_bytes(np.random.default_rng(0).bytes(10_000))
    return path


@pytest.mark.parametrize(
    "make, reason",
    [
        (_silent, "is silent"),
        (lambda p: _clip(p, seconds=0.3), r"only 0\.\d s of speech; at least 1 s is needed"),
        (_too_long, r"11\.0 minutes long; the limit is 10 minutes"),
        (_not_audio, "not a readable audio file"),
    ],
    ids=["silent", "0.3 s", "11 minutes", "not audio"],
)
def test_a_bad_clip_gets_the_filter_routes_one_line_reason(tmp_path, spies, make, reason) -> None:
    path = make(tmp_path / "bad.wav")
    with pytest.raises(VoiceError, match=reason) as cloned:
        resolve_params(SpeechParams(voice=str(path)), CLONES)
    with pytest.raises(VoiceError) as matched:
        resolve_params(SpeechParams(voice=str(path)), FILTER)
    assert str(cloned.value) == str(matched.value) and "\n" not in str(cloned.value)


@pytest.mark.parametrize(
    "make, warning",
    [
        (lambda p: _clip(p, rate=8000), "sound only up to"),
        (lambda p: _clip(p, channels=2), None),
        (lambda p: (sf.write(p, np.clip(speech_like(16000, 3.0) * 8, -1, 1), 16000), p)[1], "the recording clips"),
    ],
    ids=["8 kHz", "stereo", "clipped"],
)
def test_a_poor_clip_is_cloned_with_the_filter_routes_report(tmp_path, spies, make, warning) -> None:
    path = make(tmp_path / "poor.wav")
    voice = resolve_params(SpeechParams(voice=str(path)), CLONES).voice
    assert isinstance(voice, ClipVoice) and voice.report == load_reference(path).report
    assert warning is None or any(warning in w for w in voice.report.warnings), voice.report.warnings
    assert spies["analyze"].calls == 0


@pytest.mark.parametrize("model", ["no-such-model", "pocket-tts", "", None, 12345, "x" * 10_000])
def test_the_pages_early_analysis_follows_the_model(tmp_path, spies, model) -> None:
    """A model that clones, or one not loaded, or junk: no filter analysis ahead of Generate, and no error."""
    from tts_app.web.ui.speak.handlers import prepare_voice
    from tts_app.web.ui.voices.voice_input import MODE_UPLOAD

    clip = _clip(tmp_path / "upload.wav", seed=4)
    prepare_voice(MODE_UPLOAD, None, str(clip), None, model)
    assert spies["analyze"].calls == (1 if not model or not isinstance(model, str) else 0)
