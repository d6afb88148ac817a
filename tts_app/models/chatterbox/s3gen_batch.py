"""S3Gen over ragged batches: one flow-matching solve for every row, then the vocoder row by row.

Rows may have different token counts and different voices (reference prompts of different lengths);
each row's [prompt tokens ; speech tokens] is right-padded to the longest. Three places would let the
padding change the valid frames (each fix has a test that fails without it):
1. lengths: a row's prompt length arrives as (1,), (1, 1) or a number; added to a (B,) vector as is, a
   (1, 1) one broadcasts to (1, B) and the pad mask collapses the batch. ``_flat_lengths`` makes (B,).
2. the estimator: its transformer blocks attend over the whole padded width unless given the padding
   mask; ``_padding_mask`` is that mask (the estimator also zeroes the masked frames' velocity).
3. the encoder: its input ``embed`` (Linear + LayerNorm) turns zero padding into non-zero frames, which
   the pre-lookahead convolution (3 frames to the right) pulls into a row's last valid frames;
   ``_zero_tail`` zeroes the tail right after the embedding.
Starting noise and the vocoder's source come from each row's own generator, in the order the official
code draws them, so a batched row equals its solo official run seeded the same way.

The vocoder runs one row per call: its convolutions are non-causal through every layer, so a padded
batch would need a mask at each of them to keep rows exact, and on CPU stacking rows gains little.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pad_sequence

from tts_app.models.chatterbox.official import official

N_TIMESTEPS = 10  # the official flow_inference's Euler steps (non-meanflow S3Gen)


@dataclass
class FlowRow:
    """One row of a flow pass: its speech tokens, its voice's official ref dict and its starting noise."""

    tokens: torch.Tensor  # [n] speech ids (< 6561)
    ref: dict[str, Any]  # prompt_token [1, Lp], prompt_token_len, prompt_feat [1, Tp, 80], embedding [1, 192]
    noise: torch.Tensor  # [80, 2 * (Lp + n)]: the row's starting noise over prompt and speech frames

    @property
    def prompt_frames(self) -> int:
        return int(self.ref["prompt_feat"].shape[1])


def mel_frames(ref: dict[str, Any], n_tokens: int) -> int:
    """Frames of the flow's output for ``n_tokens`` speech tokens after this prompt (prompt frames included)."""
    return 2 * (_prompt_tokens(ref) + n_tokens)


def _prompt_tokens(ref: dict[str, Any]) -> int:
    return int(torch.as_tensor(ref["prompt_token_len"]).reshape(-1)[0])


def _flat_lengths(lengths: Sequence[Any]) -> torch.Tensor:
    """Leak 1: one length per row as a (B,) vector, whatever shape each came in."""
    return torch.cat([torch.as_tensor(n).reshape(-1)[:1].long() for n in lengths])


def _padding_mask(lengths_B: torch.Tensor, width: int) -> torch.Tensor:
    """Leak 2: [B, 1, T] float, 1 on each row's valid frames; the estimator masks attention and velocity with it."""
    return (torch.arange(width, device=lengths_B.device)[None] < lengths_B[:, None]).float()[:, None]


def _zero_tail(xs_BxTxD: torch.Tensor, masks_Bx1xT: torch.Tensor) -> torch.Tensor:
    """Leak 3: zero the padded frames the encoder's embedding made non-zero."""
    return xs_BxTxD * masks_Bx1xT.transpose(1, 2).to(xs_BxTxD.dtype)


def encode(encoder: nn.Module, xs_BxTxD: torch.Tensor, lengths_B: torch.Tensor) -> torch.Tensor:
    """The official UpsampleConformerEncoder.forward (full-context decoding) with the tail zeroed after ``embed``."""
    mask_util = official("models.s3gen.utils.mask")
    T = xs_BxTxD.size(1)
    masks = ~mask_util.make_pad_mask(lengths_B, T).unsqueeze(1)  # [B, 1, T]
    if encoder.global_cmvn is not None:
        xs_BxTxD = encoder.global_cmvn(xs_BxTxD)
    xs, pos_emb, masks = encoder.embed(xs_BxTxD, masks)
    xs = _zero_tail(xs, masks)
    chunk = mask_util.add_optional_chunk_mask(xs, masks, encoder.use_dynamic_chunk, encoder.use_dynamic_left_chunk,
                                              0, encoder.static_chunk_size, -1)
    xs = encoder.pre_lookahead_layer(xs)
    xs = encoder.forward_layers(xs, chunk, pos_emb, masks)
    xs, up_lengths_B = encoder.up_layer(xs.transpose(1, 2).contiguous(), lengths_B)
    xs = xs.transpose(1, 2).contiguous()
    masks = ~mask_util.make_pad_mask(up_lengths_B, xs.size(1)).unsqueeze(1)
    xs, pos_emb, masks = encoder.up_embed(xs, masks)
    chunk = mask_util.add_optional_chunk_mask(xs, masks, encoder.use_dynamic_chunk, encoder.use_dynamic_left_chunk,
                                              0, encoder.static_chunk_size * encoder.up_layer.stride, -1)
    xs = encoder.forward_up_layers(xs, chunk, pos_emb, masks)
    return encoder.after_norm(xs) if encoder.normalize_before else xs  # [B, 2T, D]


@torch.inference_mode()
def flow_mels(s3gen: nn.Module, rows: Sequence[FlowRow], n_timesteps: int = N_TIMESTEPS,
              solver: Optional[Any] = None) -> list[torch.Tensor]:
    """Mel frames of each row's speech tokens, [80, 2n - (prompt frames - 2 Lp)] each, in one CFM solve
    (``solver``, a flow_graph.FlowSolver, when given: its fixed shapes, a CUDA graph per bucket, and its own steps)."""
    flow = s3gen.flow
    dev, dt = s3gen.device, s3gen.dtype
    spk_Bx80 = flow.spk_embed_affine_layer(F.normalize(torch.cat([torch.atleast_2d(r.ref["embedding"]) for r in rows]).to(dev, dt), dim=1))
    prompt_len_B = _flat_lengths([r.ref["prompt_token_len"] for r in rows]).to(dev)
    n_B = torch.tensor([r.tokens.numel() for r in rows], device=dev)
    token_len_B = prompt_len_B + n_B
    seqs = [torch.cat([r.ref["prompt_token"].reshape(-1)[:int(p)].to(dev), r.tokens.to(dev)]) for r, p in zip(rows, prompt_len_B.tolist())]
    token_BxL = pad_sequence(seqs, batch_first=True).long()
    L = token_BxL.shape[1]
    x = flow.input_embedding(token_BxL) * _padding_mask(token_len_B, L).transpose(1, 2).to(dt)
    h_BxTx80 = flow.encoder_proj(encode(flow.encoder, x, token_len_B))
    frames_B = 2 * token_len_B
    T = h_BxTx80.shape[1]
    cond_Bx80xT = torch.zeros(len(rows), 80, T, device=dev, dtype=dt)
    z_Bx80xT = torch.zeros(len(rows), 80, T, device=dev, dtype=dt)
    for r, row in enumerate(rows):
        cond_Bx80xT[r, :, :row.prompt_frames] = row.ref["prompt_feat"][0].T.to(dev, dt)
        z_Bx80xT[r, :, :row.noise.shape[-1]] = row.noise.to(dev, dt)
    mu_Bx80xT, mask_Bx1xT = h_BxTx80.transpose(1, 2).contiguous(), _padding_mask(frames_B, T).to(dt)
    if solver is not None:
        feat = solver.solve(z_Bx80xT, mu_Bx80xT, mask_Bx1xT, spk_Bx80, cond_Bx80xT)
    else:
        feat = flow.decoder.solve_euler(z_Bx80xT, t_span=time_steps(flow.decoder, n_timesteps, dev, dt), mu=mu_Bx80xT, mask=mask_Bx1xT, spks=spk_Bx80, cond=cond_Bx80xT)
    return [feat[r, :, row.prompt_frames:int(frames_B[r])] for r, row in enumerate(rows)]


def time_steps(decoder: nn.Module, n_timesteps: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """The official flow_inference's time grid: n + 1 points on [0, 1], cosine-scheduled."""
    t_span = torch.linspace(0, 1, n_timesteps + 1, device=device, dtype=dtype)
    return 1 - torch.cos(t_span * 0.5 * torch.pi) if decoder.t_scheduler == "cosine" else t_span


def _source(m_source: nn.Module, f0_Bx1xL: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """The official SourceModuleHnNSF harmonic branch with its random phases and noise from ``generator``: [B, 1, L]."""
    sg = m_source.l_sin_gen
    B, H = f0_Bx1xL.shape[0], sg.harmonic_num + 1
    harmonics = torch.arange(1, H + 1, device=f0_Bx1xL.device, dtype=f0_Bx1xL.dtype)[None, :, None]
    theta = 2 * np.pi * (torch.cumsum(f0_Bx1xL * harmonics / sg.sampling_rate, dim=-1) % 1)  # [B, H, L]
    low, high = torch.tensor(-np.pi), torch.tensor(np.pi)  # torch.distributions.Uniform's arithmetic
    phase = low + torch.rand((B, H, 1), generator=generator) * (high - low)
    phase[:, 0, :] = 0
    sine = sg.sine_amp * torch.sin(theta + phase.to(theta.device))
    uv = (f0_Bx1xL > sg.voiced_threshold).float()
    noise_amp = uv * sg.noise_std + (1 - uv) * sg.sine_amp / 3
    sine = sine * uv + noise_amp * torch.randn(sine.shape, generator=generator).to(sine.device)
    return m_source.l_tanh(m_source.l_linear(sine.transpose(1, 2))).transpose(1, 2)


@torch.inference_mode()
def vocode(s3gen: nn.Module, mel_80xT: torch.Tensor, generator: torch.Generator, fade_in: bool = True) -> torch.Tensor:
    """One row's waveform, [T * 480] at 24 kHz; ``fade_in`` applies the official 40 ms start fade (utterance start only)."""
    hift = s3gen.mel2wav
    mel = mel_80xT[None].to(s3gen.device, s3gen.dtype)
    f0 = hift.f0_predictor(mel)
    s = _source(hift.m_source, hift.f0_upsamp(f0[:, None]), generator)
    wav = hift.decode(x=mel, s=s)[0]
    if fade_in:
        n = min(len(s3gen.trim_fade), wav.shape[-1])
        wav[:n] = wav[:n] * s3gen.trim_fade[:n]
    return wav


def starting_noise(ref: dict[str, Any], n_tokens: int, generator: torch.Generator) -> torch.Tensor:
    """[80, frames] N(0, 1), drawn as the official ``randn_like(mu)`` of a solo run of this length draws it."""
    return torch.randn((1, 80, mel_frames(ref, n_tokens)), generator=generator)[0]


SAMPLES_PER_FRAME = 480  # 24 kHz / 50 mel frames per second
SAMPLE_RATE = 24000
__all__ = ["FlowRow", "flow_mels", "vocode", "starting_noise", "mel_frames", "SAMPLE_RATE", "SAMPLES_PER_FRAME"]
