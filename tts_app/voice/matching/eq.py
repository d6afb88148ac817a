"""Timbre equaliser: a linear-phase FIR designed from a band gain curve, applied in streaming form.

Linear convolution is chunk-independent, so the streamed output equals the
whole-signal output up to float rounding; the filter's group delay is removed
by holding back (taps - 1) / 2 samples, which flush() releases.
"""

from __future__ import annotations

import numpy as np
from scipy.signal import fftconvolve

from tts_app.voice.analysis.bands import band_centers_hz

DEFAULT_TAPS = 511  # ~23 ms at 22.05 kHz: resolves the ~40 Hz-wide low mel bands


def design_fir(gain_db: np.ndarray, sample_rate: int, taps: int = DEFAULT_TAPS) -> np.ndarray:
    """Linear-phase FIR whose magnitude follows ``gain_db`` (one value per band of bands.band_centers_hz)."""
    if taps % 2 == 0:
        raise ValueError("taps must be odd for a whole-sample group delay")
    n_fft = 4 * (taps + 1)
    freqs_hz = np.fft.rfftfreq(n_fft, 1.0 / sample_rate)
    centers_hz = band_centers_hz()
    # Interpolate on a log-frequency axis; hold the end values beyond the outer bands.
    curve_db = np.interp(np.log(np.maximum(freqs_hz, 1.0)), np.log(centers_hz), gain_db)
    impulse = np.fft.irfft(10.0 ** (curve_db / 20.0), n_fft)
    impulse = np.roll(impulse, taps // 2)[:taps]
    return (impulse * np.hanning(taps + 2)[1:-1]).astype(np.float64)


class FirStream:
    """Overlap-add FIR filtering of a stream, delay-compensated: out length == in length."""

    def __init__(self, fir: np.ndarray) -> None:
        self.fir = np.asarray(fir, dtype=np.float64)
        self.delay = (len(self.fir) - 1) // 2
        self._tail = np.zeros(len(self.fir) - 1)
        self._to_skip = self.delay  # leading samples of pure filter delay
        self._n_in = 0
        self._n_out = 0

    def process(self, chunk: np.ndarray) -> np.ndarray:
        chunk = np.asarray(chunk, dtype=np.float64).reshape(-1)
        if not len(chunk):
            return np.zeros(0, dtype=np.float32)
        full = fftconvolve(chunk, self.fir) if len(chunk) > 64 else np.convolve(chunk, self.fir)
        full[: len(self._tail)] += self._tail
        ready = full[: len(chunk)]
        self._tail = full[len(chunk) :].copy()
        self._n_in += len(chunk)
        return self._skip(ready)

    def flush(self) -> np.ndarray:
        # The tail starts at output index n_in; the delay-compensated signal ends at delay + n_in.
        out = self._tail[self._to_skip : self.delay]
        self._tail = np.zeros(len(self.fir) - 1)
        self._to_skip = 0
        self._n_out += len(out)
        return out.astype(np.float32)

    def _skip(self, samples: np.ndarray) -> np.ndarray:
        if self._to_skip:
            cut = min(self._to_skip, len(samples))
            samples = samples[cut:]
            self._to_skip -= cut
        self._n_out += len(samples)
        return samples.astype(np.float32)
