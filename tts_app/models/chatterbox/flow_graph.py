"""S3Gen's flow decoder (the CFM solve: ``N_TIMESTEPS`` Euler steps of the estimator, guidance pairs inside) in
fixed shapes, so that one CUDA graph per (batch bucket, frames bucket) replays the whole solve.

``flow_mels`` hands over the ragged batch (rows right-padded to the longest, with their padding mask); here it
is padded further, rows to the batch bucket and frames to the length bucket (``CallGraphs``' rule, as for
T3 and Qwen3-TTS), in staged buffers at fixed addresses. The estimator masks attention and velocity with the
padding mask, so the extra padding changes no valid frame (the ragged batch rests on the same property,
tested in test_chatterbox_official); a pad row gets one valid frame, so no attention row is empty.

One host sync sits inside the official estimator: ``add_optional_chunk_mask`` asks ``.item()`` whether a
row has no visible frame. ``capture_safe_decoder`` gives the decoder module a version that answers the
same (the same mask, the same fix for an empty row) with a ``torch.where`` instead; it is installed once,
in the decoder's own namespace, when a solver is built.
"""

from __future__ import annotations

import functools
from typing import Any, Optional

import torch
from torch import nn

from tts_app.models.chatterbox.official import official
from tts_app.models.chatterbox.s3gen_batch import N_TIMESTEPS, time_steps
from tts_app.models.layers.cuda_graph import CallGraphs

MAX_FRAMES = 2048  # the largest frames bucket; a longer window (a whole long utterance) is solved eagerly


def _chunk_mask(original: Any, xs: torch.Tensor, masks: torch.Tensor, use_dynamic_chunk: bool, use_dynamic_left_chunk: bool,
                decoding_chunk_size: int, static_chunk_size: int, num_decoding_left_chunks: int,
                enable_full_context: bool = True) -> torch.Tensor:
    """The official add_optional_chunk_mask for the estimator's full-context call, without its host sync."""
    if use_dynamic_chunk or static_chunk_size > 0:  # not the estimator's call: the official function as is
        return original(xs, masks, use_dynamic_chunk, use_dynamic_left_chunk, decoding_chunk_size, static_chunk_size,
                        num_decoding_left_chunks, enable_full_context)
    return masks | (masks.sum(dim=-1, keepdim=True) == 0)  # a row with no visible frame sees all (the official fix)


def capture_safe_decoder() -> None:
    module = official("models.s3gen.decoder")
    if not isinstance(module.add_optional_chunk_mask, functools.partial):
        module.add_optional_chunk_mask = functools.partial(_chunk_mask, module.add_optional_chunk_mask)


class FlowSolver:
    """The CFM solve over staged [B, 80, T] buffers; a CUDA graph per (batch bucket, frames bucket) when capturing.

    ``use_cuda_graphs``: the Qwen3 generator's switch (None: on CUDA only); ``fixed_shapes`` (default: where graphs
    are on) runs the bucketed solve eagerly too, which is how CPU tests check it against the ragged one.
    """

    def __init__(self, s3gen: nn.Module, max_batch: int, n_timesteps: int = N_TIMESTEPS, max_frames: int = MAX_FRAMES,
                 use_cuda_graphs: Optional[bool] = None, fixed_shapes: Optional[bool] = None) -> None:
        self.decoder = s3gen.flow.decoder
        dev, dt = s3gen.device, s3gen.dtype
        if use_cuda_graphs is None:
            use_cuda_graphs = dev.type == "cuda"
        self.capturing = bool(use_cuda_graphs and torch.cuda.is_available() and dev.type == "cuda")
        fixed = self.capturing if fixed_shapes is None else fixed_shapes or self.capturing
        self.graphs = CallGraphs(max_batch, max_frames, "the S3Gen flow solve") if fixed else None
        capture_safe_decoder()
        self.t_span = time_steps(self.decoder, n_timesteps, dev, dt)
        if self.graphs is not None:  # staged inputs: each call (bucket b, t) reads [:b, ..., :t] of them
            B, T = max_batch, max_frames
            self.z, self.mu, self.cond = (torch.zeros(B, 80, T, device=dev, dtype=dt) for _ in range(3))
            self.mask = torch.zeros(B, 1, T, device=dev, dtype=dt)
            self.spks = torch.zeros(B, 80, device=dev, dtype=dt)

    def solve(self, z_Bx80xT: torch.Tensor, mu_Bx80xT: torch.Tensor, mask_Bx1xT: torch.Tensor, spks_Bx80: torch.Tensor,
              cond_Bx80xT: torch.Tensor) -> torch.Tensor:
        """The official ``solve_euler`` of these inputs, [B, 80, T]."""
        B, _, T = z_Bx80xT.shape
        if self.graphs is None or B > self.graphs.batch_sizes[-1] or T > self.graphs.lengths[-1]:
            return self.decoder.solve_euler(z_Bx80xT, t_span=self.t_span, mu=mu_Bx80xT, mask=mask_Bx1xT, spks=spks_Bx80,
                                            cond=cond_Bx80xT)
        b, t = self.graphs.batch_bucket(B), self.graphs.len_bucket(T)
        for buf, x in ((self.z, z_Bx80xT), (self.mu, mu_Bx80xT), (self.cond, cond_Bx80xT), (self.mask, mask_Bx1xT)):
            buf[:b, :, :t].zero_()
            buf[:B, :, :T].copy_(x)
        self.mask[B:b, :, 0] = 1  # pad rows: one valid frame (no empty attention row)
        self.spks[:b].zero_()
        self.spks[:B].copy_(spks_Bx80)
        if self.capturing:
            if (b, t) not in self.graphs:
                self.capture(b, t)
            out = self.graphs.replay((b, t))
        else:
            out = self._call(b, t)
        return out[:B, :, :T].clone()  # the graph's output is overwritten by its next replay

    def _call(self, b: int, t: int) -> torch.Tensor:
        return self.decoder.solve_euler(self.z[:b, :, :t], t_span=self.t_span, mu=self.mu[:b, :, :t], mask=self.mask[:b, :, :t],
                                        spks=self.spks[:b], cond=self.cond[:b, :, :t])

    @torch.inference_mode()
    def capture(self, b: int, t: int) -> float:
        if not self.capturing:
            raise RuntimeError("CUDA graphs are off for this solver")
        return self.graphs.capture((b, t), lambda: self._call(b, t))

    @torch.inference_mode()
    def capture_all(self) -> float:
        """Every (batch bucket, frames bucket) now, before serving; the seconds taken (0 without graphs)."""
        if not self.capturing:
            return 0.0
        keys = [(b, t) for b in self.graphs.batch_sizes for t in self.graphs.lengths]
        return sum(self.capture(b, t) for b, t in keys if (b, t) not in self.graphs)
