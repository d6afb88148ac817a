"""ECAPA-TDNN speaker encoder of the Base checkpoints: reference audio -> x-vector in the talker's width."""

from __future__ import annotations

import logging
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from tts_app.models.qwen3.config import SpeakerEncoderConfig

logger = logging.getLogger(__name__)


def slaney_mel_filterbank(sr: int, n_fft: int, n_mels: int, fmin: float, fmax: float) -> np.ndarray:
    """[n_mels, n_fft // 2 + 1] triangular filters on the Slaney mel scale, area-normalised (as librosa's default)."""

    def hz_to_mel(f: np.ndarray) -> np.ndarray:
        f = np.asarray(f, dtype=np.float64)
        lin = f / (200.0 / 3)
        log_part = 15.0 + np.log(np.maximum(f, 1e-10) / 1000.0) / (math.log(6.4) / 27.0)
        return np.where(f >= 1000.0, log_part, lin)

    def mel_to_hz(m: np.ndarray) -> np.ndarray:
        lin = m * (200.0 / 3)
        log_part = 1000.0 * np.exp((math.log(6.4) / 27.0) * (m - 15.0))
        return np.where(m >= 15.0, log_part, lin)

    fft_freqs = np.linspace(0, sr / 2, 1 + n_fft // 2)
    mel_pts = mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2))
    fdiff = np.diff(mel_pts)
    ramps = mel_pts[:, None] - fft_freqs[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    weights *= (2.0 / (mel_pts[2:n_mels + 2] - mel_pts[:n_mels]))[:, None]
    return weights.astype(np.float32)


def log_mel(audio_N: torch.Tensor, sr: int, n_mels: int, n_fft: int = 1024, hop: int = 256) -> torch.Tensor:
    """[1, frames, n_mels] log-mel of a mono waveform (reflect padding, no centring)."""
    fb = torch.from_numpy(slaney_mel_filterbank(sr, n_fft, n_mels, 0.0, sr / 2)).to(audio_N.device)
    pad = (n_fft - hop) // 2
    x = F.pad(audio_N[None, None], (pad, pad), mode="reflect")[0]
    spec = torch.stft(
        x, n_fft, hop_length=hop, win_length=n_fft, window=torch.hann_window(n_fft, device=audio_N.device),
        center=False, return_complex=True,
    )
    mag = torch.sqrt(spec.real.pow(2) + spec.imag.pow(2) + 1e-9)  # [1, F, frames]
    return torch.log(torch.clamp(fb @ mag, min=1e-5)).transpose(1, 2)


class TDNNBlock(nn.Module):
    def __init__(self, cin: int, cout: int, kernel: int, dilation: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, kernel, dilation=dilation, padding="same", padding_mode="reflect")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.conv(x))


class Res2NetBlock(nn.Module):
    def __init__(self, channels: int, scale: int, kernel: int, dilation: int) -> None:
        super().__init__()
        self.scale = scale
        self.blocks = nn.ModuleList(TDNNBlock(channels // scale, channels // scale, kernel, dilation) for _ in range(scale - 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts = list(torch.chunk(x, self.scale, dim=1))
        out = [parts[0]]
        prev = None
        for i, block in enumerate(self.blocks, start=1):
            prev = block(parts[i] if prev is None else parts[i] + prev)
            out.append(prev)
        return torch.cat(out, dim=1)


class SEBlock(nn.Module):
    def __init__(self, channels: int, se_channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv1d(channels, se_channels, 1)
        self.conv2 = nn.Conv1d(se_channels, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = torch.sigmoid(self.conv2(F.relu(self.conv1(x.mean(dim=2, keepdim=True)))))
        return x * s


class SERes2NetBlock(nn.Module):
    def __init__(self, cin: int, cout: int, scale: int, se_channels: int, kernel: int, dilation: int) -> None:
        super().__init__()
        self.tdnn1 = TDNNBlock(cin, cout, 1, 1)
        self.res2net_block = Res2NetBlock(cout, scale, kernel, dilation)
        self.tdnn2 = TDNNBlock(cout, cout, 1, 1)
        self.se_block = SEBlock(cout, se_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.se_block(self.tdnn2(self.res2net_block(self.tdnn1(x))))


def _weighted_stats(x_BxCxT: torch.Tensor, w: torch.Tensor, eps: float = 1e-12) -> tuple[torch.Tensor, torch.Tensor]:
    mean = (w * x_BxCxT).sum(dim=2)
    std = torch.sqrt((w * (x_BxCxT - mean[..., None]).pow(2)).sum(dim=2).clamp(min=eps))
    return mean, std


class AttentiveStatsPool(nn.Module):
    def __init__(self, channels: int, attention_channels: int) -> None:
        super().__init__()
        self.tdnn = TDNNBlock(channels * 3, attention_channels, 1, 1)
        self.conv = nn.Conv1d(attention_channels, channels, 1)

    def forward(self, x_BxCxT: torch.Tensor) -> torch.Tensor:
        T = x_BxCxT.shape[-1]
        mean, std = _weighted_stats(x_BxCxT, torch.full_like(x_BxCxT[:, :1], 1.0 / T))
        ctx = torch.cat((x_BxCxT, mean[..., None].expand(-1, -1, T), std[..., None].expand(-1, -1, T)), dim=1)
        attn = torch.softmax(self.conv(torch.tanh(self.tdnn(ctx))), dim=2)
        mean, std = _weighted_stats(x_BxCxT, attn)
        return torch.cat((mean, std), dim=1)[..., None]  # [B, 2C, 1]


class SpeakerEncoder(nn.Module):
    def __init__(self, cfg: SpeakerEncoderConfig) -> None:
        super().__init__()
        self.cfg = cfg
        ch, ks, dil = cfg.enc_channels, cfg.enc_kernel_sizes, cfg.enc_dilations
        blocks: list[nn.Module] = [TDNNBlock(cfg.mel_dim, ch[0], ks[0], dil[0])]
        for i in range(1, len(ch) - 1):
            blocks.append(SERes2NetBlock(ch[i - 1], ch[i], cfg.enc_res2net_scale, cfg.enc_se_channels, ks[i], dil[i]))
        self.blocks = nn.ModuleList(blocks)
        self.mfa = TDNNBlock(ch[-1], ch[-1], ks[-1], dil[-1])
        self.asp = AttentiveStatsPool(ch[-1], cfg.enc_attention_channels)
        self.fc = nn.Conv1d(ch[-1] * 2, cfg.enc_dim, 1)

    def forward(self, mel_BxTxM: torch.Tensor) -> torch.Tensor:
        x = mel_BxTxM.transpose(1, 2)
        outs = []
        for block in self.blocks:
            x = block(x)
            outs.append(x)
        x = self.mfa(torch.cat(outs[1:], dim=1))
        return self.fc(self.asp(x))[..., 0]  # [B, enc_dim]

    @torch.inference_mode()
    def embed_audio(self, audio: np.ndarray, sample_rate: int) -> torch.Tensor:
        """x-vector [enc_dim] of a mono float waveform at any rate (resampled to the encoder's rate)."""
        audio = np.asarray(audio, dtype=np.float32).reshape(-1)
        if sample_rate != self.cfg.sample_rate:
            from scipy.signal import resample_poly  # scipy is a base dependency; imported only when needed

            g = math.gcd(int(sample_rate), self.cfg.sample_rate)
            audio = resample_poly(audio, self.cfg.sample_rate // g, int(sample_rate) // g).astype(np.float32)
        audio = np.clip(audio, -1.0, 1.0)
        p = next(self.parameters())
        mel = log_mel(torch.from_numpy(audio).to(p.device), self.cfg.sample_rate, self.cfg.mel_dim)
        return self(mel.to(p.dtype))[0]
