"""Streaming pitch-synchronous overlap-add (PSOLA) with formant scaling.

Pitch: grains cut around the source's glottal pulses are laid down at the
target pitch period. Formants: each grain is resampled in time by the formant
ratio, which scales its spectral envelope by that ratio (a shorter vocal tract
when > 1). Unvoiced stretches use fixed-hop grains at their own positions, so
noise and silence pass through with only the formant scaling applied.

The output is a pure function of the input samples: marks advance by the same
arithmetic whatever the chunking, and a mark is only processed once all the
samples and F0 frames it reads have arrived. Streaming therefore reproduces
the whole-utterance result, and state is bounded by a fixed lookahead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tts_app.voice.analysis.pitch import PitchConfig, smooth_track, yin_frames

F0_OUT_MIN_HZ = 50.0
F0_OUT_MAX_HZ = 900.0
# Above this the output contour is compressed (half the log excursion): PSOLA shifts of x3-4 and
# very high speech lose intelligibility, so peaks are tamed rather than clipped flat.
F0_OUT_KNEE_HZ = 290.0
_LOG_KNEE = math.log(F0_OUT_KNEE_HZ)
_SMOOTH_CONTEXT = 2  # frames smooth_track reads on each side


@dataclass(frozen=True)
class PitchMap:
    """log f0_out = log f0 + shift + slope * (log f0 - pivot); all in natural-log Hz."""

    shift: float = 0.0
    slope: float = 0.0
    pivot: float = math.log(100.0)

    def apply(self, f0_hz: float) -> float:
        log_f0 = math.log(f0_hz)
        log_out = log_f0 + self.shift + self.slope * (log_f0 - self.pivot)
        if log_out > _LOG_KNEE and log_out > log_f0:
            log_out = max(_LOG_KNEE + 0.5 * (log_out - _LOG_KNEE), log_f0)
        return min(max(math.exp(log_out), F0_OUT_MIN_HZ), F0_OUT_MAX_HZ)


class PsolaStream:
    """One request's PSOLA state: feed chunks, get the same number of samples back in total.

    process() and flush() return float64 arrays of shape (2, n): the sum of the voiced grains
    and the sum of the unvoiced grains, so later stages can colour each differently; their
    sum is the pitch- and formant-shifted signal.
    """

    def __init__(self, pitch_map: PitchMap, formant_ratio: float, sample_rate: int) -> None:
        if not 0.5 <= formant_ratio <= 2.0:
            raise ValueError(f"formant_ratio {formant_ratio} outside 0.5..2.0")
        self.pitch_map = pitch_map
        self.alpha = float(formant_ratio)
        self.sample_rate = int(sample_rate)
        self.cfg = PitchConfig(self.sample_rate)
        self.unvoiced_hop = float(self.cfg.hop)
        t_src_max = self.sample_rate / self.cfg.f0_min_hz
        # Samples a mark reads on each side: epoch search (T/2) plus the grain's source span (<= T).
        self.reach = int(math.ceil(1.5 * t_src_max + 2 * self.unvoiced_hop * self.alpha)) + 4
        # Half-width of the widest output grain: later marks never write before next_mark - this.
        self.grain_max = int(math.ceil(max(self.sample_rate / F0_OUT_MIN_HZ, self.unvoiced_hop))) + 2
        self._x = np.zeros(self.reach + self.cfg.left, dtype=np.float64)  # virtual zeros before t=0
        self._x_base = -len(self._x)
        self._n_in = 0
        self._raw = np.zeros(0)  # raw F0 of the newest frames; frames are counted from t=0
        self._n_raw = 0
        self._smooth = np.zeros(0)
        self._smooth_base = 0
        self._next_mark = 0.0
        self._y = np.zeros((2, 0), dtype=np.float64)  # rows: voiced grains, unvoiced grains
        self._y_base = 0
        self._n_out = 0
        self._flushed = False

    @property
    def latency_samples(self) -> int:
        """Upper bound on how many input samples process() holds back."""
        frame_need = (_SMOOTH_CONTEXT + 1) * self.cfg.hop + self.cfg.right
        return max(self.reach, frame_need) + self.grain_max + self.cfg.hop

    @property
    def buffered_samples(self) -> int:
        """Samples held in this stream's buffers (bounded, whatever the stream's length)."""
        return len(self._x) + self._y.size + len(self._smooth) + len(self._raw)

    def process(self, chunk: np.ndarray) -> np.ndarray:
        if self._flushed:
            raise RuntimeError("process() after flush()")
        chunk = np.asarray(chunk, dtype=np.float64).reshape(-1)
        if len(chunk):
            self._x = np.concatenate([self._x, chunk])
            self._n_in += len(chunk)
        self._analyse(final=False)
        self._run_marks(final=False)
        return self._emit(final=False)

    def flush(self) -> np.ndarray:
        if self._flushed:
            return np.zeros((2, 0))
        self._flushed = True
        pad = self.reach + self.cfg.right + (_SMOOTH_CONTEXT + 2) * self.cfg.hop
        self._x = np.concatenate([self._x, np.zeros(pad)])
        self._analyse(final=True)
        self._run_marks(final=True)
        return self._emit(final=True)

    # -- analysis -------------------------------------------------------------
    def _analyse(self, final: bool) -> None:
        hop, ctx = self.cfg.hop, _SMOOTH_CONTEXT
        if final:
            n_frames = -(-self._n_in // hop) + ctx + 1
        else:
            n_frames = max(0, (self._n_in - self.cfg.right) // hop + 1)  # frames whose window is complete
        if n_frames > self._n_raw:
            centers = np.arange(self._n_raw, n_frames) * hop - self._x_base
            self._raw = np.concatenate([self._raw, yin_frames(self._x, centers, self.cfg).f0_hz])
            self._n_raw = n_frames
        # Smooth each frame once its +-ctx neighbours are known (at the end, zeros stand in).
        done = self._smooth_base + len(self._smooth)
        ready = self._n_raw if final else self._n_raw - ctx
        if ready > done:
            raw_base = self._n_raw - len(self._raw)
            lo, hi = max(done - ctx, 0), min(ready + ctx, self._n_raw)
            smoothed = smooth_track(self._raw[lo - raw_base : hi - raw_base])[done - lo : ready - lo]
            self._smooth = np.concatenate([self._smooth, smoothed])
            self._raw = self._raw[max(ready - ctx, 0) - raw_base :]

    # -- synthesis ------------------------------------------------------------
    def _run_marks(self, final: bool) -> None:
        hop, sr, alpha = self.cfg.hop, self.sample_rate, self.alpha
        smooth_end = self._smooth_base + len(self._smooth)
        while True:
            t = self._next_mark
            k = int(round(t / hop))
            if t >= self._n_in or k >= smooth_end or (not final and t + self.reach > self._n_in):
                break
            f0 = float(self._smooth[k - self._smooth_base])
            if f0 > 0:
                t_src = sr / f0
                t_tgt = sr / self.pitch_map.apply(f0)
                lo_i = int(round(t - t_src / 2)) - self._x_base
                hi_i = int(round(t + t_src / 2)) - self._x_base + 1
                # The glottal pulse of the period around t: grains centred on it keep one pulse each.
                epoch = float(np.argmax(self._x[lo_i:hi_i]) + lo_i + self._x_base)
                half = min(t_tgt, t_src / alpha)
                gain = math.sqrt(alpha * t_tgt / t_src)  # keeps power: one grain per target period
                self._add_grain(t, epoch, half, gain, row=0)
                self._next_mark = t + t_tgt
            else:
                self._add_grain(t, t, self.unvoiced_hop, 1.0, row=1)
                self._next_mark = t + self.unvoiced_hop
        self._trim_input()

    def _add_grain(self, t_out: float, src_center: float, half: float, gain: float, row: int) -> None:
        j0 = int(math.ceil(t_out - half))
        j1 = int(math.floor(t_out + half))
        if j1 < j0:
            return
        j = np.arange(j0, j1 + 1)
        d = j - t_out
        window = np.cos((0.5 * np.pi / half) * d) ** 2
        pos = src_center + d * self.alpha - self._x_base
        i = np.floor(pos).astype(np.int64)
        frac = pos - i
        grain = self._x[i] * (1.0 - frac) + self._x[i + 1] * frac
        grain *= window * gain
        start = j0 - self._y_base
        if start < 0:  # before t=0: nothing to write there
            grain = grain[-start:]
            start = 0
        end = start + len(grain)
        if end > self._y.shape[1]:  # grow geometrically: whole-utterance calls emit only at the end
            grow = max(end - self._y.shape[1], self._y.shape[1]) + 4096
            self._y = np.concatenate([self._y, np.zeros((2, grow))], axis=1)
        self._y[row, start:end] += grain

    def _trim_input(self) -> None:
        # Keep what the next mark and the next analysis frames can still read.
        keep_from = min(int(self._next_mark) - self.reach - 2, self._n_raw * self.cfg.hop - self.cfg.left) - 1
        drop = keep_from - self._x_base
        if drop > 0:
            self._x = self._x[drop:]
            self._x_base += drop
        k_keep = int(self._next_mark / self.cfg.hop) - 2
        sdrop = k_keep - self._smooth_base
        if sdrop > 0:
            self._smooth = self._smooth[sdrop:]
            self._smooth_base += sdrop

    def _emit(self, final: bool) -> np.ndarray:
        end = self._n_in if final else min(self._n_in, int(math.floor(self._next_mark - self.grain_max)))
        if end <= self._n_out:
            return np.zeros((2, 0))
        out = self._y[:, self._n_out - self._y_base : end - self._y_base]
        if out.shape[1] < end - self._n_out:
            out = np.concatenate([out, np.zeros((2, end - self._n_out - out.shape[1]))], axis=1)
        self._n_out = end
        drop = end - self._y_base
        self._y = self._y[:, drop:]
        self._y_base = end
        return out
