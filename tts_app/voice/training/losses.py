"""Spectral losses for decoder fine-tuning: multi-resolution STFT (spectral convergence + log
magnitude, as in Parallel WaveGAN) and log-mel L1 (as in HiFi-GAN). Written here rather than taken
from auraloss: two short functions do not justify a dependency."""

from __future__ import annotations

import numpy as np
import torch

SAMPLE_RATE = 22050
STFT_RESOLUTIONS = ((512, 128), (1024, 256), (2048, 512))  # (n_fft, hop), window = n_fft
MEL_BANDS, MEL_FFT, MEL_HOP = 80, 1024, 256


def _magnitude(x: torch.Tensor, n_fft: int, hop: int) -> torch.Tensor:
    window = torch.hann_window(n_fft, device=x.device)
    spec = torch.stft(x, n_fft, hop, window=window, return_complex=True, center=True)
    return spec.abs().clamp_min(1e-7)


def stft_loss(y: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean over resolutions of spectral convergence + L1 of log magnitudes; y, target [B, N]."""
    total = y.new_zeros(())
    for n_fft, hop in STFT_RESOLUTIONS:
        m, t = _magnitude(y, n_fft, hop), _magnitude(target, n_fft, hop)
        total = total + torch.linalg.norm(t - m) / torch.linalg.norm(t) + (m.log() - t.log()).abs().mean()
    return total / len(STFT_RESOLUTIONS)


class MelLoss:
    """L1 between log-mel spectrograms (80 bands, 0-8 kHz as HiFi-GAN trains)."""

    def __init__(self, sample_rate: int = SAMPLE_RATE) -> None:
        import librosa  # lazy: only the filterbank matrix comes from it

        fb = librosa.filters.mel(sr=sample_rate, n_fft=MEL_FFT, n_mels=MEL_BANDS, fmin=0.0, fmax=8000.0)
        self.filterbank = torch.from_numpy(np.asarray(fb, np.float32))

    def log_mel(self, x: torch.Tensor) -> torch.Tensor:
        return (self.filterbank @ _magnitude(x, MEL_FFT, MEL_HOP)).clamp_min(1e-5).log()

    def __call__(self, y: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return (self.log_mel(y) - self.log_mel(target)).abs().mean()
