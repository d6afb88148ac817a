"""Transformer blocks shared by the talker, the code predictor and the codec decoder.

Attribute names match the checkpoint keys (``self_attn.q_proj``, ``mlp.gate_proj``,
``input_layernorm`` ...) so a state dict loads without renaming.

KV-cache convention: a layer gets ``kv`` = (k_cache, v_cache), each [B, Hkv, S, Dh], and
``write_idx_BxT`` = the cache index each new token goes to; it writes the new keys there and
attends over ``kv[..., :attend_len, :]`` under ``mask_Bx1xTxS``. Without a cache it attends
over the new tokens only. One code path serves prefill and decode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import torch
import torch.nn.functional as F
from torch import nn

KV = tuple[torch.Tensor, torch.Tensor]


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Normalise in float32 (bf16 variance loses too much), scale in the input dtype.
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x32.to(x.dtype)


def llama3_inv_freq(inv_freq: torch.Tensor, scaling: dict[str, Any]) -> torch.Tensor:
    """Llama 3's frequency scaling (``rope_type: llama3``): long wavelengths slowed by ``factor``, a smooth band between."""
    factor, low, high = float(scaling["factor"]), float(scaling["low_freq_factor"]), float(scaling["high_freq_factor"])
    old_len = float(scaling["original_max_position_embeddings"])
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > old_len / low, inv_freq / factor, inv_freq)
    smooth = (old_len / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < old_len / high) & ~(wavelen > old_len / low)
    return torch.where(medium, smoothed, scaled)


class Rotary(nn.Module):
    """Standard RoPE (optionally Llama 3 scaled). The talker's multimodal RoPE reduces to this: its three position streams are equal for speech."""

    def __init__(self, head_dim: int, theta: float, scaling: Optional[dict[str, Any]] = None) -> None:
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        if scaling is not None:
            if scaling.get("rope_type", scaling.get("type")) != "llama3":
                raise ValueError(f"unsupported RoPE scaling {scaling!r}")
            inv_freq = llama3_inv_freq(inv_freq, scaling)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, positions_BxT: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        freqs_BxTxH = positions_BxT.float()[..., None] * self.inv_freq  # [B, T, Dh/2]
        emb = torch.cat((freqs_BxTxH, freqs_BxTxH), dim=-1)  # [B, T, Dh]
        return emb.cos().to(dtype)[:, None], emb.sin().to(dtype)[:, None]  # [B, 1, T, Dh]


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x_BxHxTxD: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return x_BxHxTxD * cos + _rotate_half(x_BxHxTxD) * sin


class Attention(nn.Module):
    def __init__(
        self, hidden: int, heads: int, kv_heads: int, head_dim: int, bias: bool, qk_norm: bool, eps: float
    ) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.q_proj = nn.Linear(hidden, heads * head_dim, bias=bias)
        self.k_proj = nn.Linear(hidden, kv_heads * head_dim, bias=bias)
        self.v_proj = nn.Linear(hidden, kv_heads * head_dim, bias=bias)
        self.o_proj = nn.Linear(heads * head_dim, hidden, bias=bias)
        self.q_norm: nn.Module = RMSNorm(head_dim, eps) if qk_norm else nn.Identity()
        self.k_norm: nn.Module = RMSNorm(head_dim, eps) if qk_norm else nn.Identity()

    def forward(
        self,
        x_BxTxD: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        mask_Bx1xTxS: torch.Tensor,
        kv: Optional[KV] = None,
        write_idx_BxT: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        B, T, _ = x_BxTxD.shape
        q = self.q_norm(self.q_proj(x_BxTxD).view(B, T, self.heads, self.head_dim)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x_BxTxD).view(B, T, self.kv_heads, self.head_dim)).transpose(1, 2)
        v = self.v_proj(x_BxTxD).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)  # [B, H, T, Dh]
        if kv is not None:
            k_cache, v_cache = kv  # [B, Hkv, S, Dh]
            rows_BxT = torch.arange(B, device=x_BxTxD.device)[:, None].expand(B, T)
            # Advanced indices around a slice put the indexed dims first: value is [B, T, Hkv, Dh].
            k_cache[rows_BxT, :, write_idx_BxT] = k.transpose(1, 2)
            v_cache[rows_BxT, :, write_idx_BxT] = v.transpose(1, 2)
            S = mask_Bx1xTxS.shape[-1]
            k, v = k_cache[:, :, :S], v_cache[:, :, :S]
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask_Bx1xTxS, enable_gqa=self.heads != self.kv_heads)
        return self.o_proj(out.transpose(1, 2).reshape(B, T, self.heads * self.head_dim))


class SwiGLU(nn.Module):
    def __init__(self, hidden: int, intermediate: int) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LayerScale(nn.Module):
    def __init__(self, dim: int, init: float) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.full((dim,), init))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scale * x


@dataclass(frozen=True)
class LayerDims:
    """What one decoder layer is built from; ``layer_scale`` adds the codec decoder's residual scales."""

    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    eps: float
    bias: bool = False
    qk_norm: bool = True
    layer_scale: Optional[float] = None

    @classmethod
    def of(cls, cfg: Any, **options: Any) -> "LayerDims":
        """From a config with the checkpoint's key names (``hidden_size``, ``num_attention_heads`` ...)."""
        return cls(
            cfg.hidden_size, cfg.intermediate_size, cfg.num_attention_heads, cfg.num_key_value_heads,
            cfg.head_dim, cfg.rms_norm_eps, cfg.attention_bias, **options,
        )


class DecoderLayer(nn.Module):
    """Pre-norm attention + SwiGLU block."""

    def __init__(self, d: LayerDims) -> None:
        super().__init__()
        self.self_attn = Attention(d.hidden, d.heads, d.kv_heads, d.head_dim, d.bias, d.qk_norm, d.eps)
        self.mlp = SwiGLU(d.hidden, d.intermediate)
        self.input_layernorm = RMSNorm(d.hidden, d.eps)
        self.post_attention_layernorm = RMSNorm(d.hidden, d.eps)
        if d.layer_scale is not None:
            self.self_attn_layer_scale: nn.Module = LayerScale(d.hidden, d.layer_scale)
            self.mlp_layer_scale: nn.Module = LayerScale(d.hidden, d.layer_scale)
        else:
            self.self_attn_layer_scale = nn.Identity()
            self.mlp_layer_scale = nn.Identity()

    def forward(
        self,
        x_BxTxD: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        mask_Bx1xTxS: torch.Tensor,
        kv: Optional[KV] = None,
        write_idx_BxT: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        a = self.self_attn(self.input_layernorm(x_BxTxD), cos, sin, mask_Bx1xTxS, kv, write_idx_BxT)
        x_BxTxD = x_BxTxD + self.self_attn_layer_scale(a)
        return x_BxTxD + self.mlp_layer_scale(self.mlp(self.post_attention_layernorm(x_BxTxD)))


class DecoderStack(nn.Module):
    """``layers`` + final ``norm`` + RoPE: the backbone of the talker, the code predictor, the codec and Chatterbox's T3."""

    def __init__(
        self, num_layers: int, dims: LayerDims, rope_theta: float, rope_scaling: Optional[dict[str, Any]] = None
    ) -> None:
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(dims) for _ in range(num_layers))
        self.norm = RMSNorm(dims.hidden, dims.eps)
        self.rotary = Rotary(dims.head_dim, rope_theta, rope_scaling)

    def forward(
        self,
        h_BxTxD: torch.Tensor,
        positions_BxT: torch.Tensor,
        mask_Bx1xTxS: torch.Tensor,
        kv_per_layer: Optional[list[KV]] = None,
        write_idx_BxT: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        cos, sin = self.rotary(positions_BxT, h_BxTxD.dtype)
        for i, layer in enumerate(self.layers):
            kv = kv_per_layer[i] if kv_per_layer is not None else None
            h_BxTxD = layer(h_BxTxD, cos, sin, mask_Bx1xTxS, kv, write_idx_BxT)
        return self.norm(h_BxTxD)


def causal_mask(
    query_idx_BxT: torch.Tensor, key_len: int, key_start_B: torch.Tensor, window: Optional[int] = None
) -> torch.Tensor:
    """[B, 1, T, S] bool: key j is visible to query i iff start <= j <= i (and i - j < window).

    A query before its row's start (a left-pad position) sees only itself, so softmax never
    gets an empty row; those outputs are never read.
    """
    j = torch.arange(key_len, device=query_idx_BxT.device)  # [S]
    i = query_idx_BxT[:, :, None]  # [B, T, 1]
    visible = (j <= i) & (j >= key_start_B[:, None, None])
    if window is not None:
        visible &= (i - j) < window
    visible |= j == i
    return visible[:, None]
