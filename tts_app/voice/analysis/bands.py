"""The fixed mel-spaced band grid on which long-term spectra and timbre gains are stored.

Fixed in Hz (not in FFT bins) so a profile made from a 8 kHz or 48 kHz clip
compares directly with the 22.05 kHz model output.
"""

from __future__ import annotations

import numpy as np

N_BANDS = 40
F_MIN_HZ = 60.0
F_MAX_HZ = 10_000.0


def _hz_to_mel(f_hz: np.ndarray) -> np.ndarray:
    return 2595.0 * np.log10(1.0 + f_hz / 700.0)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)


def band_edges_hz(n_bands: int = N_BANDS) -> np.ndarray:
    """n_bands + 2 edges: band i spans edges[i]..edges[i+2] (triangular, centre edges[i+1])."""
    mels = np.linspace(_hz_to_mel(np.array(F_MIN_HZ)), _hz_to_mel(np.array(F_MAX_HZ)), n_bands + 2)
    return _mel_to_hz(mels)


def band_centers_hz(n_bands: int = N_BANDS) -> np.ndarray:
    return band_edges_hz(n_bands)[1:-1]


def band_matrix(freqs_hz: np.ndarray, n_bands: int = N_BANDS) -> np.ndarray:
    """(n_bands, len(freqs_hz)) triangular weights, each row summing to 1 where it has support."""
    edges = band_edges_hz(n_bands)
    lo, mid, hi = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    f = freqs_hz[None, :]
    tri = np.maximum(0.0, np.minimum((f - lo) / (mid - lo), (hi - f) / (hi - mid)))
    sums = tri.sum(axis=1, keepdims=True)
    return tri / np.where(sums > 0, sums, 1.0)
