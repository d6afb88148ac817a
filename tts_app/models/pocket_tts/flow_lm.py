"""The flow language model (pocket_tts/models/flow_lm.py): a causal transformer over [voice prompt, text, latents]
whose last hidden state conditions the flow head (the next latent) and the end-of-speech head.

Attribute names match the checkpoint keys under ``flow_lm.``. Rows live in the slots of a ``SlotKV``
(keys/values [layers, slots, heads, max_len, head_dim]) with their own lengths, so rows of different
lengths prefill and decode in the same call.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from tts_app.models.layers.kv_cache import SlotPool
from tts_app.models.layers.small_gemm import Linear
from tts_app.models.pocket_tts.config import FlowLMShape
from tts_app.models.pocket_tts.flow_net import FlowNet
from tts_app.models.pocket_tts.transformer import CausalWindow, Transformer


class Conditioner(nn.Module):
    """``conditioner.embed`` (n_bins + 1 rows: the last one is padding) and the low-rank ``proj`` when configured."""

    def __init__(self, n_bins: int, dim: int, rank) -> None:
        super().__init__()
        self.embed = nn.Embedding(n_bins + 1, rank or dim)
        self.proj = None if rank is None else Linear(rank, dim, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        return x if self.proj is None else self.proj(x)


class SlotKV:
    """Keys/values of every flow-LM layer per slot, and each slot's length; registered in a ``SlotPool``."""

    def __init__(self, pool: SlotPool, layers: int, heads: int, max_len: int, head_dim: int, device, dtype) -> None:
        self.max_len = max_len
        shape = (layers, pool.capacity, heads, max_len, head_dim)
        self.k = pool.register(torch.zeros(shape, device=device, dtype=dtype), slot_dim=1)
        self.v = pool.register(torch.zeros(shape, device=device, dtype=dtype), slot_dim=1)
        self.lengths = pool.register(torch.zeros(pool.capacity, dtype=torch.long, device=device))

    def bind(self, first: int, lens_B: torch.Tensor) -> "_SlotCall":
        """A call writing ``lens_B[b]`` new tokens (left-aligned, padded to the longest) to slot ``first + b``."""
        return _SlotCall(self, first, lens_B)


class _SlotCall:
    def __init__(self, kv: SlotKV, first: int, lens_B: torch.Tensor) -> None:
        self.kv, self.first, b = kv, first, lens_B.shape[0]
        start = kv.lengths[first:first + b]
        t = int(lens_B.max())
        self.pos_q = start[:, None] + torch.arange(t, device=lens_B.device)  # [B, T]
        valid = torch.arange(t, device=lens_B.device)[None] < lens_B[:, None]
        self.rows, self.cols = valid.nonzero(as_tuple=True)  # the real tokens (padding is never written)
        self.end = start + lens_B
        if int(self.end.max()) > kv.max_len:
            raise ValueError(f"a row needs {int(self.end.max())} positions, the cache holds {kv.max_len}")
        s = int(self.end.max())
        self.mask = (torch.arange(s, device=lens_B.device)[None, None, :] <= self.pos_q[:, :, None])[:, None]  # [B,1,T,S]
        self.s = s

    def attend(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        kc = self.kv.k[layer, self.first:self.first + k.shape[0]]
        vc = self.kv.v[layer, self.first:self.first + k.shape[0]]
        pos = self.pos_q[self.rows, self.cols]
        kc[self.rows, :, pos] = k[self.rows, :, self.cols]
        vc[self.rows, :, pos] = v[self.rows, :, self.cols]
        return kc[:, :, :self.s], vc[:, :, :self.s], self.mask

    def finish(self) -> None:
        self.kv.lengths[self.first:self.first + self.end.shape[0]] = self.end


class FlowLM(nn.Module):
    emb_std: torch.Tensor
    emb_mean: torch.Tensor

    def __init__(self, s: FlowLMShape, latent_dim: int, speaker_dim: int) -> None:
        super().__init__()
        self.shape, self.ldim = s, latent_dim
        self.conditioner = Conditioner(s.n_bins, s.lookup_dim, s.lookup_rank)
        self.flow_net = FlowNet(latent_dim, s.flow_dim, s.z_dim or s.d_model, s.flow_depth)
        self.register_buffer("emb_std", torch.ones(latent_dim))
        self.register_buffer("emb_mean", torch.zeros(latent_dim))
        self.bos_emb = nn.Parameter(torch.zeros(latent_dim))
        if s.insert_bos_before_voice:
            self.bos_before_voice = nn.Parameter(torch.zeros(1, 1, s.d_model))
        self.input_linear = Linear(latent_dim, s.d_model, bias=False)
        self.transformer = Transformer(s.num_layers, s.d_model, s.num_heads, s.dim_feedforward, s.max_period,
                                       attn_dim=s.attn_dim, num_kv_heads=s.num_kv_heads)
        self.out_norm = nn.LayerNorm(s.d_model, eps=1e-5)
        self.z_proj = None if s.z_dim is None else Linear(s.d_model, s.z_dim, bias=False)
        self.out_eos = Linear(s.z_dim or s.d_model, 1)
        self.speaker_proj_weight = nn.Parameter(torch.zeros(s.d_model, speaker_dim))

    def new_cache(self, pool: SlotPool, max_len: int) -> SlotKV:
        p = self.input_linear.weight
        s = self.shape
        return SlotKV(pool, s.num_layers, s.num_kv_heads, max_len, s.attn_dim // s.num_heads, p.device, p.dtype)

    def voice_prompt(self, latents_VxL: torch.Tensor) -> torch.Tensor:
        """The prompt embeddings [V(+1), d_model] of a clip's Mimi latents: projected, after the BOS when configured."""
        x = nn.functional.linear(latents_VxL.to(torch.float32), self.speaker_proj_weight)
        if self.shape.insert_bos_before_voice:
            x = torch.cat([self.bos_before_voice[0], x], dim=0)
        return x

    def voice_kv(self, prompt_VxD: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per layer (k, v) [heads, V, head_dim] of a voice prompt at positions 0..V-1 (the cached voice state)."""
        v = prompt_VxD.shape[0]
        store = _Recorder(CausalWindow(v, None, prompt_VxD.device))
        pos = torch.arange(v, device=prompt_VxD.device)[None]
        # Only the keys/values are kept: the last layer attends and feeds forward for one position, not all V.
        self.transformer(prompt_VxD[None], pos, store, torch.tensor([v - 1], device=prompt_VxD.device))
        return [(k[0], val[0]) for k, val in store.kv]

    def hidden(self, x_BxTxD: torch.Tensor, call: _SlotCall, keep_B: Optional[torch.Tensor] = None) -> torch.Tensor:
        """out_norm (and z_proj) of the transformer over new tokens, [B, T, C] (with ``keep_B``: [B, 1, C] at row b's
        new token ``keep_B[b]`` alone); writes every new token's keys to the slots."""
        h = self.out_norm(self.transformer(x_BxTxD, call.pos_q, call, keep_B))
        call.finish()
        return h if self.z_proj is None else self.z_proj(h)

    def latent_input(self, latent_BxL: torch.Tensor) -> torch.Tensor:
        """[B, 1, d_model] of the previous latents."""
        return self.input_linear(latent_BxL)[:, None]

    def bos_input(self) -> torch.Tensor:
        """[d_model]: the input of a row's first latent step (where the official code feeds a NaN latent, the BOS one)."""
        return self.input_linear(self.bos_emb)

    def head(self, h_BxC: torch.Tensor, noise_BxL: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(next latents [B, ldim], EOS logits [B]) from the last hidden states and each row's noise (std sqrt(temp))."""
        return self.flow_net.sample(h_BxC, noise_BxL), self.out_eos(h_BxC)[:, 0]


class _Recorder:
    """A stateless store that keeps what each layer attended to (the voice prompt's keys/values)."""

    def __init__(self, inner: CausalWindow) -> None:
        self.inner, self.kv = inner, []

    def attend(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        self.kv.append((k, v))
        return self.inner.attend(layer, k, v)
