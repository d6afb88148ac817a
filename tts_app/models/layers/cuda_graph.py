"""CUDA graphs of fixed-shape calls, one per key: (batch bucket, length bucket, ...).

A captured call has fixed shapes for its key, reads and writes only buffers at fixed addresses
(slot state, staged inputs) and draws its randomness from counters on the device, so one replay
runs the whole call. Qwen3-TTS's decode call (every frame of it: code predictor inner loops,
talker tokens, sampling, state updates) and its codec window, Chatterbox's T3 call and S3Gen's
flow solve each use one ``CallGraphs``. The bucket rule is the same for all: a batch is rounded up
to ``batch_buckets``, a length to ``length_buckets``. Only built when CUDA is there; on CPU each
caller runs the same call eagerly.
"""

from __future__ import annotations

import bisect
import logging
import time
from typing import Callable

import torch

logger = logging.getLogger(__name__)

Key = tuple[int, ...]  # (batch bucket, length bucket, ...): one graph each


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def batch_buckets(max_batch: int) -> list[int]:
    return sorted({b for b in (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96) if b < max_batch} | {max_batch})


def length_buckets(max_len: int) -> list[int]:
    return sorted({t for t in (256, 512, 1024, 2048, 4096, 8192) if t < max_len} | {max_len})


class CallGraphs:
    def __init__(self, max_batch: int, max_len: int, what: str = "the decode call") -> None:
        self.what = what  # for the capture log line
        self.batch_sizes = batch_buckets(max_batch)
        self.lengths = length_buckets(max_len)
        self._graphs: dict[Key, tuple[torch.cuda.CUDAGraph, torch.Tensor]] = {}
        self._pool = None

    def batch_bucket(self, n: int) -> int:
        return self.batch_sizes[bisect.bisect_left(self.batch_sizes, n)]

    def len_bucket(self, n: int) -> int:
        return self.lengths[min(bisect.bisect_left(self.lengths, n), len(self.lengths) - 1)]

    def __contains__(self, key: Key) -> bool:
        return key in self._graphs

    def capture(self, key: Key, fn: Callable[[], torch.Tensor]) -> float:
        """Capture ``fn`` (which must leave request state unchanged: the caller masks every row off) for ``key``;
        returns the seconds it took."""
        t0 = time.perf_counter()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):  # warm-up: lazy init and allocator state outside the graph
                fn()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        if self._pool is None:
            self._pool = torch.cuda.graph_pool_handle()
        with torch.cuda.graph(graph, pool=self._pool):
            out = fn()
        torch.cuda.synchronize()
        self._graphs[key] = (graph, out)
        seconds = time.perf_counter() - t0
        logger.info("captured %s for %s in %.2f s", self.what, key, seconds)
        return seconds

    def replay(self, key: Key) -> torch.Tensor:
        """Run the captured call; its output is graph-owned (overwritten by the next replay)."""
        graph, out = self._graphs[key]
        graph.replay()
        return out
