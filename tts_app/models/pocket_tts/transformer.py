"""The transformer blocks of the flow LM and of Mimi (pocket_tts/modules/{transformer,attention,rope}.py).

Attribute names match the checkpoint keys (``self_attn.in_proj``, ``norm1``, ``linear1``,
``layer_scale_1.scale`` ...). Where the official code keeps one position per batch (its cache offset
must be equal across rows), every row here has its own positions ``pos_BxT``: the caller's cache
(``KVStore``) writes the new keys and returns what each row attends to, with the mask.
"""

from __future__ import annotations

import math
from typing import Optional, Protocol

import torch
import torch.nn.functional as F
from torch import nn

from tts_app.models.layers.small_gemm import Linear


class KVStore(Protocol):
    def attend(self, layer: int, k_BxHxTxD: torch.Tensor, v_BxHxTxD: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Store the new keys/values; return (keys [B,H,S,D], values, mask [B,1,T,S])."""
        ...


def rope_tables(pos_BxT: torch.Tensor, dim: int, max_period: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin of [B, T, 1, dim/2] for interleaved (real, imag) pairs, in float32 as the official apply_rope."""
    ds = torch.arange(dim // 2, device=pos_BxT.device, dtype=torch.float32)
    freqs = torch.exp(ds * (-math.log(max_period) * 2 / dim))
    angles = freqs * pos_BxT.to(torch.float32)[..., None, None]
    return torch.cos(angles), torch.sin(angles)


def apply_rope(x_BxTxHxD: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    b, t, h, d = x_BxTxHxD.shape
    x = x_BxTxHxD.view(b, t, h, d // 2, 2).float()
    xr, xi = x[..., 0], x[..., 1]
    out = torch.stack([xr * cos - xi * sin, xr * sin + xi * cos], dim=-1)
    return out.to(x_BxTxHxD.dtype).view(b, t, h, d)


class LayerScale(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scale * x


class Attention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, attn_dim: int, num_kv_heads: int, max_period: float) -> None:
        super().__init__()
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.attn_dim, self.head_dim = attn_dim, attn_dim // num_heads
        self.max_period = max_period
        kv_dim = self.head_dim * num_kv_heads
        self.in_proj = Linear(d_model, attn_dim + 2 * kv_dim, bias=False)
        self.out_proj = Linear(attn_dim, d_model, bias=False)

    def forward(self, x_BxTxC: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor], store: KVStore, layer: int,
                keep_B: Optional[torch.Tensor] = None) -> torch.Tensor:
        """[B, T, C]; with ``keep_B``, [B, 1, C] of each row's position ``keep_B[b]`` only (every key still stored)."""
        b, t, _ = x_BxTxC.shape
        d = self.head_dim
        proj = self.in_proj(x_BxTxC)
        q = proj[..., : self.attn_dim].view(b, t, self.num_heads, d)
        k, v = proj[..., self.attn_dim :].view(b, t, 2, self.num_kv_heads, d).unbind(dim=2)
        q, k = apply_rope(q, *rope), apply_rope(k, *rope)
        keys, values, mask = store.attend(layer, k.transpose(1, 2), v.transpose(1, 2))
        if keep_B is not None:
            rows = torch.arange(b, device=keep_B.device)
            q = q[rows, keep_B][:, None]  # [B, 1, H, D]
            mask = mask.expand(b, -1, t, -1)[rows, :, keep_B][:, :, None]  # [B, 1, 1, S]
            t = 1
        if self.num_kv_heads != self.num_heads:
            rep = self.num_heads // self.num_kv_heads
            keys, values = keys.repeat_interleave(rep, dim=1), values.repeat_interleave(rep, dim=1)
        windowed = getattr(store, "attention", None)  # a clip's whole-sequence encode: its window's keys only
        if windowed is not None and keep_B is None:
            out = windowed(q.transpose(1, 2), keys, values)
        else:
            out = F.scaled_dot_product_attention(q.transpose(1, 2), keys, values, mask)
        return self.out_proj(out.transpose(1, 2).reshape(b, t, self.attn_dim))


class TransformerLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dim_feedforward: int, max_period: float,
                 layer_scale: bool = False, attn_dim: Optional[int] = None, num_kv_heads: Optional[int] = None) -> None:
        super().__init__()
        self.self_attn = Attention(d_model, num_heads, attn_dim or d_model, num_kv_heads or num_heads, max_period)
        self.norm1 = nn.LayerNorm(d_model, eps=1e-5)
        self.norm2 = nn.LayerNorm(d_model, eps=1e-5)
        self.linear1 = Linear(d_model, dim_feedforward, bias=False)
        self.linear2 = Linear(dim_feedforward, d_model, bias=False)
        self.layer_scale_1: nn.Module = LayerScale(d_model) if layer_scale else nn.Identity()
        self.layer_scale_2: nn.Module = LayerScale(d_model) if layer_scale else nn.Identity()

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor], store: KVStore, layer: int,
                keep_B: Optional[torch.Tensor] = None) -> torch.Tensor:
        attn = self.self_attn(self.norm1(x), rope, store, layer, keep_B)
        if keep_B is not None:  # the residual and the feed-forward of the kept positions only
            x = x[torch.arange(x.shape[0], device=keep_B.device), keep_B][:, None]
        x = x + self.layer_scale_1(attn)
        return x + self.layer_scale_2(self.linear2(F.gelu(self.linear1(self.norm2(x)), approximate="tanh")))


class Transformer(nn.Module):
    """``layers.{i}``: a stack sharing one rotary table per call."""

    def __init__(self, num_layers: int, d_model: int, num_heads: int, dim_feedforward: int, max_period: float,
                 layer_scale: bool = False, attn_dim: Optional[int] = None, num_kv_heads: Optional[int] = None) -> None:
        super().__init__()
        self.head_dim = (attn_dim or d_model) // num_heads
        self.max_period = max_period
        self.layers = nn.ModuleList(
            TransformerLayer(d_model, num_heads, dim_feedforward, max_period, layer_scale, attn_dim, num_kv_heads)
            for _ in range(num_layers)
        )

    def forward(self, x_BxTxC: torch.Tensor, pos_BxT: torch.Tensor, store: KVStore,
                keep_B: Optional[torch.Tensor] = None) -> torch.Tensor:
        """[B, T, C]; with ``keep_B``, [B, 1, C]: the output at row b's position ``keep_B[b]`` alone. Every layer still
        stores every position's keys/values, but the last one attends and feeds forward for the kept positions only
        (a prefill needs the text's keys and one hidden state per row, not the text's outputs)."""
        rope = rope_tables(pos_BxT, self.head_dim, self.max_period)
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            x_BxTxC = layer(x_BxTxC, rope, store, i, keep_B if i == last else None)
        return x_BxTxC


class CausalWindow:
    """A stateless store: each row attends to its own new tokens, causally, within ``context`` (None: unlimited)."""

    def __init__(self, t: int, context: Optional[int], device: torch.device) -> None:
        self.context = context
        pos = torch.arange(t, device=device)
        delta = pos[:, None] - pos[None, :]
        mask = delta >= 0
        if context is not None:
            mask = mask & (delta < context)
        self.mask = mask[None, None]  # [1, 1, T, T]

    def attend(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return k, v, self.mask

    def attention(self, q_BxHxTxD: torch.Tensor, k_BxHxTxD: torch.Tensor, v_BxHxTxD: torch.Tensor) -> torch.Tensor:
        """Causal attention within ``context``, a block of queries at a time over the keys its window can reach: a
        10 s clip's 2,000 frames with a 250-frame context attend to at most 2 x 250 keys a query, not 2,000 (the
        keys left out are masked anyway: the same sums, less the zeros)."""
        t = q_BxHxTxD.shape[2]
        if self.context is None or t <= 2 * self.context:
            return F.scaled_dot_product_attention(q_BxHxTxD, k_BxHxTxD, v_BxHxTxD, self.mask)
        out = torch.empty_like(q_BxHxTxD)
        for start in range(0, t, self.context):
            end, low = min(t, start + self.context), max(0, start - self.context + 1)
            out[:, :, start:end] = F.scaled_dot_product_attention(
                q_BxHxTxD[:, :, start:end], k_BxHxTxD[:, :, low:end], v_BxHxTxD[:, :, low:end], self.mask[..., start:end, low:end])
        return out
