"""Which of the decoder's weights a fine-tuning run may change.

- "all": every weight; "late": the second and third upsampling stages and conv_post;
- "lora<r>": every convolution's weight gets a rank-r update B @ A (B starts at zero, so training
  starts from the released decoder exactly); merged back into plain weights afterwards, so the
  adapted decoder has the stock graph and the stock speed.
"""

from __future__ import annotations

import re

import torch
from torch import nn
from torch.nn.utils import parametrize

_LATE = re.compile(r"^(ups\.[12]|resblocks\.[3-8]|conv_post)\.")


class LowRankDelta(nn.Module):
    """weight + (B @ A) reshaped to the weight's shape; rows = the weight's first axis."""

    def __init__(self, shape: torch.Size, rank: int) -> None:
        super().__init__()
        rows, cols = shape[0], int(torch.Size(shape[1:]).numel())
        self.a = nn.Parameter(torch.randn(rank, cols) / cols**0.5)
        self.b = nn.Parameter(torch.zeros(rows, rank))

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        return weight + (self.b @ self.a).view_as(weight)


def trainable(decoder: nn.Module, scheme: str) -> list[nn.Parameter]:
    """Freeze the decoder except what ``scheme`` adapts; returns the parameters to optimise."""
    for p in decoder.parameters():
        p.requires_grad_(False)
    if scheme == "all":
        params = list(decoder.parameters())
    elif scheme == "late":
        params = [p for name, p in decoder.named_parameters() if _LATE.match(name)]
    elif m := re.fullmatch(r"lora(\d+)", scheme):
        params = []
        for module in decoder.modules():
            if isinstance(module, (nn.Conv1d, nn.ConvTranspose1d)) and module.weight.shape[0] > 1:
                delta = LowRankDelta(module.weight.shape, int(m.group(1)))
                parametrize.register_parametrization(module, "weight", delta)
                params += [delta.a, delta.b]
    else:
        raise ValueError(f"unknown adapter scheme {scheme!r}: all, late or lora<rank>")
    for p in params:
        p.requires_grad_(True)
    return params


def merge(decoder: nn.Module) -> nn.Module:
    """Fold any low-rank updates into plain weights (same module layout as the released decoder)."""
    for module in decoder.modules():
        if parametrize.is_parametrized(module, "weight"):
            parametrize.remove_parametrizations(module, "weight", leave_parametrized=True)
    for p in decoder.parameters():
        p.requires_grad_(False)
    return decoder
