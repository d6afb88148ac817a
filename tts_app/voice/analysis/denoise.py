"""Steady background noise taken out of a clip's spectra before its voice is measured.

A reference recorded in a room carries its noise into every frame: the long-term spectrum and
the class filters then describe voice plus hiss (or hum), and the match adds that shape to the
model's clean voice. The noise spectrum is the mean spectrum of the clip's quietest frames (the
pauses between words: speech comes and goes, steady noise stays; a mean, because a low percentile
of each frequency's power would be biased far below the noise's mean power), and it is subtracted
in the power domain, never below a fixed fraction of the frame's own power.
"""

from __future__ import annotations

import numpy as np

QUIET_SHARE = 0.1  # the quietest tenth of the frames: pauses between words, not speech
KEEP_FRACTION = 0.1  # what subtraction may leave at least (-10 dB): no holes, no negative power


def noise_floor(power_TxF: np.ndarray) -> np.ndarray:
    """[F] steady noise power per frequency of frames [T, F] (zeros when there are too few frames)."""
    if len(power_TxF) < 10:
        return np.zeros(power_TxF.shape[1])
    level_T = power_TxF.sum(axis=1)
    quiet = level_T <= np.quantile(level_T, QUIET_SHARE)
    return power_TxF[quiet].mean(axis=0)


def subtract_noise(power_TxF: np.ndarray, floor_F: np.ndarray) -> np.ndarray:
    """Frames [T, F] with the floor taken out, kept at or above KEEP_FRACTION of themselves."""
    return np.maximum(power_TxF - floor_F[None, :], KEEP_FRACTION * power_TxF)


def denoised(power_TxF: np.ndarray) -> np.ndarray:
    """Frames [T, F] minus their own noise floor."""
    return subtract_noise(power_TxF, noise_floor(power_TxF))
