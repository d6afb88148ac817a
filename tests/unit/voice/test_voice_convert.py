"""Voice matching v2: DTW alignment, the class-map fit, the streaming spectral filter, the fallback."""

from __future__ import annotations

import numpy as np
import pytest

from tts_app.voice import make_profile
from tts_app.voice.matching import conversion
from tts_app.voice.analysis import transcript
from tts_app.voice.analysis.bands import N_BANDS
from tts_app.voice.matching.classmap import HOP, N_CEPS, ClassMap, dtw_path, fit_class_map
from tts_app.voice.matching.eq import design_fir
from tts_app.voice.model_voice import model_voice
from tts_app.voice.profile import VoiceProfile, clear_profile_cache
from tts_app.voice.matching.specfilter import SpectralFilterStream

SR = 22050


def run_stream(f: SpectralFilterStream, x: np.ndarray, sizes) -> np.ndarray:
    outs, i, k = [], 0, 0
    while i < len(x):
        outs.append(f.process(x[i : i + sizes[k % len(sizes)]]))
        assert f._n_in - f._n_out <= f.latency_samples  # holds back less than one frame (46 ms)
        i, k = i + sizes[k % len(sizes)], k + 1
    outs.append(f.flush())
    return np.concatenate(outs)


def random_map(seed: int, scale_db: float) -> ClassMap:
    rng = np.random.default_rng(seed)
    return ClassMap(
        centroids=rng.normal(size=(4, N_CEPS)),
        ceps_mean=np.zeros(N_CEPS),
        ceps_std=np.full(N_CEPS, 3.0),
        gains_db=rng.normal(size=(4, N_BANDS)) * scale_db,
        alignment="nearest",
    )


def test_dtw_recovers_a_known_time_warp():
    rng = np.random.default_rng(0)
    x = np.cumsum(rng.normal(size=(120, 5)), axis=0)  # a smooth random trajectory
    warp = np.sort(rng.choice(np.arange(1, 119), size=59, replace=False))  # y frame j = x frame warp[j]
    warp = np.concatenate([[0], warp, [119]])
    path = dtw_path(x, x[warp])
    assert tuple(path[0]) == (0, 0) and tuple(path[-1]) == (119, len(warp) - 1)
    assert np.all(np.diff(path, axis=0) >= 0) and np.all(np.diff(path, axis=0).sum(1) >= 1)  # monotonic steps
    for j, i in enumerate(warp):  # every y frame is paired with its true source frame
        assert i in path[path[:, 1] == j, 0]


def test_filter_with_zero_gains_is_the_identity():
    rng = np.random.default_rng(1)
    x = rng.normal(size=SR) * 0.1
    cmap = random_map(2, 0.0)
    y = run_stream(SpectralFilterStream(cmap, 1.0, 1.0, SR), x, [SR])
    assert len(y) == len(x) and np.max(np.abs(y - x)) < 1e-12


def test_filter_streams_exactly_in_any_chunking():
    x = np.array(model_voice().audio[: 3 * SR], dtype=np.float64)
    cmap = random_map(3, 6.0)
    whole = run_stream(SpectralFilterStream(cmap, 0.7, 1.3, SR), x, [len(x)])
    assert np.max(np.abs(whole - x)) > 1e-3  # it really filters
    for sizes in ([1, 7, 300], [HOP], [4096, 5], [1000, 20000]):
        streamed = run_stream(SpectralFilterStream(cmap, 0.7, 1.3, SR), x, sizes)
        assert len(streamed) == len(x) and np.max(np.abs(streamed - whole)) <= 1e-9


def _tilted(x: np.ndarray, db_per_band: float) -> np.ndarray:
    """x through a linear-phase EQ rising by db_per_band per band above the middle band."""
    gain = np.maximum(0, np.arange(N_BANDS) - N_BANDS // 2) * db_per_band
    fir = design_fir(gain, SR)
    return np.convolve(x, fir, mode="same")


@pytest.mark.parametrize("parallel", [False, True])
def test_fit_learns_a_known_spectral_difference(parallel):
    src = np.array(model_voice().audio[: 6 * SR], dtype=np.float64)
    ref = _tilted(src, 0.5)  # 'reference' = the same words with the top half raised up to ~10 dB
    cmap = fit_class_map(ref, src, SR, n_classes=4, parallel=parallel)
    assert cmap.alignment == ("parallel" if parallel else "nearest")
    assert cmap.gains_db.shape == (4, N_BANDS)
    # Level-neutral gains, but the top bands gain ~9 dB over the bottom ones in every used class.
    lift = cmap.gains_db[:, -4:].mean(axis=1) - cmap.gains_db[:, :8].mean(axis=1)
    assert np.all(lift > 6.0) and np.all(lift < 12.0), lift
    # And applying it moves the model audio's long-term spectrum toward the reference's.
    out = run_stream(SpectralFilterStream(cmap, 1.0, 1.0, SR), src, [len(src)])

    def hi_lo_db(a):
        spec = np.abs(np.fft.rfft(a)) ** 2
        f = np.fft.rfftfreq(len(a), 1 / SR)
        return 10 * np.log10(spec[f > 4000].sum() / spec[(f > 100) & (f < 1000)].sum())

    assert abs(hi_lo_db(out) - hi_lo_db(ref)) < 0.5 * abs(hi_lo_db(src) - hi_lo_db(ref))


def test_typed_text_is_used_and_reported(monkeypatch):
    clear_profile_cache()
    heard = []
    monkeypatch.setattr(transcript, "recognise", lambda *a: heard.append(1) or "never used")
    text = "Printing, in the only sense with which we are at present concerned, differs from most if not from all the arts."
    profile = make_profile(_lj(), text=text)
    assert not heard
    assert profile.transcript_source == "typed" and profile.transcript == text
    assert profile.class_map is not None and profile.class_map.alignment == "parallel"
    assert "Transcript (typed)" in profile.report.summary()


@pytest.mark.parametrize("recognise", [False, True])
def test_fallback_without_a_transcript(monkeypatch, recognise):
    clear_profile_cache()
    monkeypatch.setattr(conversion, "RECOGNISE_TRANSCRIPT", recognise)
    monkeypatch.setattr(transcript, "recognise", lambda *a: "")  # e.g. music or another language
    profile = make_profile(_lj())
    assert profile.transcript_source == "none" and profile.class_map.alignment == "nearest"
    assert "No transcript" in profile.report.summary()
    x = np.array(model_voice().audio[: 2 * SR])
    out = profile.adapt(x, 1.0)
    assert len(out) == len(x) and np.isfinite(out).all() and np.max(np.abs(out - x)) > 1e-3
    clear_profile_cache()


def test_profile_file_round_trip_and_old_files_rebuilt(tmp_path, monkeypatch):
    clear_profile_cache()
    monkeypatch.setattr(transcript, "recognise", lambda *a: "")
    profile = make_profile(_lj())
    path = profile.save(tmp_path / "v.voice.npz")
    loaded = VoiceProfile.load(path)
    assert np.array_equal(loaded.class_map.gains_db, profile.class_map.gains_db)
    assert loaded.transcript_source == "none"
    x = np.array(model_voice().audio[: SR])
    assert np.max(np.abs(loaded.adapt(x) - profile.adapt(x))) < 1e-5
    # An older file (no class map, no conversion version) is rebuilt from its clip, not misread.
    import json

    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files if not k.startswith("classmap_")}
    meta = json.loads(bytes(arrays["meta"]).decode())
    meta.pop("conversion_version")
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    old = tmp_path / "old.voice.npz"
    np.savez(old, **arrays)
    rebuilt = VoiceProfile.load(old)
    assert rebuilt.class_map is not None
    assert np.allclose(rebuilt.class_map.gains_db, profile.class_map.gains_db, atol=1e-3)  # clip saved as 24-bit FLAC
    clear_profile_cache()


def _lj():
    from tts_app.voice.library import BUILTIN_VOICES_DIR

    return next(BUILTIN_VOICES_DIR.glob("lj_female_us.*"))


def test_resolve_voice_with_text_refits_a_named_voice_and_refuses_bad_text():
    from tts_app.voice import VoiceError, resolve_voice

    clear_profile_cache()
    text = "Printing, in the only sense with which we are at present concerned."
    plain = resolve_voice("lj_female_us")
    typed = resolve_voice("lj_female_us", text=text)
    assert typed.transcript == text and typed.transcript_source == "typed"
    assert typed.cache_key != plain.cache_key  # adapter plans are not shared between the two maps
    assert resolve_voice("lj_female_us", text=text) is typed  # cached
    assert resolve_voice(plain, text=None) is plain
    with pytest.raises(VoiceError, match="too long"):
        resolve_voice("lj_female_us", text="word " * 1000)
    clear_profile_cache()
