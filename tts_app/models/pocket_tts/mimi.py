"""Mimi, the Pocket TTS codec (pocket_tts/models/mimi.py): latents -> 24 kHz audio, and a voice clip -> latents.

Attribute names match the checkpoint keys under ``mimi.``. The decoder streams per row: each slot
keeps its conv buffers (stream_state) and the last ``context`` keys/values of its transformer
(``WindowKV``), so rows at different points of their speech decode together in one call.
"""

from __future__ import annotations

import torch
from torch import nn


from tts_app.models.layers.small_gemm import Linear
from tts_app.models.pocket_tts.config import MimiShape, MimiTransformerShape
from tts_app.models.pocket_tts.seanet import SEANetDecoder, SEANetEncoder, StreamingConv1d, StreamingConvTranspose1d
from tts_app.models.pocket_tts.stream_state import StreamBuffers, StreamCall, StreamPool
from tts_app.models.pocket_tts.transformer import CausalWindow, Transformer


class ProjectedTransformer(nn.Module):
    def __init__(self, s: MimiTransformerShape) -> None:
        super().__init__()
        self.context = s.context
        self.transformer = Transformer(s.num_layers, s.d_model, s.num_heads, s.dim_feedforward, s.max_period, layer_scale=True)
        self.input_proj = Linear(s.input_dimension, s.d_model, bias=False) if s.d_model != s.input_dimension else None
        out = nn.Identity() if s.d_model == s.output_dimension else Linear(s.d_model, s.output_dimension, bias=False)
        self.output_projs = nn.ModuleList([out])

    def forward(self, x_BxCxT: torch.Tensor, pos_BxT: torch.Tensor, store) -> torch.Tensor:
        x = x_BxCxT.transpose(1, 2)
        if self.input_proj is not None:
            x = self.input_proj(x)
        return self.output_projs[0](self.transformer(x, pos_BxT, store)).transpose(1, 2)


class WindowKV:
    """Per-slot keys/values of the last ``context`` positions of every decoder-transformer layer."""

    def __init__(self, layers: int, slots: int, heads: int, context: int, head_dim: int, device, dtype) -> None:
        self.context = context
        self.k = torch.zeros(layers, slots, heads, context, head_dim, device=device, dtype=dtype)
        self.v = torch.zeros_like(self.k)
        self.pos = torch.full((slots, context), -1, dtype=torch.long, device=device)  # -1: empty
        self.next_pos = torch.zeros(slots, dtype=torch.long, device=device)

    def reset(self, slot: int) -> None:
        self.pos[slot] = -1
        self.next_pos[slot] = 0

    def bind(self, rows: torch.Tensor, t: int) -> "_WindowCall":
        return _WindowCall(self, rows, t)


class _WindowCall:
    def __init__(self, kv: WindowKV, rows: torch.Tensor, t: int) -> None:
        self.kv, self.rows = kv, rows
        self.pos_q = kv.next_pos.index_select(0, rows)[:, None] + torch.arange(t, device=rows.device)  # [B, T]
        pos_k = torch.cat([kv.pos.index_select(0, rows), self.pos_q], dim=1)  # [B, C + T]
        delta = self.pos_q[:, :, None] - pos_k[:, None, :]
        self.mask = ((pos_k[:, None, :] >= 0) & (delta >= 0) & (delta < kv.context))[:, None]  # [B, 1, T, C + T]
        self.pos_k = pos_k

    def attend(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        kv, c = self.kv, self.kv.context
        keys = torch.cat([kv.k[layer].index_select(0, self.rows), k], dim=2)
        values = torch.cat([kv.v[layer].index_select(0, self.rows), v], dim=2)
        kv.k[layer].index_copy_(0, self.rows, keys[:, :, -c:])
        kv.v[layer].index_copy_(0, self.rows, values[:, :, -c:])
        return keys, values, self.mask

    def finish(self) -> None:
        kv = self.kv
        kv.pos.index_copy_(0, self.rows, self.pos_k[:, -kv.context:])
        kv.next_pos.index_copy_(0, self.rows, self.pos_q[:, -1] + 1)


class Quantizer(nn.Module):
    def __init__(self, dimension: int, output_dimension: int) -> None:
        super().__init__()
        self.output_proj = nn.Conv1d(dimension, output_dimension, 1, bias=False)


class Downsample(nn.Module):
    def __init__(self, stride: int, dimension: int, out_dimension: int) -> None:
        super().__init__()
        self.conv = StreamingConv1d(None, dimension, out_dimension, 2 * stride, stride=stride, bias=False, pad_mode="replicate")


class Upsample(nn.Module):
    def __init__(self, bufs: StreamBuffers, stride: int, dimension: int, in_dimension: int) -> None:
        super().__init__()
        self.convtr = StreamingConvTranspose1d(bufs, in_dimension, dimension, 2 * stride, stride, groups=dimension, bias=False)


class Mimi(nn.Module):
    def __init__(self, s: MimiShape) -> None:
        super().__init__()
        self.shape = s
        self.bufs = StreamBuffers()
        enc, dec = s.encoder_seanet, s.decoder_seanet
        self.encoder = SEANetEncoder(enc.dimension, enc.n_filters, enc.n_residual_layers, enc.ratios, enc.kernel_size,
                                     enc.last_kernel_size, enc.residual_kernel_size, enc.dilation_base, enc.pad_mode, enc.compress)
        self.decoder = SEANetDecoder(self.bufs, dec.dimension, dec.n_filters, dec.n_residual_layers, dec.ratios, dec.kernel_size,
                                     dec.last_kernel_size, dec.residual_kernel_size, dec.dilation_base, dec.pad_mode, dec.compress)
        self.encoder_transformer = ProjectedTransformer(s.encoder_transformer)
        self.decoder_transformer = ProjectedTransformer(s.decoder_transformer)
        self.quantizer = Quantizer(s.latent_dim, s.quantizer_out)
        stride = s.steps_per_latent
        if stride != 1:
            self.downsample = Downsample(stride, enc.dimension, s.inner_dim or enc.dimension)
            self.upsample = Upsample(self.bufs, stride, dec.dimension, s.outer_dim or dec.dimension)

    # --- decoding, streamed per row -------------------------------------------------------------
    def new_state(self, slots: int) -> tuple[StreamPool, WindowKV]:
        p = next(self.parameters())
        t = self.shape.decoder_transformer
        kv = WindowKV(t.num_layers, slots, t.num_heads, t.context, t.d_model // t.num_heads, p.device, p.dtype)
        return StreamPool(self.bufs.shapes, slots, p.device, p.dtype), kv

    def decode(self, latent_BxTxL: torch.Tensor, rows: torch.Tensor, pool: StreamPool, kv: WindowKV) -> torch.Tensor:
        """Audio [B, T * samples_per_latent] of the next T latents of each row (unnormalised latents: the flow LM's
        output times emb_std plus emb_mean), continuing each row's stream."""
        call = pool.gather(rows)
        window = kv.bind(rows, latent_BxTxL.shape[1] * self.shape.steps_per_latent)
        audio = self._decode(latent_BxTxL, call, window)
        window.finish()
        pool.scatter(rows, call)
        return audio

    def decode_whole(self, latent_BxTxL: torch.Tensor) -> torch.Tensor:
        """One pass from a fresh state (what ``decode`` streams, in one call)."""
        b = latent_BxTxL.shape[0]
        pool, kv = self.new_state(b)
        rows = torch.arange(b, device=latent_BxTxL.device)
        return self.decode(latent_BxTxL, rows, pool, kv)

    def _decode(self, latent_BxTxL: torch.Tensor, call: StreamCall, window: _WindowCall) -> torch.Tensor:
        emb = self.quantizer.output_proj(latent_BxTxL.transpose(1, 2))
        if self.shape.steps_per_latent != 1:
            emb = self.upsample.convtr(emb, call)
        emb = self.decoder_transformer(emb, window.pos_q, window)
        return self.decoder(emb, call)[:, 0]

    # --- encoding a voice clip --------------------------------------------------------------------
    def encode(self, audio_Bx1xT: torch.Tensor) -> torch.Tensor:
        """Latents [B, frames, latent_dim] of whole clips (length padded up to a multiple of a latent's samples)."""
        frame = self.shape.samples_per_latent
        pad = -audio_Bx1xT.shape[-1] % frame
        x = nn.functional.pad(audio_Bx1xT, (0, pad))
        emb = self.encoder(x)
        t = emb.shape[-1]
        pos = torch.arange(t, device=x.device)[None].expand(x.shape[0], -1)
        emb = self.encoder_transformer(emb, pos, CausalWindow(t, self.shape.encoder_transformer.context, x.device))
        if self.shape.steps_per_latent != 1:
            emb = self.downsample.conv(emb, None)
        return emb.transpose(1, 2)

