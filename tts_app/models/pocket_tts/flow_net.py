"""The flow head: an MLP with adaptive layer norm mapping (condition, times, noise) to a latent
(pocket_tts/modules/mlp.py ``SimpleMLPAdaLN``), sampled by one-step Lagrangian Self Distillation.

Attribute names match the checkpoint keys under ``flow_lm.flow_net.``. Rows are independent: a
batch of rows gives each row what it gives alone.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from tts_app.models.layers.small_gemm import Linear


def _modulate(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return x * (1 + scale) + shift


class RMSNorm(nn.Module):
    """The official RMSNorm divides by the (unbiased) variance, not the mean square: kept as is."""

    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.alpha = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        var = self.eps + x.var(dim=-1, keepdim=True)
        return (x * (self.alpha.to(var) * torch.rsqrt(var))).to(x.dtype)


class LayerNorm(nn.Module):
    def __init__(self, channels: int, eps: float = 1e-6, affine: bool = True) -> None:
        super().__init__()
        self.eps = eps
        if affine:
            self.weight = nn.Parameter(torch.ones(channels))
            self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, unbiased=False, keepdim=True)
        x = (x - mean) / torch.sqrt(var + self.eps)
        return x * self.weight + self.bias if hasattr(self, "weight") else x


class TimestepEmbedder(nn.Module):
    freqs: torch.Tensor

    def __init__(self, hidden: int, freq_size: int = 256, max_period: int = 10000) -> None:
        super().__init__()
        self.mlp = nn.Sequential(Linear(freq_size, hidden), nn.SiLU(), Linear(hidden, hidden), RMSNorm(hidden))
        half = freq_size // 2
        self.register_buffer("freqs", torch.exp(-math.log(max_period) * torch.arange(start=0, end=half) / half))

    def forward(self, t_Bx1: torch.Tensor) -> torch.Tensor:
        args = t_Bx1 * self.freqs.to(t_Bx1.dtype)
        return self.mlp(torch.cat([torch.cos(args), torch.sin(args)], dim=-1))


class ResBlock(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.in_ln = LayerNorm(channels, eps=1e-6)
        self.mlp = nn.Sequential(Linear(channels, channels), nn.SiLU(), Linear(channels, channels))
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), Linear(channels, 3 * channels))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        shift, scale, gate = self.adaLN_modulation(y).chunk(3, dim=-1)
        return x + gate * self.mlp(_modulate(self.in_ln(x), shift, scale))


class FinalLayer(nn.Module):
    def __init__(self, channels: int, out_channels: int) -> None:
        super().__init__()
        self.norm_final = LayerNorm(channels, eps=1e-6, affine=False)
        self.linear = Linear(channels, out_channels)
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), Linear(channels, 2 * channels))

    def forward(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        shift, scale = self.adaLN_modulation(c).chunk(2, dim=-1)
        return self.linear(_modulate(self.norm_final(x), shift, scale))


class FlowNet(nn.Module):
    """Two time conditions (start, target), as the LSD heads of the released models."""

    def __init__(self, latent_dim: int, channels: int, cond_dim: int, depth: int) -> None:
        super().__init__()
        self.time_embed = nn.ModuleList([TimestepEmbedder(channels) for _ in range(2)])
        self.cond_embed = Linear(cond_dim, channels)
        self.input_proj = Linear(latent_dim, channels)
        self.res_blocks = nn.ModuleList(ResBlock(channels) for _ in range(depth))
        self.final_layer = FinalLayer(channels, latent_dim)

    def forward(self, c_BxC: torch.Tensor, s_Bx1: torch.Tensor, t_Bx1: torch.Tensor, x_BxL: torch.Tensor) -> torch.Tensor:
        x = self.input_proj(x_BxL)
        y = self.cond_embed(c_BxC)
        y = y + sum(emb(t) for emb, t in zip(self.time_embed, (s_Bx1, t_Bx1))) / 2
        for block in self.res_blocks:
            x = block(x, y)
        return self.final_layer(x, y)

    def sample(self, c_BxC: torch.Tensor, noise_BxL: torch.Tensor) -> torch.Tensor:
        """One LSD step from time 0 to 1: the noise plus the flow (sampler_decode_steps=1, the official default)."""
        ones = torch.ones_like(noise_BxL[..., :1])
        return noise_BxL + self(c_BxC, 0.0 * ones, ones, noise_BxL)
