"""CUDA graphs for the frame step, one per (batch bucket, attention-length bucket), captured lazily.

The frame step has fixed shapes for a given (B, T), keeps its state in slot-indexed buffers
whose addresses never change, and takes its randomness as an input tensor, so one replay
runs the whole step: code predictor inner loop, talker token, sampling. Only built when
``torch.cuda.is_available()``; on CPU the generator calls the step eagerly.
"""

from __future__ import annotations

import bisect
import logging
from typing import Callable

import torch

logger = logging.getLogger(__name__)

StepFn = Callable[[dict[str, torch.Tensor], int, int], dict[str, torch.Tensor]]


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


class StepGraphs:
    def __init__(self, fn: StepFn, max_batch: int, max_len: int) -> None:
        self.fn = fn
        self.batch_sizes = sorted({b for b in (1, 2, 4, 8, 12, 16, 24, 32, 48, 64) if b < max_batch} | {max_batch})
        self.lengths = sorted({t for t in (256, 512, 1024, 2048, 4096, 8192) if t < max_len} | {max_len})
        self._graphs: dict[tuple[int, int], tuple[torch.cuda.CUDAGraph, dict, dict]] = {}
        self._pool = None

    def batch_bucket(self, n: int) -> int:
        return self.batch_sizes[bisect.bisect_left(self.batch_sizes, n)]

    def len_bucket(self, n: int) -> int:
        return self.lengths[min(bisect.bisect_left(self.lengths, n), len(self.lengths) - 1)]

    def run(self, B: int, T: int, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Replay (capturing first if needed) the step for bucket (B, T); outputs are graph-owned views."""
        entry = self._graphs.get((B, T))
        if entry is None:
            entry = self._capture(B, T, inputs)
            self._graphs[(B, T)] = entry
        graph, static_in, static_out = entry
        for k, v in inputs.items():
            static_in[k].copy_(v)
        graph.replay()
        return static_out

    def _capture(self, B: int, T: int, inputs: dict[str, torch.Tensor]):
        logger.info("capturing CUDA graph for batch %d, attention length %d", B, T)
        static_in = {k: v.clone() for k, v in inputs.items()}
        # Warm-up and capture run with every row inactive, so no request state changes (the only
        # side effect is K/V written at positions each row rewrites before reading).
        static_in["active"].zero_()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):
                self.fn(static_in, B, T)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        if self._pool is None:
            self._pool = torch.cuda.graph_pool_handle()
        with torch.cuda.graph(graph, pool=self._pool):
            static_out = self.fn(static_in, B, T)
        return graph, static_in, static_out
