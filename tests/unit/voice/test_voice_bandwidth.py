"""Band-limited references (a phone call or a low-bitrate file inside a 44.1 kHz file): the limit is
found, reported, and the voice match leaves the bands above it alone instead of cutting them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from scipy.signal import resample_poly, sosfiltfilt, butter

from tts_app.assets import BUILTIN_VOICES_DIR
from tts_app.voice.analysis.bands import band_centers_hz
from tts_app.voice.analysis.ltas import content_cutoff_hz

VOICES = BUILTIN_VOICES_DIR


def sloped_noise(sample_rate: int, seconds: float = 4.0, db_per_octave: float = -9.0) -> np.ndarray:
    """Noise whose spectrum falls smoothly, as a voice's long-term spectrum does."""
    rng = np.random.default_rng(0)
    n = int(seconds * sample_rate)
    spec = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n, 1 / sample_rate)
    spec *= (np.maximum(f, 100.0) / 100.0) ** (db_per_octave / 6.02)
    x = np.fft.irfft(spec, n)
    return (0.3 * x / np.abs(x).max()).astype(np.float32)


def telephone(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """Through an 8 kHz file and back: nothing above 4 kHz."""
    return resample_poly(resample_poly(audio, 8000, sample_rate), sample_rate, 8000).astype(np.float32)


def test_a_smooth_roll_off_is_not_a_band_limit() -> None:
    for rate in (16000, 22050, 44100):
        assert content_cutoff_hz(sloped_noise(rate), rate) == rate / 2


@pytest.mark.parametrize("edge_hz", [4000.0, 5500.0, 8000.0])
def test_a_steep_low_pass_is_found_near_its_edge(edge_hz: float) -> None:
    x = sloped_noise(44100)
    sos = butter(16, edge_hz, fs=44100, output="sos")
    found = content_cutoff_hz(sosfiltfilt(sos, x), 44100)
    assert 0.85 * edge_hz <= found <= 1.1 * edge_hz


def test_real_clips_carry_their_band_and_a_phone_copy_does_not(tmp_path: Path) -> None:
    from tts_app.voice import load_reference

    audio, rate = sf.read(VOICES / "f5_main.flac", dtype="float32")
    full = load_reference(VOICES / "f5_main.flac").report
    assert full.bandwidth_hz >= 10000 and not any("sound only" in w for w in full.warnings)
    sf.write(tmp_path / "call.wav", telephone(audio, rate), rate)
    call = load_reference(tmp_path / "call.wav").report
    assert 3500 <= call.bandwidth_hz <= 4600
    assert any("sound only up to about" in w for w in call.warnings)
    assert "sound only up to about" in call.summary()


def test_the_match_keeps_the_model_highs_above_a_band_limit(tmp_path: Path) -> None:
    """Before: the EQ and the class filters read the empty bands as a voice with no highs and cut
    them (the share of output energy above 4.5 kHz fell from -19 to -41 dB, WER +15 points)."""
    from tts_app.voice import make_profile
    from tts_app.voice import adapt
    from tts_app.voice.model_voice import model_voice

    audio, rate = sf.read(VOICES / "f5_main.flac", dtype="float32")
    sf.write(tmp_path / "call.wav", telephone(audio, rate), rate)
    profile = make_profile(tmp_path / "call.wav")
    above = band_centers_hz() > profile.report.bandwidth_hz
    assert above.any()
    gains = profile.class_map.gains_db
    last = int(np.nonzero(~above)[0].max())
    assert np.array_equal(gains[:, above], np.repeat(gains[:, [last]], above.sum(), axis=1))

    mv = model_voice()
    x = mv.audio[: 6 * mv.sample_rate]
    y = adapt(x, profile, 1.0, mv.sample_rate)

    def high_share_db(a: np.ndarray) -> float:
        power = np.abs(np.fft.rfft(a)) ** 2
        f = np.fft.rfftfreq(len(a), 1 / mv.sample_rate)
        return float(10 * np.log10(power[f > 4500].sum() / power.sum()))

    assert high_share_db(y) > high_share_db(x) - 8.0
