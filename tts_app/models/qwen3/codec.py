"""The 12 Hz codec decoder: G codebooks per frame -> 24 kHz waveform (one frame = ``samples_per_frame`` samples).

Everything in it is causal (left-padded convolutions, right-trimmed transposed convolutions,
a sliding-window causal transformer), so a chunk of new frames decoded with enough frames of
left context reproduces the whole-sequence output; ``decode_chunk`` is the streaming entry.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tts_app.models.qwen3.config import CodecConfig
from tts_app.models.layers.blocks import DecoderStack, LayerDims, causal_mask


class CausalConv1d(nn.Module):
    def __init__(self, cin: int, cout: int, kernel: int, dilation: int = 1, groups: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, kernel, dilation=dilation, groups=groups)
        self.left_pad = (kernel - 1) * dilation

    def forward(self, x_BxCxT: torch.Tensor) -> torch.Tensor:
        return self.conv(F.pad(x_BxCxT, (self.left_pad, 0)))


class CausalConvTranspose1d(nn.Module):
    def __init__(self, cin: int, cout: int, kernel: int, stride: int) -> None:
        super().__init__()
        self.conv = nn.ConvTranspose1d(cin, cout, kernel, stride=stride)
        self.trim = kernel - stride  # drop the tail that would depend on the next frame

    def forward(self, x_BxCxT: torch.Tensor) -> torch.Tensor:
        y = self.conv(x_BxCxT)
        return y[..., : y.shape[-1] - self.trim] if self.trim else y


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dwconv = CausalConv1d(dim, dim, 7, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(1e-6 * torch.ones(dim))

    def forward(self, x_BxCxT: torch.Tensor) -> torch.Tensor:
        y = self.norm(self.dwconv(x_BxCxT).transpose(1, 2))
        y = self.gamma * self.pwconv2(F.gelu(self.pwconv1(y)))
        return x_BxCxT + y.transpose(1, 2)


class SnakeBeta(nn.Module):
    """x + sin^2(a x) / b with a, b stored as logs."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.alpha = nn.Parameter(torch.zeros(channels))
        self.beta = nn.Parameter(torch.zeros(channels))

    def forward(self, x_BxCxT: torch.Tensor) -> torch.Tensor:
        a = self.alpha.exp()[None, :, None]
        b = self.beta.exp()[None, :, None]
        return x_BxCxT + torch.sin(x_BxCxT * a).pow(2) / (b + 1e-9)


class ResidualUnit(nn.Module):
    def __init__(self, dim: int, dilation: int) -> None:
        super().__init__()
        self.act1 = SnakeBeta(dim)
        self.conv1 = CausalConv1d(dim, dim, 7, dilation=dilation)
        self.act2 = SnakeBeta(dim)
        self.conv2 = CausalConv1d(dim, dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv2(self.act2(self.conv1(self.act1(x))))


class UpsampleBlock(nn.Module):
    def __init__(self, cin: int, cout: int, rate: int) -> None:
        super().__init__()
        self.block = nn.ModuleList(
            [SnakeBeta(cin), CausalConvTranspose1d(cin, cout, 2 * rate, rate)]
            + [ResidualUnit(cout, d) for d in (1, 3, 9)]
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.block:
            x = layer(x)
        return x


class Codebook(nn.Module):
    def __init__(self, size: int, dim: int) -> None:
        super().__init__()
        self.cluster_usage = nn.Parameter(torch.ones(size))
        self.embedding_sum = nn.Parameter(torch.zeros(size, dim))

    def forward(self, codes: torch.Tensor) -> torch.Tensor:
        table = self.embedding_sum / self.cluster_usage.clamp(min=1e-5)[:, None]
        return F.embedding(codes, table)


class _VQLayer(nn.Module):
    def __init__(self, size: int, dim: int) -> None:
        super().__init__()
        self._codebook = Codebook(size, dim)


class _VQStack(nn.Module):
    def __init__(self, n: int, size: int, dim: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(_VQLayer(size, dim) for _ in range(n))


class ResidualVQ(nn.Module):
    def __init__(self, n: int, size: int, dim: int, io_dim: int) -> None:
        super().__init__()
        self.vq = _VQStack(n, size, dim)
        self.input_proj = nn.Conv1d(io_dim, dim, 1, bias=False)  # encoder side; kept so checkpoints load whole
        self.output_proj = nn.Conv1d(dim, io_dim, 1, bias=False)

    def forward(self, codes_BxQxT: torch.Tensor) -> torch.Tensor:
        summed = sum(layer._codebook(codes_BxQxT[:, i]) for i, layer in enumerate(self.vq.layers))  # [B, T, dim]
        return self.output_proj(summed.transpose(1, 2))  # type: ignore[union-attr]


class SplitResidualVQ(nn.Module):
    """Codebook 0 (semantic) and codebooks 1.. (acoustic) have separate projections."""

    def __init__(self, cfg: CodecConfig) -> None:
        super().__init__()
        dim = cfg.codebook_dim // 2
        self.rvq_first = ResidualVQ(1, cfg.codebook_size, dim, cfg.codebook_dim)
        self.rvq_rest = ResidualVQ(cfg.num_quantizers - 1, cfg.codebook_size, dim, cfg.codebook_dim)

    def forward(self, codes_BxQxT: torch.Tensor) -> torch.Tensor:
        return self.rvq_first(codes_BxQxT[:, :1]) + self.rvq_rest(codes_BxQxT[:, 1:])


class CodecTransformer(DecoderStack):
    def __init__(self, cfg: CodecConfig) -> None:
        dims = LayerDims.of(cfg, qk_norm=False, layer_scale=cfg.layer_scale_initial_scale)
        super().__init__(cfg.num_hidden_layers, dims, cfg.rope_theta)
        self.window = cfg.sliding_window
        self.input_proj = nn.Linear(cfg.latent_dim, cfg.hidden_size)
        self.output_proj = nn.Linear(cfg.hidden_size, cfg.latent_dim)

    def run(self, x_BxTxC: torch.Tensor) -> torch.Tensor:
        B, T, _ = x_BxTxC.shape
        idx_BxT = torch.arange(T, device=x_BxTxC.device)[None].expand(B, T)
        mask = causal_mask(idx_BxT, T, torch.zeros(B, dtype=torch.long, device=x_BxTxC.device), self.window)
        return self.output_proj(self(self.input_proj(x_BxTxC), idx_BxT, mask))


class CodecDecoder(nn.Module):
    def __init__(self, cfg: CodecConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.quantizer = SplitResidualVQ(cfg)
        self.pre_conv = CausalConv1d(cfg.codebook_dim, cfg.latent_dim, 3)
        self.pre_transformer = CodecTransformer(cfg)
        self.upsample = nn.ModuleList(
            nn.ModuleList([CausalConvTranspose1d(cfg.latent_dim, cfg.latent_dim, r, r), ConvNeXtBlock(cfg.latent_dim)])
            for r in cfg.upsampling_ratios
        )
        layers: list[nn.Module] = [CausalConv1d(cfg.latent_dim, cfg.decoder_dim, 7)]
        for i, rate in enumerate(cfg.upsample_rates):
            layers.append(UpsampleBlock(cfg.decoder_dim // 2**i, cfg.decoder_dim // 2 ** (i + 1), rate))
        out_dim = cfg.decoder_dim // 2 ** len(cfg.upsample_rates)
        layers += [SnakeBeta(out_dim), CausalConv1d(out_dim, 1, 7)]
        self.decoder = nn.ModuleList(layers)

    @property
    def samples_per_frame(self) -> int:
        return self.cfg.samples_per_frame

    def forward(self, codes_BxQxT: torch.Tensor) -> torch.Tensor:
        """Waveform [B, T * samples_per_frame] in [-1, 1]."""
        h = self.pre_conv(self.quantizer(codes_BxQxT.clamp(min=0)))  # [B, latent, T]
        h = self.pre_transformer.run(h.transpose(1, 2)).transpose(1, 2)
        for blocks in self.upsample:
            for block in blocks:
                h = block(h)
        for layer in self.decoder:
            h = layer(h)
        return h[:, 0].clamp(-1.0, 1.0)

    def decode_chunk(self, codes_BxQxT: torch.Tensor, context_frames: int) -> torch.Tensor:
        """Waveform of the frames after the first ``context_frames`` (those only prime the causal state)."""
        return self(codes_BxQxT)[:, context_frames * self.samples_per_frame:]
