"""Voice statistics of a clip: F0 level and range, vocal-tract (formant) scale, timbre (LTAS)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from math import gcd

import numpy as np
from scipy.signal import resample_poly

from tts_app.voice.analysis.ltas import band_power_db, content_cutoff_hz, shape_db
from tts_app.voice.analysis.pitch import PitchConfig, smooth_track, yin_frames

ANALYSIS_RATE = 22050
ANALYSIS_VERSION = 3  # bump when analyze() changes: saved profiles are then re-analysed on load
_MIN_VOICED_FRAMES = 40  # ~0.2 s of voicing for F0 statistics to mean anything


@dataclass(frozen=True)
class VoiceStats:
    """What the adapter needs to know about one voice (units in the names)."""

    f0_median_hz: float
    f0_log_std: float  # robust std of natural-log F0: the pitch range
    voiced_fraction: float
    ltas_db: np.ndarray  # (N_BANDS,) long-term spectrum, NaN where the clip has no bandwidth
    # Voiced and unvoiced frames apart, one shared offset (voiced bands mean 0 dB), so the
    # balance of vowels against fricatives is kept.
    ltas_voiced_db: np.ndarray
    ltas_unvoiced_db: np.ndarray

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {
            "f0_median_hz": np.float64(self.f0_median_hz),
            "f0_log_std": np.float64(self.f0_log_std),
            "voiced_fraction": np.float64(self.voiced_fraction),
            "ltas_db": np.asarray(self.ltas_db, dtype=np.float64),
            "ltas_voiced_db": np.asarray(self.ltas_voiced_db, dtype=np.float64),
            "ltas_unvoiced_db": np.asarray(self.ltas_unvoiced_db, dtype=np.float64),
        }

    @classmethod
    def from_arrays(cls, data: dict[str, np.ndarray]) -> "VoiceStats":
        return cls(
            f0_median_hz=float(data["f0_median_hz"]),
            f0_log_std=float(data["f0_log_std"]),
            voiced_fraction=float(data["voiced_fraction"]),
            ltas_db=np.asarray(data["ltas_db"], dtype=np.float64),
            ltas_voiced_db=np.asarray(data["ltas_voiced_db"], dtype=np.float64),
            ltas_unvoiced_db=np.asarray(data["ltas_unvoiced_db"], dtype=np.float64),
        )


def to_analysis_rate(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """Resample to the rate the model voice is analysed at, so statistics compare directly."""
    x = np.asarray(audio, dtype=np.float64).reshape(-1)
    if sample_rate == ANALYSIS_RATE:
        return x
    g = gcd(ANALYSIS_RATE, int(sample_rate))
    return resample_poly(x, ANALYSIS_RATE // g, int(sample_rate) // g)


def f0_track_hz(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """Smoothed F0 per 5 ms frame (0 = unvoiced) of a whole clip."""
    cfg = PitchConfig(sample_rate)
    x = np.concatenate([np.zeros(cfg.left), np.asarray(audio, dtype=np.float64), np.zeros(cfg.right)])
    centers = np.arange(0, len(audio), cfg.hop) + cfg.left
    return smooth_track(yin_frames(x, centers, cfg).f0_hz)


def analyze(audio: np.ndarray, sample_rate: int, recording: bool = True, cutoff_hz: float | None = None) -> VoiceStats:
    """Statistics of a normalised clip: a recording (ingest.load_reference output; its steady
    background noise is left out of the spectra) or, with ``recording=False``, the model's audio.
    ``cutoff_hz``: the clip's band limit when already measured (its report's bandwidth_hz)."""
    x22 = to_analysis_rate(audio, sample_rate)
    f0 = f0_track_hz(x22, ANALYSIS_RATE)
    voiced = f0[f0 > 0]
    if len(voiced) >= _MIN_VOICED_FRAMES:
        log_f0 = np.log(voiced)
        median = float(np.median(log_f0))
        # MAD is robust to the octave errors a pitch tracker makes on real recordings.
        log_std = float(1.4826 * np.median(np.abs(log_f0 - median)))
        f0_median = math.exp(median)
    else:
        f0_median, log_std = 0.0, 0.0
    if not cutoff_hz:  # a telephone clip in a 44.1 kHz file: ~4 kHz
        cutoff_hz = content_cutoff_hz(audio, sample_rate)
    return VoiceStats(
        f0_median_hz=f0_median,
        f0_log_std=log_std,
        voiced_fraction=float(np.mean(f0 > 0)) if len(f0) else 0.0,
        ltas_db=shape_db(band_power_db(audio, sample_rate, cutoff_hz=cutoff_hz, denoise=recording)),
        **dict(zip(("ltas_voiced_db", "ltas_unvoiced_db"), split_ltas_db(audio, sample_rate, f0, cutoff_hz, recording))),
    )


def split_ltas_db(
    audio: np.ndarray, sample_rate: int, f0_hz: np.ndarray, cutoff_hz: float | None = None, denoise: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Voiced and unvoiced LTAS of a clip given its F0 track (analysis-rate frames), jointly normalised;
    bands above ``cutoff_hz`` (the clip's band limit) are NaN; ``denoise``: see ltas.band_power_db."""
    hop_s = PitchConfig(ANALYSIS_RATE).hop / ANALYSIS_RATE
    frame = np.minimum((np.arange(len(audio)) / sample_rate / hop_s).round().astype(np.int64), len(f0_hz) - 1)
    voiced_mask = f0_hz[frame] > 0 if len(f0_hz) else np.zeros(len(audio), dtype=bool)
    voiced = band_power_db(audio, sample_rate, voiced_mask, cutoff_hz, denoise)
    unvoiced = band_power_db(audio, sample_rate, ~voiced_mask, cutoff_hz, denoise)
    return joint_normalise(voiced, unvoiced)


def joint_normalise(voiced_db: np.ndarray, unvoiced_db: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Shift both by the voiced mean (or the unvoiced one when there is no voicing)."""
    ref = voiced_db if not np.all(np.isnan(voiced_db)) else unvoiced_db
    offset = np.nanmean(ref) if not np.all(np.isnan(ref)) else 0.0
    return voiced_db - offset, unvoiced_db - offset
