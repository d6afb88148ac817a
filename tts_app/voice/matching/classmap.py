"""Per-reference spectral class map: which filter to put on each kind of sound, learnt from the clip.

The long-term EQ gives every frame the same filter. Here the frames of the (already
pitch/formant-shifted, EQ'd) model voice are clustered into K sound classes on
speaker-normalised mel-cepstra (roughly: vowels of different openness, nasals,
fricatives, bursts, silence); the reference's frames are assigned to the same classes,
and each class gets the mean log-spectral difference reference - model as its filter.
At run time each frame's filter is the posterior-weighted mix of the class filters
(specfilter.py applies it to the model's own waveform: no vocoder, words are kept).

Assignment of reference frames to classes:
- "parallel": the model spoke the reference's transcript; DTW on per-utterance
  normalised mel-cepstra pairs each reference frame with a model frame, whose class it takes;
- "nearest": no transcript; each normalised reference frame goes to its nearest centroid.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from scipy.fft import dct

from tts_app.voice.analysis.bands import N_BANDS, band_matrix
from tts_app.voice.analysis.denoise import denoised

N_FFT = 1024  # 46 ms at 22.05 kHz: resolves harmonics of low voices
HOP = 256
N_CEPS = 19  # c1..c19 of the log-mel spectrum; c0 (level) is left out
N_CLASSES = 8  # chosen leave-one-voice-out among 1/4/8/16 (docs/benchmarks-log.md)
GAIN_LIMIT_DB = 12.0  # per band and frame, either way
_SHRINK_FRAMES = 20.0  # a class with few frames falls back toward the global difference
_ACTIVE_RANGE_DB = 40.0  # frames this far under the loudest are silence: not used for fitting
_KMEANS_ITERS = 30


@dataclass(frozen=True)
class ClassMap:
    """A fitted map. Arrays are plain float64 so a profile can save and load them."""

    centroids: np.ndarray  # [K, N_CEPS] in normalised-cepstrum units
    ceps_mean: np.ndarray  # [N_CEPS] normalisation of the model-side frames
    ceps_std: np.ndarray  # [N_CEPS]
    gains_db: np.ndarray  # [K, N_BANDS] filter per class, level-neutral over the model frames
    alignment: str  # "parallel" or "nearest"

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {
            "centroids": self.centroids,
            "ceps_mean": self.ceps_mean,
            "ceps_std": self.ceps_std,
            "gains_db": self.gains_db,
            "alignment": np.frombuffer(self.alignment.encode(), dtype=np.uint8),
        }

    @classmethod
    def from_arrays(cls, data: dict[str, np.ndarray]) -> "ClassMap":
        return cls(
            centroids=np.asarray(data["centroids"], dtype=np.float64),
            ceps_mean=np.asarray(data["ceps_mean"], dtype=np.float64),
            ceps_std=np.asarray(data["ceps_std"], dtype=np.float64),
            gains_db=np.asarray(data["gains_db"], dtype=np.float64),
            alignment=bytes(np.asarray(data["alignment"], dtype=np.uint8)).decode(),
        )

    def frame_gains_db(self, band_power: np.ndarray) -> np.ndarray:
        """[T, N_BANDS] filter for frames given their band power [T, N_BANDS]: soft class mix."""
        z = (cepstra(band_power) - self.ceps_mean) / self.ceps_std  # [T, N_CEPS]
        dist = ((z[:, None, :] - self.centroids[None]) ** 2).sum(-1)  # [T, K]
        # Posterior of an isotropic unit-variance Gaussian per class.
        logp = -0.5 * (dist - dist.min(axis=1, keepdims=True))
        post = np.exp(logp)
        post /= post.sum(axis=1, keepdims=True)
        return np.clip(post @ self.gains_db, -GAIN_LIMIT_DB, GAIN_LIMIT_DB)


@functools.lru_cache(maxsize=1)
def window() -> np.ndarray:
    """Square-root periodic Hann: analysis x synthesis = Hann, which sums to 2 at hop N/4."""
    return np.sqrt(0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT))


@functools.lru_cache(maxsize=8)
def _band_weights_t(sample_rate: int) -> np.ndarray:
    return np.ascontiguousarray(band_matrix(np.fft.rfftfreq(N_FFT, 1.0 / sample_rate), N_BANDS).T)  # [F, N_BANDS]


def frame_band_power(frames: np.ndarray, sample_rate: int) -> tuple[np.ndarray, np.ndarray]:
    """Spectra [T, F] (complex) and band power [T, N_BANDS] of windowed frames [T, N_FFT]."""
    spec = np.fft.rfft(frames * window(), axis=1)
    power = (spec.real**2 + spec.imag**2) @ _band_weights_t(sample_rate)
    return spec, power


def whole_band_power(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """Band power [T, N_BANDS] of a whole clip on the streaming filter's own framing."""
    x = np.concatenate([np.zeros(N_FFT - HOP), np.asarray(audio, dtype=np.float64), np.zeros(N_FFT)])
    n = max(0, (len(x) - N_FFT) // HOP + 1)
    idx = np.arange(N_FFT)[None, :] + HOP * np.arange(n)[:, None]
    return frame_band_power(x[idx], sample_rate)[1]


def cepstra(band_power: np.ndarray) -> np.ndarray:
    """[T, N_CEPS] mel-cepstra c1.. of band power [T, N_BANDS]."""
    return dct(np.log(band_power + 1e-10), axis=1, norm="ortho")[:, 1 : N_CEPS + 1]


def active_frames(band_power: np.ndarray) -> np.ndarray:
    level_db = 10 * np.log10(band_power.sum(axis=1) + 1e-12)
    return level_db > level_db.max() - _ACTIVE_RANGE_DB


def _normalised(ceps: np.ndarray, active: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mean, std = ceps[active].mean(axis=0), ceps[active].std(axis=0) + 1e-6
    return (ceps - mean) / std, mean, std


def kmeans(points: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """Centroids [k, D] by k-means++ seeding and Lloyd iterations (deterministic for a seed)."""
    rng = np.random.default_rng(seed)
    k = max(1, min(k, len(points)))
    centroids = [points[rng.integers(len(points))]]
    for _ in range(1, k):
        d2 = np.min(((points[:, None, :] - np.array(centroids)[None]) ** 2).sum(-1), axis=1)
        centroids.append(points[rng.choice(len(points), p=d2 / d2.sum())] if d2.sum() > 0 else points[0])
    c = np.array(centroids)
    for _ in range(_KMEANS_ITERS):
        label = assign(points, c)
        new = np.array([points[label == j].mean(axis=0) if np.any(label == j) else c[j] for j in range(k)])
        if np.allclose(new, c):
            break
        c = new
    return c


def assign(points: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    return np.argmin(((points[:, None, :] - centroids[None]) ** 2).sum(-1), axis=1)


def dtw_path(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pairs (i, j) [P, 2] of the min-cost monotonic alignment of frames x [N, D] to y [M, D].

    Steps (1,0), (0,1), (1,1), Euclidean local cost; the cumulative cost is filled one
    anti-diagonal at a time (vectorised), the path traced back from (N-1, M-1) to (0, 0).
    """
    n, m = len(x), len(y)
    cost = np.sqrt(np.maximum(((x**2).sum(1)[:, None] + (y**2).sum(1)[None, :] - 2 * x @ y.T), 0.0))  # [N, M]
    acc = np.full((n + 1, m + 1), np.inf)
    acc[0, 0] = 0.0
    for d in range(2, n + m + 1):  # cells (i, j), 1-based, with i + j == d
        i = np.arange(max(1, d - m), min(n, d - 1) + 1)
        j = d - i
        best = np.minimum(np.minimum(acc[i - 1, j], acc[i, j - 1]), acc[i - 1, j - 1])
        acc[i, j] = cost[i - 1, j - 1] + best
    path = [(n - 1, m - 1)]
    i, j = n, m
    while (i, j) != (1, 1):
        steps = ((i - 1, j - 1), (i - 1, j), (i, j - 1))
        i, j = min(steps, key=lambda ij: acc[ij])
        path.append((i - 1, j - 1))
    return np.array(path[::-1], dtype=np.int64)


def _fill_bands(power: np.ndarray, shape: np.ndarray, carried: np.ndarray) -> np.ndarray:
    """Band power [T, N_BANDS] with the bands a clip does not carry continued from its last carried
    band along ``shape`` [N_BANDS] (the model's mean spectrum), so its cepstra are not a cliff's."""
    if not carried.any():
        return power
    last = int(np.nonzero(carried)[0].max())
    out = power.copy()
    out[:, ~carried] = power[:, [last]] * (shape[~carried] / max(float(shape[last]), 1e-20))[None, :]
    return out


def fit_class_map(
    reference: np.ndarray,
    model_side: np.ndarray,
    sample_rate: int,
    n_classes: int = N_CLASSES,
    parallel: bool = False,
    carried: np.ndarray | None = None,
) -> ClassMap:
    """Fit on the reference and on the model's (adapted) voice, both mono at ``sample_rate``.

    parallel=True: ``model_side`` says the reference's words, and frames are paired by DTW.
    ``carried`` [N_BANDS]: the bands the reference has sound in (not NaN in its long-term spectrum,
    VoiceStats.ltas_db); None: all of them.
    """
    p_ref, p_src = whole_band_power(reference, sample_rate), whole_band_power(model_side, sample_rate)
    a_ref, a_src = active_frames(p_ref), active_frames(p_src)
    carried = np.ones(N_BANDS, dtype=bool) if carried is None else np.asarray(carried, dtype=bool)
    if not carried.all():
        p_ref = _fill_bands(p_ref, p_src[a_src].mean(axis=0), carried)
    z_src, mean, std = _normalised(cepstra(p_src), a_src)
    z_ref = _normalised(cepstra(p_ref), a_ref)[0]  # the reference normalised by its own statistics
    centroids = kmeans(z_src[a_src], n_classes)
    label_src = assign(z_src, centroids)
    if parallel:
        pairs = dtw_path(z_ref, z_src)
        label_ref = np.empty(len(z_ref), dtype=np.int64)
        label_ref[pairs[:, 0]] = label_src[pairs[:, 1]]  # the last pair of a reference frame wins
    else:
        label_ref = assign(z_ref, centroids)
    # Frames are classed on what was recorded; the filters are fitted on the voice alone.
    db_ref, db_src = 10 * np.log10(denoised(p_ref) + 1e-10), 10 * np.log10(p_src + 1e-10)
    overall = db_ref[a_ref].mean(axis=0) - db_src[a_src].mean(axis=0)
    gains = np.empty((len(centroids), N_BANDS))
    counts = np.zeros(len(centroids))
    for j in range(len(centroids)):
        r, s = db_ref[a_ref & (label_ref == j)], db_src[a_src & (label_src == j)]
        n = min(len(r), len(s))
        counts[j] = np.sum(a_src & (label_src == j))
        if n < 3:
            gains[j] = overall
            continue
        w = n / (n + _SHRINK_FRAMES)
        gains[j] = w * (r.mean(axis=0) - s.mean(axis=0)) + (1 - w) * overall
    if carried.any() and not carried.all():
        gains[:, ~carried] = gains[:, [int(np.nonzero(carried)[0].max())]]  # no made-up filter above the band limit
    # Level-neutral: the mean gain over the model's active frames is 0 dB (loudness is set later).
    gains -= float((counts @ gains.mean(axis=1)) / max(counts.sum(), 1.0))
    return ClassMap(centroids, mean, std, gains, "parallel" if parallel else "nearest")
