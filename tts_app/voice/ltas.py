"""Long-term average spectrum (LTAS) on the fixed band grid: the timbre statistic of a voice."""

from __future__ import annotations

import numpy as np

from tts_app.voice.bands import N_BANDS, band_centers_hz, band_matrix

_FRAME_S = 0.046
_HOP_S = 0.0116
_ACTIVE_RANGE_DB = 40.0  # frames this far under the loudest are pauses, left out


def ltas_db(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """Mean power spectrum of the active frames, in dB per band, level-normalised to 0 dB mean.

    Bands the clip cannot represent (above 0.95 x its Nyquist) are NaN.
    """
    x = np.asarray(audio, dtype=np.float64).reshape(-1)
    n_fft = 1 << int(np.ceil(np.log2(_FRAME_S * sample_rate)))
    hop = max(1, round(_HOP_S * sample_rate))
    if len(x) < n_fft:
        x = np.concatenate([x, np.zeros(n_fft - len(x))])
    n_frames = 1 + (len(x) - n_fft) // hop
    power_sum = np.zeros(n_fft // 2 + 1)
    window = np.hanning(n_fft)
    energies = []
    count = 0
    # Two passes over blocks keep memory flat for 30 s clips: energies first, then the spectrum.
    for start in range(0, n_frames, 512):
        idx = (np.arange(start, min(start + 512, n_frames)) * hop)[:, None] + np.arange(n_fft)[None, :]
        energies.append(np.mean(x[idx] ** 2, axis=1))
    energy = np.concatenate(energies) if energies else np.zeros(0)
    if not len(energy) or energy.max() <= 0:
        return np.full(N_BANDS, np.nan)
    active = energy > energy.max() * 10 ** (-_ACTIVE_RANGE_DB / 10)
    for start in range(0, n_frames, 512):
        sel = np.nonzero(active[start : start + 512])[0] + start
        if not len(sel):
            continue
        idx = (sel * hop)[:, None] + np.arange(n_fft)[None, :]
        spec = np.abs(np.fft.rfft(x[idx] * window, axis=1)) ** 2
        power_sum += spec.sum(axis=0)
        count += len(sel)
    freqs_hz = np.fft.rfftfreq(n_fft, 1.0 / sample_rate)
    bands = band_matrix(freqs_hz) @ (power_sum / max(count, 1))
    out_db = 10 * np.log10(np.maximum(bands, 1e-20))
    out_db[band_centers_hz() > 0.95 * sample_rate / 2] = np.nan
    return out_db - np.nanmean(out_db)
