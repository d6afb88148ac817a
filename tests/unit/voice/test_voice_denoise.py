"""A reference recorded over steady noise: the noise is left out of the voice's spectra (denoise.py),
so the long-term spectrum and the class filters describe the voice, not the hiss."""

from __future__ import annotations


import numpy as np
import pytest

from tts_app.assets import BUILTIN_VOICES_DIR
from tts_app.voice.matching import classmap
from tts_app.voice.analysis.stats import ANALYSIS_RATE, to_analysis_rate
from tts_app.voice.analysis.denoise import KEEP_FRACTION, denoised, noise_floor, subtract_noise
from tts_app.voice.analysis.ltas import band_power_db, shape_db

VOICES = BUILTIN_VOICES_DIR


def test_the_floor_is_the_steady_part_and_subtraction_leaves_no_holes() -> None:
    rng = np.random.default_rng(0)
    noise_TxF = rng.exponential(1.0, (400, 64))  # steady noise of mean power 1
    speech_TxF = noise_TxF.copy()
    speech_TxF[::3] += 100.0  # a "voice" in a third of the frames
    floor_F = noise_floor(speech_TxF)
    assert np.all((floor_F > 0.5) & (floor_F < 1.5))  # about the noise's mean power, none of the voice
    clean = subtract_noise(speech_TxF, floor_F)
    assert np.all(clean >= KEEP_FRACTION * speech_TxF - 1e-12)
    assert np.allclose(clean[::3], speech_TxF[::3] - floor_F, rtol=1e-12)
    assert np.array_equal(denoised(speech_TxF[:5]), speech_TxF[:5])  # too few frames: left alone


@pytest.fixture(scope="module")
def clean_and_noisy() -> tuple[np.ndarray, np.ndarray]:
    from tts_app.voice import load_reference

    ref = load_reference(VOICES / "f5_main.flac")
    x = to_analysis_rate(ref.audio, ref.sample_rate)
    loud = np.abs(x) > 0.01
    rms = float(np.sqrt(np.mean(x[loud] ** 2)))
    noise = np.random.default_rng(1).standard_normal(len(x)) * rms * 10 ** (-15 / 20)  # 15 dB under the voice
    return x, x + noise


def test_the_long_term_spectrum_of_a_noisy_clip_comes_back_toward_the_clean_one(clean_and_noisy) -> None:
    clean, noisy = clean_and_noisy
    def ltas_db(clip: np.ndarray, denoise: bool) -> np.ndarray:
        return shape_db(band_power_db(clip, ANALYSIS_RATE, denoise=denoise))

    target = ltas_db(clean, True)
    kept = float(np.mean(np.abs(ltas_db(noisy, False) - target)))
    taken_out = float(np.mean(np.abs(ltas_db(noisy, True) - target)))
    assert taken_out < 0.6 * kept


def test_the_class_filters_of_a_noisy_clip_come_back_toward_the_clean_ones(clean_and_noisy, monkeypatch) -> None:
    from tts_app.voice.model_voice import model_voice

    clean, noisy = clean_and_noisy
    mv = model_voice()
    model_side = to_analysis_rate(mv.audio, mv.sample_rate)

    def mean_filter_db(reference: np.ndarray) -> np.ndarray:
        cmap = classmap.fit_class_map(reference, model_side, ANALYSIS_RATE)
        return cmap.gains_db.mean(axis=0)  # [N_BANDS]: what the classes do on average

    target = mean_filter_db(clean)
    taken_out = float(np.mean(np.abs(mean_filter_db(noisy) - target)))
    monkeypatch.setattr(classmap, "denoised", lambda power: power)
    kept = float(np.mean(np.abs(mean_filter_db(noisy) - target)))
    assert taken_out < 0.85 * kept
