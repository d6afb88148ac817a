"""A static, slot-indexed KV cache whose live slots are kept dense.

Each request owns one slot (a row of every per-slot tensor: talker K/V, last hidden state,
pending token, repetition mask). When a slot is freed the highest live slot is moved into
the hole, so the live slots are always 0..n-1 and a decode step works on contiguous views
(``tensor[:n]``) with no gather. A ``SlotHandle`` is shared between the pool and the request
state, so the move is visible to the request.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch

logger = logging.getLogger(__name__)


@dataclass(eq=False)
class SlotHandle:
    index: int


class SlotPool:
    """Owns ``capacity`` slots across a set of registered tensors (slot dimension given per tensor)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._tensors: list[tuple[torch.Tensor, int]] = []
        self._live: list[SlotHandle] = []  # _live[i].index == i

    def register(self, tensor: torch.Tensor, slot_dim: int = 0) -> torch.Tensor:
        if tensor.shape[slot_dim] != self.capacity:
            raise ValueError(f"slot dimension is {tensor.shape[slot_dim]}, pool capacity is {self.capacity}")
        self._tensors.append((tensor, slot_dim))
        return tensor

    @property
    def num_live(self) -> int:
        return len(self._live)

    @property
    def slot_bytes(self) -> int:
        """Bytes of the registered tensors that one slot holds (the engine logs it at start)."""
        return sum(t.numel() * t.element_size() for t, _ in self._tensors) // max(1, self.capacity)

    @property
    def num_free(self) -> int:
        return self.capacity - len(self._live)

    def allocate(self) -> SlotHandle:
        if not self.num_free:
            raise RuntimeError(f"all {self.capacity} generation slots are busy")
        handle = SlotHandle(len(self._live))
        self._live.append(handle)
        return handle

    def free(self, handle: SlotHandle) -> None:
        """Release ``handle``; the last live slot moves into its place (one row copy per tensor)."""
        i = handle.index
        if i < 0 or i >= len(self._live) or self._live[i] is not handle:
            return  # already freed
        last = self._live.pop()
        if last is not handle:
            self._copy(last.index, i)
            last.index = i
            self._live[i] = last
        handle.index = -1

    def _copy(self, src: int, dst: int) -> None:
        for tensor, dim in self._tensors:
            tensor.select(dim, dst).copy_(tensor.select(dim, src))


class StaticKVCache:
    """Per-layer K and V tensors of [slots, Hkv, max_len, Dh], registered in a ``SlotPool``."""

    def __init__(
        self,
        pool: SlotPool,
        num_layers: int,
        kv_heads: int,
        max_len: int,
        head_dim: int,
        dtype: torch.dtype,
        device: torch.device,
    ) -> None:
        self.max_len = max_len
        shape = (num_layers, pool.capacity, kv_heads, max_len, head_dim)
        self.k = pool.register(torch.zeros(shape, dtype=dtype, device=device), slot_dim=1)
        self.v = pool.register(torch.zeros(shape, dtype=dtype, device=device), slot_dim=1)
        logger.info(
            "KV cache: %d slots x %d positions, %.1f MiB",
            pool.capacity, max_len, 2 * self.k.numel() * self.k.element_size() / 2**20,
        )

    def layers(self, first: int, count: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per-layer (k, v) views of slots first..first+count-1: [count, Hkv, max_len, Dh] each."""
        return [(self.k[i, first:first + count], self.v[i, first:first + count]) for i in range(self.k.shape[0])]
