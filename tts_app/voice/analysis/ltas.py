"""Long-term average spectrum (LTAS) on the fixed band grid: the timbre statistic of a voice."""

from __future__ import annotations

import numpy as np

from tts_app.voice.analysis.bands import N_BANDS, band_centers_hz, band_matrix
from tts_app.voice.analysis.denoise import noise_floor, subtract_noise

_FRAME_S = 0.046
_HOP_S = 0.0116
_ACTIVE_RANGE_DB = 40.0  # frames this far under the loudest are pauses, left out
_BLOCK = 512  # frames per FFT batch: bounds memory for 30 s clips


# A drop this deep that never comes back is a band limit, not a voice's roll-off: on the shared clips
# a voice's own spectrum dropped at most 18 dB this way, the same clips through an 8, 11 or 16 kHz
# file at least 28 dB (docs/benchmarks-log.md); the threshold sits between the two.
_CLIFF_DB = 24.0
_CLIFF_SPAN_HZ = (1000.0, 200.0)  # the level below a candidate edge: this far to this near
_CLIFF_FROM_HZ = 2000.0  # no band limit is looked for below this (telephone audio keeps 3.4 kHz)
_KNEE_DB = 6.0  # the edge is where the level is last within this of the level below the cliff


def band_power_db(
    audio: np.ndarray,
    sample_rate: int,
    sample_mask: np.ndarray | None = None,
    cutoff_hz: float | None = None,
    denoise: bool = False,
) -> np.ndarray:
    """Mean power spectrum of the active frames in dB per band (absolute level).

    With ``sample_mask`` (one bool per sample), only frames mostly inside the mask count.
    Bands the clip cannot represent (above 0.95 x its Nyquist, or above ``cutoff_hz``: see
    ``content_cutoff_hz``) and empty selections are NaN. ``denoise``: a recording's steady
    background noise is taken out first (denoise.py); the model's output has none.
    """
    spectrum = _mean_power_spectrum(audio, sample_rate, sample_mask, denoise)
    if spectrum is None:
        return np.full(N_BANDS, np.nan)
    freqs_hz, power = spectrum
    out_db = 10 * np.log10(np.maximum(band_matrix(freqs_hz) @ power, 1e-20))
    top_hz = 0.95 * sample_rate / 2 if cutoff_hz is None else min(0.95 * sample_rate / 2, cutoff_hz)
    out_db[band_centers_hz() > top_hz] = np.nan
    return out_db


def content_cutoff_hz(audio: np.ndarray, sample_rate: int) -> float:
    """The highest frequency the clip really carries: its Nyquist, or lower where an upsampled
    telephone call or a low-bitrate MP3 shows a cliff (a drop of _CLIFF_DB that never recovers).

    A voice's own spectrum falls gradually; a band limit falls by tens of dB within a few hundred Hz
    and stays down to the file's Nyquist. Bands above it say nothing about the voice.
    """
    nyquist = sample_rate / 2
    spectrum = _mean_power_spectrum(audio, sample_rate, None, denoise=False)
    if spectrum is None:
        return nyquist
    freqs_hz, power = spectrum
    level_db = 10 * np.log10(np.maximum(power, 1e-20))
    step = freqs_hz[1]
    below_lo, below_hi = (int(round(span / step)) for span in _CLIFF_SPAN_HZ)
    # Highest level anywhere above each bin (from 100 Hz above it up to 0.98 x Nyquist).
    top = int(0.98 * nyquist / step)
    suffix_max = np.maximum.accumulate(level_db[: top + 1][::-1])[::-1]
    smooth_db = np.convolve(level_db, np.ones(5) / 5, mode="same")
    for k in range(int(_CLIFF_FROM_HZ / step), top - below_hi):
        below = float(np.median(level_db[k - below_lo : k - below_hi + 1]))
        if below - suffix_max[k + below_hi] >= _CLIFF_DB:
            # The edge: the last bin before the fall that is still near the level below it.
            knee = k - below_lo + int(np.nonzero(smooth_db[k - below_lo : k + 1] >= below - _KNEE_DB)[0].max())
            return float(freqs_hz[knee])
    return nyquist


def _mean_power_spectrum(
    audio: np.ndarray, sample_rate: int, sample_mask: np.ndarray | None, denoise: bool
) -> tuple[np.ndarray, np.ndarray] | None:
    """(frequencies [F], mean power [F]) over the clip's active frames, None when none is active."""
    x = np.asarray(audio, dtype=np.float64).reshape(-1)
    n_fft = 1 << int(np.ceil(np.log2(_FRAME_S * sample_rate)))
    hop = max(1, round(_HOP_S * sample_rate))
    if len(x) < n_fft:
        x = np.concatenate([x, np.zeros(n_fft - len(x))])
    n_frames = 1 + (len(x) - n_fft) // hop
    starts = np.arange(n_frames) * hop
    csum = np.concatenate([[0.0], np.cumsum(x * x)])
    energy = (csum[starts + n_fft] - csum[starts]) / n_fft
    if energy.max() <= 0:
        return None
    selected = energy > energy.max() * 10 ** (-_ACTIVE_RANGE_DB / 10)
    if sample_mask is not None:
        mask = np.concatenate([np.asarray(sample_mask, dtype=np.float64), np.zeros(n_fft)])[: len(x)]
        msum = np.concatenate([[0.0], np.cumsum(mask)])
        selected &= (msum[starts + n_fft] - msum[starts]) > 0.5 * n_fft
    if not selected.any():
        return None
    window = np.hanning(n_fft)
    # The noise floor needs every frame, pauses included; without it only the active ones are analysed.
    rows = np.arange(n_frames) if denoise else np.nonzero(selected)[0]
    power_TxF = np.empty((len(rows), n_fft // 2 + 1), np.float32)
    for i in range(0, len(rows), _BLOCK):
        idx = starts[rows[i : i + _BLOCK], None] + np.arange(n_fft)[None, :]
        power_TxF[i : i + _BLOCK] = np.abs(np.fft.rfft(x[idx] * window, axis=1)) ** 2
    active_TxF = power_TxF[selected[rows]].astype(np.float64)
    if denoise:
        active_TxF = subtract_noise(active_TxF, noise_floor(power_TxF))
    return np.fft.rfftfreq(n_fft, 1.0 / sample_rate), active_TxF.mean(axis=0)


def shape_db(level_db: np.ndarray) -> np.ndarray:
    """Band levels (band_power_db) normalised to a 0 dB mean over the valid bands: shape, not level."""
    return level_db - np.nanmean(level_db) if not np.all(np.isnan(level_db)) else level_db
