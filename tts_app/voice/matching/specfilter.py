"""Streaming time-varying spectral filter: a class map's per-frame gains on the model's waveform.

Weighted overlap-add STFT (sqrt-Hann in and out, hop N/4). Frames sit at fixed positions
counted from the start of the stream and each is filtered from its own samples only, so
any chunking gives the same output as one whole-utterance call (up to float rounding).
A sample is final once every frame over it is done, the last of which reaches N_FFT - HOP
samples further: the filter holds back less than N_FFT samples (46 ms at 22.05 kHz).
"""

from __future__ import annotations

import numpy as np

from tts_app.voice.analysis.bands import N_BANDS, band_centers_hz
from tts_app.voice.matching.classmap import HOP, N_FFT, ClassMap, frame_band_power, window

_OLA_SUM = 2.0  # sum of Hann windows at hop N/4 (analysis x synthesis window = Hann)


def band_to_bins(sample_rate: int) -> np.ndarray:
    """[N_BANDS, F] linear interpolation from band centres (held at the ends) to FFT bins."""
    freqs = np.fft.rfftfreq(N_FFT, 1.0 / sample_rate)
    eye = np.eye(N_BANDS)
    centres = band_centers_hz(N_BANDS)
    return np.array([np.interp(freqs, centres, row) for row in eye])


class SpectralFilterStream:
    """One request's filter state: process(chunk) -> final samples so far; flush() -> the rest."""

    def __init__(self, cmap: ClassMap, scale_db: float, gain: float, sample_rate: int) -> None:
        self.cmap = cmap
        self.scale_db = float(scale_db)  # strength: multiplies every class gain (in dB)
        self.gain = float(gain)  # linear output gain: keeps the model's loudness
        self.sample_rate = int(sample_rate)
        self._interp = band_to_bins(self.sample_rate)  # [N_BANDS, F]
        self._win = window()
        self._x = np.zeros(N_FFT - HOP)  # input from sample (next frame start); starts with virtual zeros
        self._acc = np.zeros(N_FFT - HOP)  # overlap-add tail, aligned with _x
        self._skip = N_FFT - HOP
        self._n_in = 0
        self._n_out = 0

    @property
    def latency_samples(self) -> int:
        return N_FFT - 1

    def process(self, chunk: np.ndarray) -> np.ndarray:
        chunk = np.asarray(chunk, dtype=np.float64).reshape(-1)
        self._x = np.concatenate([self._x, chunk])
        self._n_in += len(chunk)
        return self._run()

    def flush(self) -> np.ndarray:
        """Zero-pad so every frame touching the input is done; return the rest (total out == total in)."""
        self._x = np.concatenate([self._x, np.zeros(N_FFT)])
        out = self._run()
        rest = self._acc[: self._n_in - self._n_out] * (self.gain / _OLA_SUM)
        self._n_out += len(rest)
        self._acc = np.zeros(N_FFT - HOP)
        return np.concatenate([out, rest])

    def _run(self) -> np.ndarray:
        """Filter every complete frame; return the samples no later frame can touch."""
        n_frames = max(0, (len(self._x) - N_FFT) // HOP + 1)
        if not n_frames:
            return np.zeros(0)
        idx = np.arange(N_FFT)[None, :] + HOP * np.arange(n_frames)[:, None]
        spec, power = frame_band_power(self._x[idx], self.sample_rate)  # [T, F], [T, N_BANDS]
        gains_db = self.scale_db * self.cmap.frame_gains_db(power) @ self._interp  # [T, F]
        frames = np.fft.irfft(spec * 10.0 ** (gains_db / 20.0), N_FFT, axis=1) * self._win  # [T, N_FFT]
        # _acc and _x both start at the next frame's first sample.
        acc = np.zeros(HOP * (n_frames - 1) + N_FFT)
        acc[: len(self._acc)] += self._acc
        for j in range(n_frames):  # overlap-add
            acc[j * HOP : j * HOP + N_FFT] += frames[j]
        done = acc[: n_frames * HOP]
        self._acc = acc[n_frames * HOP :]
        self._x = self._x[n_frames * HOP :]
        skip = min(self._skip, len(done))  # output before t=0 (the virtual leading zeros)
        self._skip -= skip
        done = done[skip:][: self._n_in - self._n_out]
        self._n_out += len(done)
        return done * (self.gain / _OLA_SUM)
