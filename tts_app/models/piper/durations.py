"""Frames per phoneme id from the duration predictor, with speed applied evenly."""

from __future__ import annotations

import numpy as np


def phoneme_frames(w_N: np.ndarray, length_scale: float, speed: float = 1.0) -> np.ndarray:
    """Integer frame counts [N] for predicted durations ``w_N`` (frames, before scaling).

    At speed 1 this is stock Piper's ``ceil(w * length_scale)``. Other speeds
    divide those counts by ``speed`` with the rounding error carried from one id
    to the next, so the total is ``round(total_at_1 / speed)``: scaling
    ``length_scale`` instead would ceil every id again, and that fixed half
    frame per id made 4x speech only about 2x shorter.
    """
    frames_N = np.ceil(w_N * length_scale)  # in w_N's dtype (float32), as stock Piper rounds
    if speed == 1.0:
        return frames_N.astype(np.int64)
    ends_N = np.round(np.cumsum(frames_N / speed))  # rounded running total: error never accumulates
    return np.diff(ends_N, prepend=0.0).astype(np.int64)
