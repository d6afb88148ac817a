"""Turn (target voice statistics, strength) into adapter settings: pitch map, formant ratio, timbre FIR.

The timbre EQ is calibrated: the model-voice clip is run through the pitch and
formant stage, and the EQ is whatever takes that result's long-term spectrum to
the target's. Plans are cached, so this runs once per voice and strength.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from math import gcd

import numpy as np
from scipy.signal import resample_poly

from tts_app.voice.analysis.stats import VoiceStats, joint_normalise
from tts_app.voice.matching.classmap import ClassMap
from tts_app.voice.cache import LruCache
from tts_app.voice.matching.eq import design_fir
from tts_app.voice.analysis.ltas import band_power_db
from tts_app.voice.model_voice import model_voice
from tts_app.voice.matching.psola import PitchMap, PsolaStream
from tts_app.voice.matching.specfilter import SpectralFilterStream

logger = logging.getLogger(__name__)

FORMANT_RATIO_MIN = 0.9
FORMANT_RATIO_MAX = 1.2
RANGE_RATIO_MIN = 0.6
RANGE_RATIO_MAX = 1.0  # widening the model's intonation cost intelligibility and similarity
TARGET_F0_MAX_HZ = 290.0  # higher references are matched up to here: beyond, words blur
EQ_LIMIT_DB = 18.0
BOOST_FLOOR_DB = 30.0  # bands this far under the voiced mean level get no boost
# Vocal-tract length scales with F0 across speakers only weakly: ~ (F0 ratio)^0.22, centred
# slightly above 1 because the model's voice is darker than most.
_FORMANT_F0_EXPONENT = 0.22
_FORMANT_BIAS = 1.05


@dataclass(frozen=True)
class AdaptPlan:
    """Settings of one adaptation, all already scaled by strength."""

    pitch_map: PitchMap
    formant_ratio: float
    fir_voiced: np.ndarray  # timbre EQ taps for the voiced grains (linear phase, odd length)
    fir_unvoiced: np.ndarray  # and for the unvoiced ones (same length: same delay)
    sample_rate: int
    class_map: ClassMap | None = None  # per-sound-class filter learnt from the reference
    class_scale: float = 0.0  # strength: multiplies the class map's gains (dB)
    class_gain: float = 1.0  # linear gain after the class filter: keeps the model's loudness


def formant_ratio_for(target: VoiceStats, source: VoiceStats) -> float:
    """Full-strength formant scale from the F0 ratio (1.0 when either voice has no pitch)."""
    if target.f0_median_hz <= 0 or source.f0_median_hz <= 0:
        return 1.0
    ratio = _FORMANT_BIAS * (target.f0_median_hz / source.f0_median_hz) ** _FORMANT_F0_EXPONENT
    return float(np.clip(ratio, FORMANT_RATIO_MIN, FORMANT_RATIO_MAX))


def pitch_map_for(target: VoiceStats, source: VoiceStats, strength: float) -> PitchMap:
    if target.f0_median_hz <= 0 or source.f0_median_hz <= 0:
        return PitchMap()
    shift = math.log(min(target.f0_median_hz, TARGET_F0_MAX_HZ) / source.f0_median_hz)
    range_ratio = target.f0_log_std / source.f0_log_std if source.f0_log_std > 0 else 1.0
    range_ratio = float(np.clip(range_ratio, RANGE_RATIO_MIN, RANGE_RATIO_MAX))
    return PitchMap(shift=strength * shift, slope=strength * (range_ratio - 1.0), pivot=math.log(source.f0_median_hz))


def make_plan(target: VoiceStats, strength: float, sample_rate: int, class_map: ClassMap | None = None) -> AdaptPlan:
    """Build (uncached) the plan for one target voice at one strength and output rate."""
    source = model_voice()
    pitch_map = pitch_map_for(target, source.stats, strength)
    formant_ratio = formant_ratio_for(target, source.stats) ** strength
    calib = _resample(source.audio, source.sample_rate, sample_rate)
    voiced, unvoiced = _shifted_calibration(pitch_map, formant_ratio, sample_rate)
    shifted_db = joint_normalise(band_power_db(voiced, sample_rate), band_power_db(unvoiced, sample_rate))

    # Aim at a blend of the two spectra so that strength scales timbre as it does pitch.
    src = source.stats
    # Bands the reference does not carry (a telephone clip above ~4 kHz) keep the model's own shape
    # there, so their gain holds the last known band's: no made-up boost or cut above the band limit.
    target_v = _fill_like(target.ltas_voiced_db, _fill_nan(shifted_db[0], src.ltas_voiced_db))
    target_u = _fill_like(target.ltas_unvoiced_db, _fill_nan(shifted_db[1], target_v))
    wanted_v = strength * target_v + (1 - strength) * src.ltas_voiced_db
    wanted_u = strength * target_u + (1 - strength) * src.ltas_unvoiced_db
    gain_v = _smooth(wanted_v - _fill_nan(shifted_db[0], wanted_v))
    gain_u = _smooth(wanted_u - _fill_nan(shifted_db[1], wanted_u))
    offset = float(np.mean(gain_v))  # one offset for both keeps the vowel/fricative balance
    gain_v = np.clip(gain_v - offset, -EQ_LIMIT_DB, _boost_room(shifted_db[0]))
    gain_u = np.clip(gain_u - offset, -EQ_LIMIT_DB, _boost_room(shifted_db[1]))
    fir_v, fir_u = design_fir(gain_v, sample_rate), design_fir(gain_u, sample_rate)
    # Keep the model's loudness: scale so the calibration clip comes out at its own RMS.
    out = np.convolve(voiced, fir_v, mode="same") + np.convolve(unvoiced, fir_u, mode="same")
    out_rms, in_rms = float(np.sqrt(np.mean(out**2))), float(np.sqrt(np.mean(calib**2)))
    scale = in_rms / out_rms if out_rms > 0 else 1.0
    logger.debug(
        "plan: strength %.2f, pitch shift %.3f slope %.3f, formant %.3f, eq voiced %.1f..%.1f dB",
        strength, pitch_map.shift, pitch_map.slope, formant_ratio, gain_v.min(), gain_v.max(),
    )
    class_gain = 1.0
    if class_map is not None:
        spec = SpectralFilterStream(class_map, strength, 1.0, sample_rate)
        filtered = np.concatenate([spec.process(out * scale), spec.flush()])
        f_rms = float(np.sqrt(np.mean(filtered**2)))
        class_gain = in_rms / f_rms if f_rms > 0 else 1.0
    return AdaptPlan(
        pitch_map=pitch_map,
        formant_ratio=formant_ratio,
        fir_voiced=fir_v * scale,
        fir_unvoiced=fir_u * scale,
        sample_rate=sample_rate,
        class_map=class_map,
        class_scale=strength if class_map is not None else 0.0,
        class_gain=class_gain,
    )


_SHIFTED: LruCache[np.ndarray] = LruCache(maxsize=8)


def _shifted_calibration(pitch_map: PitchMap, formant_ratio: float, sample_rate: int) -> np.ndarray:
    """[2, T] voiced and unvoiced grains of the model-voice clip through the pitch/formant stage.

    Cached: a profile's class-map fit and its first plan both need the strength-1 result (the
    stage is most of a plan's cost: ~0.2 s for the 13 s clip).
    """
    source = model_voice()

    def run() -> np.ndarray:
        calib = _resample(source.audio, source.sample_rate, sample_rate)
        stream = PsolaStream(pitch_map, formant_ratio, sample_rate)
        shifted = np.concatenate([stream.process(calib), stream.flush()], axis=1)
        shifted.flags.writeable = False
        return shifted

    key = (id(source), pitch_map.shift, pitch_map.slope, pitch_map.pivot, float(formant_ratio), int(sample_rate))
    return _SHIFTED.get_or_create(key, run)


def _boost_room(level_db: np.ndarray) -> np.ndarray:
    """Most boost per band: EQ_LIMIT_DB, less where the shifted model voice has little energy
    (its top octave), since lifting a near-empty band only raises vocoder noise."""
    floor_db = np.nan_to_num(level_db, nan=-100.0) + BOOST_FLOOR_DB
    return np.clip(floor_db, 0.0, EQ_LIMIT_DB)


def _smooth(gain_db: np.ndarray) -> np.ndarray:
    return np.convolve(np.pad(gain_db, 1, mode="edge"), [0.25, 0.5, 0.25], mode="valid")


_PLANS: LruCache[AdaptPlan] = LruCache(maxsize=64)


def cached_plan(
    key: str, target: VoiceStats, strength: float, sample_rate: int, class_map: ClassMap | None = None
) -> AdaptPlan:
    """make_plan cached by ``key`` (identifies the target voice and its class map), strength and rate."""
    strength = round(float(strength), 4)
    return _PLANS.get_or_create(
        (key, strength, int(sample_rate)), lambda: make_plan(target, strength, sample_rate, class_map)
    )


def _fill_nan(values_db: np.ndarray, fallback_db: np.ndarray) -> np.ndarray:
    """Replace NaN bands (no bandwidth) by holding the last valid band, or by the fallback if none."""
    if np.all(np.isnan(values_db)):
        return np.asarray(fallback_db, dtype=np.float64).copy()
    return _fill_like(values_db, np.zeros(len(values_db)))


def _fill_like(values_db: np.ndarray, shape_db: np.ndarray) -> np.ndarray:
    """Replace NaN bands by ``shape_db`` shifted to meet the nearest valid band (all NaN: ``shape_db``)."""
    values_db, shape_db = np.asarray(values_db, dtype=np.float64), np.asarray(shape_db, dtype=np.float64)
    valid = ~np.isnan(values_db)
    if not valid.any():
        return shape_db.copy()
    idx = np.arange(len(values_db))
    offset = np.interp(idx, idx[valid], values_db[valid] - shape_db[valid])  # held flat past the ends
    return np.where(valid, values_db, shape_db + offset)


def _resample(audio: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    if rate_in == rate_out:
        return np.asarray(audio, dtype=np.float64)
    g = gcd(rate_in, rate_out)
    return resample_poly(np.asarray(audio, dtype=np.float64), rate_out // g, rate_in // g)
