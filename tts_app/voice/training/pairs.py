"""Parallel data for decoder fine-tuning: the model's latents for the reference's words, moved onto
the reference's frames.

The model says the transcript (latents z, decoded by the released decoder); both clips become
per-utterance mean/variance-normalised MFCCs at the decoder's hop (normalising per clip removes
most of the speaker's own spectral offset, so DTW pairs sounds rather than voices); DTW pairs the
frames (classmap.dtw_path, as the filter route's parallel fit does); each reference frame takes
the latent of the model frame it was paired with (the median one when several).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

import numpy as np
import torch
from scipy.signal import resample_poly

from tts_app.voice.matching.classmap import dtw_path
from tts_app.voice.training.decoder import HOP, HifiGanDecoder
from tts_app.voice.training.latents import text_latents
from tts_app.voice.training.losses import SAMPLE_RATE

N_MFCC = 19  # c1..c19: c0 (level) is left out, the two clips' loudness differs


@dataclass(frozen=True)
class TrainingPairs:
    z: np.ndarray  # [192, N] model latents warped onto the reference's N frames
    audio: np.ndarray  # [N * HOP] the reference at 22,050 Hz, cut to whole frames
    model_z: np.ndarray  # [192, T] the model's own latents for the transcript
    model_audio: np.ndarray  # [T * HOP] the released decoder's audio for them
    transcript: str

    @property
    def seconds(self) -> float:
        return len(self.audio) / SAMPLE_RATE


def to_model_rate(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    g = gcd(SAMPLE_RATE, int(sample_rate))
    out = resample_poly(np.asarray(audio, np.float64), SAMPLE_RATE // g, int(sample_rate) // g)
    return out.astype(np.float32)


def frame_features(audio: np.ndarray, frames: int) -> np.ndarray:
    """[frames, N_MFCC] normalised MFCCs, one per decoder hop."""
    import librosa  # lazy: training-time only

    mfcc = librosa.feature.mfcc(y=audio, sr=SAMPLE_RATE, n_mfcc=N_MFCC + 1, n_fft=1024, hop_length=HOP)[1:, :frames].T
    return (mfcc - mfcc.mean(axis=0)) / (mfcc.std(axis=0) + 1e-6)


def warp_index(ref_feats: np.ndarray, model_feats: np.ndarray) -> np.ndarray:
    """For each reference frame, the model frame DTW pairs it with (the median of its pairs)."""
    path = dtw_path(ref_feats, model_feats)
    out = np.empty(len(ref_feats), np.int64)
    for i in range(len(ref_feats)):  # the path is sorted by i, so each frame's pairs are one run
        lo, hi = np.searchsorted(path[:, 0], [i, i + 1])
        out[i] = int(np.median(path[lo:hi, 1]))
    return out


def build_pairs(audio: np.ndarray, sample_rate: int, transcript: str, decoder: HifiGanDecoder, seed: int = 0) -> TrainingPairs:
    """Training pairs from a reference clip and its transcript (``decoder``: the released one)."""
    ref = to_model_rate(audio, sample_rate)
    n = len(ref) // HOP
    ref = ref[: n * HOP]
    z = text_latents(transcript, seed=seed)
    with torch.no_grad():
        spoken = decoder(torch.from_numpy(z)[None])[0, 0].numpy()
    index = warp_index(frame_features(ref, n), frame_features(spoken, z.shape[1]))
    return TrainingPairs(np.ascontiguousarray(z[:, index]), ref, z, spoken, transcript)
