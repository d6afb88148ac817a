"""Mimi's causal convolutions and SEANet encoder/decoder (pocket_tts/modules/{conv,seanet,resample}.py).

Module trees and attribute names match the checkpoint keys (``decoder.model.{i}.convtr.weight``,
``encoder.model.{i}.block.{j}.conv.weight`` ...). Streaming: a conv keeps the last ``kernel - stride``
input samples of its row and a transposed conv the ``kernel - stride`` overlap of its last output, in
a ``StreamCall`` (see stream_state); with ``call=None`` a pass starts from zeros (the encoder, which
the official code runs statelessly on the whole clip).
"""

from __future__ import annotations

from typing import Optional, Sequence

import torch
from torch import nn

from tts_app.models.pocket_tts.stream_state import StreamBuffers, StreamCall


class StreamingConv1d(nn.Module):
    def __init__(self, bufs: Optional[StreamBuffers], c_in: int, c_out: int, kernel: int, stride: int = 1,
                 dilation: int = 1, groups: int = 1, bias: bool = True, pad_mode: str = "constant") -> None:
        super().__init__()
        self.conv = nn.Conv1d(c_in, c_out, kernel, stride, dilation=dilation, groups=groups, bias=bias)
        self.pad_mode = pad_mode
        self.tail = (kernel - 1) * dilation + 1 - stride
        self.sid = bufs.add((c_in, self.tail)) if bufs is not None and self.tail else -1

    def forward(self, x_BxCxT: torch.Tensor, call: Optional[StreamCall]) -> torch.Tensor:
        if not self.tail:
            return self.conv(x_BxCxT)
        if call is None:  # stateless: the official init_state zeros, or the first sample for "replicate"
            prev = x_BxCxT[..., :1].expand(-1, -1, self.tail) if self.pad_mode == "replicate" else x_BxCxT.new_zeros(
                x_BxCxT.shape[0], x_BxCxT.shape[1], self.tail)
        else:
            prev = call.get(self.sid)
        x = torch.cat([prev, x_BxCxT], dim=-1)
        if call is not None:
            call.put(self.sid, x[..., -self.tail:])
        return self.conv(x)


class StreamingConvTranspose1d(nn.Module):
    def __init__(self, bufs: Optional[StreamBuffers], c_in: int, c_out: int, kernel: int, stride: int,
                 groups: int = 1, bias: bool = True) -> None:
        super().__init__()
        self.convtr = nn.ConvTranspose1d(c_in, c_out, kernel, stride, groups=groups, bias=bias)
        self.overlap = kernel - stride
        self.sid = bufs.add((c_out, self.overlap)) if bufs is not None else -1

    def forward(self, x_BxCxT: torch.Tensor, call: StreamCall) -> torch.Tensor:
        y = self.convtr(x_BxCxT)
        n = self.overlap
        if not n:
            return y
        head = y[..., :n] + call.get(self.sid)
        tail = y[..., -n:]
        if self.convtr.bias is not None:
            tail = tail - self.convtr.bias[:, None]
        call.put(self.sid, tail)
        return torch.cat([head, y[..., n:-n]], dim=-1)


class ResnetBlock(nn.Module):
    def __init__(self, bufs: Optional[StreamBuffers], dim: int, kernel: int, dilation: int, pad_mode: str, compress: int) -> None:
        super().__init__()
        hidden = dim // compress
        self.block = nn.ModuleList([
            nn.ELU(alpha=1.0), StreamingConv1d(bufs, dim, hidden, kernel, dilation=dilation, pad_mode=pad_mode),
            nn.ELU(alpha=1.0), StreamingConv1d(bufs, hidden, dim, 1, pad_mode=pad_mode),
        ])

    def forward(self, x: torch.Tensor, call: Optional[StreamCall]) -> torch.Tensor:
        return x + _run(self.block, x, call)


def _run(layers: Sequence[nn.Module], x: torch.Tensor, call: Optional[StreamCall]) -> torch.Tensor:
    for layer in layers:
        x = layer(x) if isinstance(layer, nn.ELU) else layer(x, call)
    return x


class SEANetEncoder(nn.Module):
    """Stateless here: the official code encodes the whole voice clip in one pass from zeros."""

    def __init__(self, dimension: int, n_filters: int, n_residual_layers: int, ratios: Sequence[int], kernel_size: int,
                 last_kernel_size: int, residual_kernel_size: int, dilation_base: int, pad_mode: str, compress: int) -> None:
        super().__init__()
        mult = 1
        model: list[nn.Module] = [StreamingConv1d(None, 1, n_filters, kernel_size, pad_mode=pad_mode)]
        for ratio in reversed(ratios):
            model += [ResnetBlock(None, mult * n_filters, residual_kernel_size, dilation_base**j, pad_mode, compress)
                      for j in range(n_residual_layers)]
            model += [nn.ELU(alpha=1.0),
                      StreamingConv1d(None, mult * n_filters, mult * n_filters * 2, ratio * 2, stride=ratio, pad_mode=pad_mode)]
            mult *= 2
        model += [nn.ELU(alpha=1.0), StreamingConv1d(None, mult * n_filters, dimension, last_kernel_size, pad_mode=pad_mode)]
        self.model = nn.ModuleList(model)

    def forward(self, x_Bx1xT: torch.Tensor) -> torch.Tensor:
        return _run(self.model, x_Bx1xT, None)


class SEANetDecoder(nn.Module):
    def __init__(self, bufs: StreamBuffers, dimension: int, n_filters: int, n_residual_layers: int, ratios: Sequence[int],
                 kernel_size: int, last_kernel_size: int, residual_kernel_size: int, dilation_base: int, pad_mode: str,
                 compress: int) -> None:
        super().__init__()
        mult = 2 ** len(ratios)
        model: list[nn.Module] = [StreamingConv1d(bufs, dimension, mult * n_filters, kernel_size, pad_mode=pad_mode)]
        for ratio in ratios:
            model += [nn.ELU(alpha=1.0),
                      StreamingConvTranspose1d(bufs, mult * n_filters, mult * n_filters // 2, ratio * 2, ratio)]
            model += [ResnetBlock(bufs, mult * n_filters // 2, residual_kernel_size, dilation_base**j, pad_mode, compress)
                      for j in range(n_residual_layers)]
            mult //= 2
        model += [nn.ELU(alpha=1.0), StreamingConv1d(bufs, n_filters, 1, last_kernel_size, pad_mode=pad_mode)]
        self.model = nn.ModuleList(model)

    def forward(self, z_BxCxT: torch.Tensor, call: StreamCall) -> torch.Tensor:
        return _run(self.model, z_BxCxT, call)
