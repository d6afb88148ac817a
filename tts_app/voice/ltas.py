"""Long-term average spectrum (LTAS) on the fixed band grid: the timbre statistic of a voice."""

from __future__ import annotations

import numpy as np

from tts_app.voice.bands import N_BANDS, band_centers_hz, band_matrix

_FRAME_S = 0.046
_HOP_S = 0.0116
_ACTIVE_RANGE_DB = 40.0  # frames this far under the loudest are pauses, left out
_BLOCK = 512  # frames per FFT batch: bounds memory for 30 s clips


def band_power_db(audio: np.ndarray, sample_rate: int, sample_mask: np.ndarray | None = None) -> np.ndarray:
    """Mean power spectrum of the active frames in dB per band (absolute level).

    With ``sample_mask`` (one bool per sample), only frames mostly inside the mask count.
    Bands the clip cannot represent (above 0.95 x its Nyquist) and empty selections are NaN.
    """
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
        return np.full(N_BANDS, np.nan)
    selected = energy > energy.max() * 10 ** (-_ACTIVE_RANGE_DB / 10)
    if sample_mask is not None:
        mask = np.concatenate([np.asarray(sample_mask, dtype=np.float64), np.zeros(n_fft)])[: len(x)]
        msum = np.concatenate([[0.0], np.cumsum(mask)])
        selected &= (msum[starts + n_fft] - msum[starts]) > 0.5 * n_fft
    if not selected.any():
        return np.full(N_BANDS, np.nan)
    window = np.hanning(n_fft)
    power_sum = np.zeros(n_fft // 2 + 1)
    sel = np.nonzero(selected)[0]
    for i in range(0, len(sel), _BLOCK):
        idx = starts[sel[i : i + _BLOCK], None] + np.arange(n_fft)[None, :]
        power_sum += (np.abs(np.fft.rfft(x[idx] * window, axis=1)) ** 2).sum(axis=0)
    freqs_hz = np.fft.rfftfreq(n_fft, 1.0 / sample_rate)
    out_db = 10 * np.log10(np.maximum(band_matrix(freqs_hz) @ (power_sum / len(sel)), 1e-20))
    out_db[band_centers_hz() > 0.95 * sample_rate / 2] = np.nan
    return out_db


def ltas_db(audio: np.ndarray, sample_rate: int, sample_mask: np.ndarray | None = None) -> np.ndarray:
    """band_power_db normalised to a 0 dB mean over the valid bands (shape, not level)."""
    out_db = band_power_db(audio, sample_rate, sample_mask)
    return out_db - np.nanmean(out_db) if not np.all(np.isnan(out_db)) else out_db
