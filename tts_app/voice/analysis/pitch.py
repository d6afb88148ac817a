"""Frame-wise F0 estimation (YIN), shared by reference analysis and the streaming adapter.

Every frame is computed from its own window of samples only, so the result for a
frame never depends on how the signal was cut into chunks: the streaming adapter
and the whole-utterance adapter see the same F0 track.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Frames per FFT batch: bounds the temporary (frames x fft) arrays to a few MB.
_BATCH_FRAMES = 256


@dataclass(frozen=True)
class PitchConfig:
    """Frame geometry of the F0 tracker for one sample rate (all sizes in samples)."""

    sample_rate: int
    f0_min_hz: float = 55.0
    f0_max_hz: float = 700.0
    hop_s: float = 0.005
    integration_s: float = 0.025
    threshold: float = 0.15  # YIN absolute threshold on the normalised difference
    voiced_max_cmnd: float = 0.35  # above this aperiodicity a frame is unvoiced
    voiced_min_db: float = -50.0  # frames quieter than this (dBFS RMS) are unvoiced

    @property
    def hop(self) -> int:
        return max(1, round(self.hop_s * self.sample_rate))

    @property
    def lag_min(self) -> int:
        return max(2, int(self.sample_rate / self.f0_max_hz))

    @property
    def lag_max(self) -> int:
        return int(np.ceil(self.sample_rate / self.f0_min_hz))

    @property
    def integration(self) -> int:
        return max(self.lag_max, round(self.integration_s * self.sample_rate))

    @property
    def frame_len(self) -> int:
        return self.integration + self.lag_max + 2

    @property
    def left(self) -> int:
        """Samples a frame reads before its centre."""
        return self.frame_len // 2

    @property
    def right(self) -> int:
        """Samples a frame reads from its centre on (the tracker's lookahead)."""
        return self.frame_len - self.frame_len // 2

    @property
    def n_fft(self) -> int:
        return 1 << int(np.ceil(np.log2(self.frame_len + self.integration)))


@dataclass
class PitchFrames:
    """Per-frame results; f0_hz is 0 where the frame is unvoiced."""

    f0_hz: np.ndarray  # float64 (frames,)
    cmnd: np.ndarray  # float64 (frames,), YIN aperiodicity at the chosen lag, 0 = periodic
    rms_db: np.ndarray  # float64 (frames,), frame level in dBFS

    @property
    def voiced(self) -> np.ndarray:
        return self.f0_hz > 0


def yin_frames(x: np.ndarray, centers: np.ndarray, cfg: PitchConfig) -> PitchFrames:
    """F0 of the frames centred at ``centers`` (indices into ``x``).

    ``x`` must hold ``cfg.left`` samples before the first centre and ``cfg.right``
    after the last; callers pad with zeros at the signal's ends.
    """
    centers = np.asarray(centers, dtype=np.int64)
    out = [
        _yin_batch(x, centers[i : i + _BATCH_FRAMES], cfg) for i in range(0, len(centers), _BATCH_FRAMES)
    ]
    if not out:
        empty = np.zeros(0)
        return PitchFrames(empty, empty.copy(), empty.copy())
    return PitchFrames(*(np.concatenate([o[i] for o in out]) for i in range(3)))


def _yin_batch(x: np.ndarray, centers: np.ndarray, cfg: PitchConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n, w, lag_max, lag_min = cfg.frame_len, cfg.integration, cfg.lag_max, cfg.lag_min
    idx = (centers - cfg.left)[:, None] + np.arange(n)[None, :]
    frames = x[idx].astype(np.float64)
    frames -= frames.mean(axis=1, keepdims=True)
    head = frames[:, :w]
    spec_head = np.fft.rfft(head, cfg.n_fft, axis=1)
    spec_all = np.fft.rfft(frames, cfg.n_fft, axis=1)
    corr = np.fft.irfft(np.conj(spec_head) * spec_all, cfg.n_fft, axis=1)[:, : lag_max + 1]
    csum = np.concatenate([np.zeros((len(frames), 1)), np.cumsum(frames**2, axis=1)], axis=1)
    lags = np.arange(lag_max + 1)
    e0 = csum[:, w : w + 1]
    e_lag = csum[:, lags + w] - csum[:, lags]
    diff = np.maximum(e0 + e_lag - 2.0 * corr, 0.0)
    # Cumulative-mean normalisation (YIN step 3): removes the bias toward lag 0.
    cum = np.cumsum(diff[:, 1:], axis=1)
    cmnd = np.ones_like(diff)
    cmnd[:, 1:] = diff[:, 1:] * lags[1:] / np.maximum(cum, 1e-12)

    seg = cmnd[:, lag_min : lag_max + 1]
    below = seg < cfg.threshold
    has = below.any(axis=1)
    first = np.where(has, below.argmax(axis=1), seg.argmin(axis=1))
    # Walk from the first dip below threshold down to its local minimum.
    best = first.copy()
    rows = np.arange(len(seg))
    for _ in range(seg.shape[1]):
        nxt = np.minimum(best + 1, seg.shape[1] - 1)
        step = seg[rows, nxt] < seg[rows, best]
        if not step.any():
            break
        best = np.where(step, nxt, best)
    lag = best + lag_min
    # Parabolic interpolation for a sub-sample lag.
    l0 = np.clip(lag - 1, 0, lag_max)
    l2 = np.clip(lag + 1, 0, lag_max)
    a, b, c = cmnd[rows, l0], cmnd[rows, lag], cmnd[rows, l2]
    denom = a - 2 * b + c
    shift = np.where(np.abs(denom) > 1e-12, 0.5 * (a - c) / np.where(denom == 0, 1, denom), 0.0)
    frac_lag = lag + np.clip(shift, -1, 1)
    apr = cmnd[rows, lag]

    rms = np.sqrt(e0[:, 0] / w)
    rms_db = 20 * np.log10(np.maximum(rms, 1e-10))
    voiced = (apr < cfg.voiced_max_cmnd) & (rms_db > cfg.voiced_min_db) & (lag > lag_min) & (lag < lag_max)
    f0 = np.where(voiced, cfg.sample_rate / frac_lag, 0.0)
    return f0, apr, rms_db


def smooth_track(f0_hz: np.ndarray) -> np.ndarray:
    """Median-of-5 over log F0 and drop voiced runs shorter than 3 frames.

    Uses 2 frames of context on each side; the streaming adapter holds those back.
    """
    n = len(f0_hz)
    if n == 0:
        return f0_hz.copy()
    pad = np.concatenate([np.zeros(2), f0_hz, np.zeros(2)])
    win = np.lib.stride_tricks.sliding_window_view(pad, 5)
    voiced_count = (win > 0).sum(axis=1)
    logs = np.where(win > 0, np.log(np.maximum(win, 1e-9)), np.nan)
    with np.errstate(all="ignore"):
        med = np.exp(np.nanmedian(np.where(voiced_count[:, None] > 0, logs, 0.0), axis=1))
    return np.where((voiced_count >= 3) & (f0_hz > 0), med, 0.0)
