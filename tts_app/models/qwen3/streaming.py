"""Streaming codec decode: each row's new frames, decoded with up to ``left_context`` earlier frames.

Two ways to one result:
- ragged (``decode_new_audio``; CPU, graphs off): rows batched by (context, new) length, so a batch
  needs no padding. In steady state every row has the same shape, one batch.
- fixed shapes (``CodecWindows`` with graphs on, CUDA): every row's window (its context then its new
  frames, at most ``left_context + frames_per_step``) is written at the start of a W-frame buffer,
  W = left_context + frames_per_step, and the batch is rounded up to its bucket (the generator's
  rule, ``batch_buckets``): one call, one CUDA graph per batch bucket. The decoder is causal
  throughout (left-padded convolutions, right-trimmed transposed convolutions, a causal
  sliding-window transformer), so the frames after a row's window change none of its samples:
  right padding is exact, where left padding would act as fake context. The call gathers each
  row's new samples on the device (from its context's end) into [B, frames_per_step * samples per
  frame], the one copy to the host; rows of a shape outside the bucket (more new frames than a
  step) take the ragged way.
"""

from __future__ import annotations

import bisect
import logging
from collections import defaultdict
from typing import Optional

import numpy as np
import torch

from tts_app.models.layers.cuda_graph import CallGraphs, batch_buckets
from tts_app.models.qwen3.codec import CodecDecoder
from tts_app.models.layers.host_output import HostOutput

logger = logging.getLogger(__name__)


def _windows(histories: list[list[np.ndarray]], new_counts: list[int], left_context: int) -> list[tuple[int, np.ndarray, int]]:
    """(row, codes [ctx + new, G], ctx) of every row with new frames."""
    out = []
    for r, (chunks, new) in enumerate(zip(histories, new_counts)):
        if new <= 0:
            continue
        tail: list[np.ndarray] = []
        need = new + left_context
        for c in reversed(chunks):  # only the tail is needed, avoid concatenating the whole history
            tail.insert(0, c)
            need -= c.shape[0]
            if need <= 0:
                break
        codes_TxG = np.concatenate(tail)[-(new + left_context):]
        out.append((r, codes_TxG, codes_TxG.shape[0] - new))
    return out


@torch.inference_mode()
def decode_new_audio(
    codec: CodecDecoder, histories: list[list[np.ndarray]], new_counts: list[int], left_context: int
) -> list[np.ndarray]:
    """Audio for the last ``new_counts[r]`` frames of each row's frame history (chunks of [n, G]); ragged batches."""
    out: list[np.ndarray] = [np.zeros(0, dtype=np.float32) for _ in histories]
    groups: dict[tuple[int, int], list[tuple[int, np.ndarray]]] = defaultdict(list)
    for r, codes_TxG, ctx in _windows(histories, new_counts, left_context):
        groups[(ctx, codes_TxG.shape[0] - ctx)].append((r, codes_TxG))
    device = next(codec.parameters()).device  # the generator hands frames over on the host
    for (ctx, _), members in groups.items():
        codes_BxGxT = torch.from_numpy(np.stack([c for _, c in members])).transpose(1, 2).to(device)
        wav_BxN = codec.decode_chunk(codes_BxGxT, ctx).float().cpu().numpy()
        for (r, _), wav in zip(members, wav_BxN):
            out[r] = np.ascontiguousarray(wav, dtype=np.float32)
    return out


class CodecWindows:
    """The codec over every row's window in fixed shapes: staged buffers, one call (a graph on CUDA) per batch bucket.

    ``use_cuda_graphs`` is the generator's switch (None: on CUDA only). ``fixed_shapes`` (default: where graphs
    are on) runs the bucketed call eagerly too, which is how CPU tests check it against the ragged way.
    """

    def __init__(self, codec: CodecDecoder, left_context: int, frames_per_step: int, max_batch: int,
                 use_cuda_graphs: Optional[bool] = None, fixed_shapes: Optional[bool] = None) -> None:
        self.codec, self.left_context, self.frames_per_step = codec, left_context, frames_per_step
        self.device = next(codec.parameters()).device
        self.width = left_context + frames_per_step  # W frames per row window
        self.spf = codec.samples_per_frame
        if use_cuda_graphs is None:
            use_cuda_graphs = self.device.type == "cuda"
        self.graphs: Optional[CallGraphs] = None
        if use_cuda_graphs and torch.cuda.is_available() and self.device.type == "cuda":
            self.graphs = CallGraphs(max_batch, self.width, "the codec window")
        self.fixed = self.graphs is not None if fixed_shapes is None else fixed_shapes
        self.batch_sizes = batch_buckets(max_batch)
        G = codec.cfg.num_quantizers
        # Staged inputs at fixed addresses: each call (bucket B) reads their first B rows.
        self.codes_BxGxW = torch.zeros(max_batch, G, self.width, dtype=torch.long, device=self.device)
        self.offset_B = torch.zeros(max_batch, dtype=torch.long, device=self.device)  # ctx * spf: where new samples start
        self._take_N = torch.arange(frames_per_step * self.spf, device=self.device)
        self._host = HostOutput(self.device)

    @property
    def max_batch(self) -> int:
        return self.batch_sizes[-1]

    def bucket(self, n: int) -> int:
        return self.batch_sizes[bisect.bisect_left(self.batch_sizes, n)]

    @torch.inference_mode()
    def decode(self, histories: list[list[np.ndarray]], new_counts: list[int]) -> list[np.ndarray]:
        """As ``decode_new_audio``: audio of each row's last ``new_counts[r]`` frames."""
        if not self.fixed or max(new_counts, default=0) > self.frames_per_step or len(histories) > self.max_batch:
            return decode_new_audio(self.codec, histories, new_counts, self.left_context)
        out: list[np.ndarray] = [np.zeros(0, dtype=np.float32) for _ in histories]
        rows = _windows(histories, new_counts, self.left_context)
        if not rows:
            return out
        B = self.bucket(len(rows))
        G = self.codes_BxGxW.shape[1]
        block_BxGxW = np.zeros((B, G, self.width), dtype=np.int64)  # pad rows and pad frames: code 0, never read
        offset_B = np.zeros(B, dtype=np.int64)
        for i, (_, codes_TxG, ctx) in enumerate(rows):
            block_BxGxW[i, :, : codes_TxG.shape[0]] = codes_TxG.T
            offset_B[i] = ctx * self.spf
        self.codes_BxGxW[:B].copy_(torch.from_numpy(block_BxGxW))
        self.offset_B[:B].copy_(torch.from_numpy(offset_B))
        if self.graphs is not None:
            key = (B, self.width)
            if key not in self.graphs:
                self.capture(B)
            audio_BxN = self.graphs.replay(key)
        else:
            audio_BxN = self._call(B)
        host = self._host.fetch(audio_BxN)  # the one sync
        for i, (r, codes_TxG, ctx) in enumerate(rows):
            out[r] = host[i, : (codes_TxG.shape[0] - ctx) * self.spf].copy()  # a copy: the host buffer is reused
        return out

    def _call(self, B: int) -> torch.Tensor:
        """The captured region: [B, frames_per_step * spf] float32, each row's samples from its offset on."""
        wav_BxS = self.codec(self.codes_BxGxW[:B])
        idx_BxN = (self.offset_B[:B, None] + self._take_N).clamp(max=wav_BxS.shape[1] - 1)
        return wav_BxS.gather(1, idx_BxN).float()

    @torch.inference_mode()
    def capture(self, B: int) -> float:
        if self.graphs is None:
            raise RuntimeError("CUDA graphs are off for this codec")
        return self.graphs.capture((B, self.width), lambda: self._call(B))

    @torch.inference_mode()
    def capture_all(self) -> float:
        """Capture every batch bucket now (before serving); returns the seconds taken, 0 without graphs."""
        if self.graphs is None:
            return 0.0
        return sum(self.capture(b) for b in self.batch_sizes if (b, self.width) not in self.graphs)
