"""Voice profiles: content-hash cache, save/load round trip, the library, resolve_voice."""

from __future__ import annotations


import numpy as np
import pytest
import soundfile as sf

from tts_app.assets import BUILTIN_VOICES_DIR
from tts_app.voice import (
    VoiceError,
    VoiceLibrary,
    VoiceProfile,
    clear_profile_cache,
    default_library,
    make_profile,
    profile_cache_info,
    resolve_voice,
)

VOICES = BUILTIN_VOICES_DIR
BUILTIN = ["f5_main", "f5_ref_en", "lj_female_us", "ov_speaker0", "ov_speaker1_long"]


def voiced_clip(sample_rate: int = 16000, seconds: float = 2.5, f0_hz: float = 180.0) -> np.ndarray:
    """A buzzy vowel with a slow pitch glide: enough for a profile, made in a millisecond."""
    t = np.arange(int(seconds * sample_rate)) / sample_rate
    phase = 2 * np.pi * np.cumsum(f0_hz * (1 + 0.08 * np.sin(2 * np.pi * 1.5 * t))) / sample_rate
    x = sum(np.sin(k * phase) / k for k in range(1, 25))
    return (0.2 * x * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t) ** 2)).astype(np.float32)


@pytest.fixture()
def library(tmp_path) -> VoiceLibrary:
    return VoiceLibrary(directory=tmp_path / "voices")


def test_second_use_is_a_cache_hit(tmp_path):
    clear_profile_cache()
    path = tmp_path / "ref.wav"
    sf.write(path, voiced_clip(), 16000)
    first = make_profile(path)
    for _ in range(49):  # a reference used for 50 lines is analysed once
        again = make_profile(path)
    info = profile_cache_info()
    assert (info.misses, info.hits) == (1, 49)
    assert again.stats is first.stats
    copy = tmp_path / "copy.wav"  # same bytes, other name: still the same analysis
    copy.write_bytes(path.read_bytes())
    assert make_profile(copy).stats is first.stats
    assert profile_cache_info().hits == 50


def test_array_references_are_cached_by_content():
    clear_profile_cache()
    audio = voiced_clip()
    a = make_profile((audio, 16000))
    b = make_profile((audio.copy(), 16000))
    assert b.stats is a.stats and profile_cache_info().hits == 1
    make_profile((audio, 22050))
    assert profile_cache_info().misses == 2


def test_profile_carries_the_processed_reference():
    p = make_profile((voiced_clip(), 16000), name="buzz")
    assert p.name == "buzz" and p.sample_rate == 16000
    assert p.audio.dtype == np.float32 and p.audio.ndim == 1 and p.duration_s <= 30
    assert p.reference_audio is p.audio and p.reference_sample_rate == 16000
    assert 160 < p.stats.f0_median_hz < 200
    assert not p.audio.flags.writeable  # cached profiles are shared between requests


def test_save_load_round_trip(tmp_path):
    p = make_profile(VOICES / "f5_ref_en.wav", name="f5")
    path = p.save(tmp_path / "f5.voice.npz")
    assert path.stat().st_size < 1_000_000
    q = VoiceProfile.load(path)
    assert (q.name, q.sample_rate, q.content_hash, q.analysis_version) == (p.name, p.sample_rate, p.content_hash, p.analysis_version)
    np.testing.assert_allclose(q.audio, p.audio, atol=2e-7)  # 24-bit FLAC inside
    assert q.stats.f0_median_hz == p.stats.f0_median_hz and q.stats.f0_log_std == p.stats.f0_log_std
    np.testing.assert_array_equal(q.stats.ltas_db, p.stats.ltas_db)
    assert q.report == p.report


def test_loading_garbage_is_a_voice_error(tmp_path):
    bad = tmp_path / "bad.voice.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(VoiceError, match="not a readable voice profile"):
        VoiceProfile.load(bad)


def test_library_lists_builtins_and_saved(library):
    assert library.builtin_names() == BUILTIN
    assert library.saved_names() == []
    p = make_profile((voiced_clip(), 16000))
    saved = library.save(p, "my_voice")
    assert saved.name == "my_voice"
    assert library.names() == BUILTIN + ["my_voice"]
    assert "my_voice" in library and "lj_female_us" in library and "nope" not in library
    loaded = library.load("my_voice")
    assert loaded.content_hash == p.content_hash
    hits = profile_cache_info().hits
    assert library.load("my_voice") is loaded  # a saved voice used for many lines is read once
    assert profile_cache_info().hits == hits + 1
    entries = {e.name: e.builtin for e in library.entries()}
    assert entries["my_voice"] is False and entries["f5_main"] is True
    library.delete("my_voice")
    assert library.saved_names() == []


def test_library_refusals(library):
    p = make_profile((voiced_clip(), 16000))
    for bad in ("", "../escape", "a b", "default"):
        with pytest.raises(VoiceError):
            library.save(p, bad)
    with pytest.raises(VoiceError, match="built-in"):
        library.save(p, "lj_female_us")
    library.save(p, "once")
    with pytest.raises(VoiceError, match="already exists"):
        library.save(p, "once", overwrite=False)
    with pytest.raises(VoiceError, match="unknown voice"):
        library.load("missing")
    with pytest.raises(VoiceError, match="built-in"):
        library.delete("f5_main")


def test_builtin_voice_loads_by_name(library):
    p = library.load("lj_female_us")
    assert p.name == "lj_female_us" and 190 < p.stats.f0_median_hz < 240


def test_default_library_follows_env(tmp_path, monkeypatch):
    monkeypatch.setenv("TTS_APP_VOICES_DIR", str(tmp_path / "env_voices"))
    lib = default_library()
    assert lib.directory == tmp_path / "env_voices"
    lib.save(make_profile((voiced_clip(), 16000)), "from_env")
    assert resolve_voice("from_env").name == "from_env"


def test_resolve_voice_accepts_every_form(tmp_path, library):
    audio = voiced_clip()
    path = tmp_path / "clip.wav"
    sf.write(path, audio, 16000)
    assert resolve_voice(None) is None
    assert resolve_voice("default") is None and resolve_voice("") is None
    by_path = resolve_voice(str(path), library=library)
    assert resolve_voice(path, library=library).stats is by_path.stats
    assert resolve_voice((audio, 16000)).sample_rate == 16000
    assert resolve_voice(by_path) is by_path
    assert resolve_voice("f5_main", library=library).name == "f5_main"
    library.save(by_path, "saved_one")
    assert resolve_voice("saved_one", library=library).name == "saved_one"


@pytest.mark.parametrize(
    "voice, message",
    [("no_such_voice", "unknown voice"), ("/no/such/file.wav", "not found"), (42, "cannot use a int")],
)
def test_resolve_voice_refusals(voice, message, library):
    with pytest.raises(VoiceError, match=message):
        resolve_voice(voice, library=library)


def test_an_uploaded_clip_is_analysed_before_generate(tmp_path):
    # The page analyses an upload right after its report (handlers.prepare_voice, a queued event),
    # so the Generate that follows finds the profile built.
    from tts_app.backends.params import SpeechParams
    from tts_app.web.ui.speak.handlers import prepare_voice, resolve_page_params
    from tts_app.web.ui.voices.voice_input import MODE_BUILTIN, MODE_DEFAULT, MODE_UPLOAD

    clip = tmp_path / "upload.wav"
    sf.write(clip, voiced_clip(), 16000)
    clear_profile_cache()
    prepare_voice(MODE_DEFAULT, "lj_female_us", str(clip))  # the model's own voice: nothing to analyse
    prepare_voice(MODE_UPLOAD, None, None)  # no clip yet
    assert profile_cache_info().misses == 0
    prepare_voice(MODE_BUILTIN, "lj_female_us", str(clip))  # a picked built-in voice is prepared too
    assert profile_cache_info().misses == 1
    prepare_voice(MODE_UPLOAD, None, str(clip))
    assert profile_cache_info().misses == 2
    resolve_page_params(SpeechParams(voice=str(clip)))  # what Generate does, with the "What the clip says" box empty
    assert profile_cache_info().misses == 2 and profile_cache_info().hits == 1
    bad = tmp_path / "bad.wav"
    bad.write_bytes(b"not audio")
    prepare_voice(MODE_UPLOAD, None, str(bad))  # no exception: the report says why
