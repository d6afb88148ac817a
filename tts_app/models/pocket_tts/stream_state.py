"""Per-row streaming buffers of the Mimi decoder (conv tails, transposed-conv overlaps), one row per slot.

Each streaming module asks for a buffer id at build time (``StreamBuffers.add``); the pool keeps
[slots, ...] tensors. A decode call gathers the rows it decodes into a ``StreamCall`` (the modules
read and replace their buffer there) and scatters them back afterwards, so rows decoded together
never see each other's state and a row decoded alone gets the same numbers.
"""

from __future__ import annotations

import torch


class StreamBuffers:
    """Buffer shapes (without the slot dimension) collected while the modules are built."""

    def __init__(self) -> None:
        self.shapes: list[tuple[int, ...]] = []

    def add(self, shape: tuple[int, ...]) -> int:
        self.shapes.append(shape)
        return len(self.shapes) - 1


class StreamCall:
    """The gathered buffers of the rows of one call ([B, ...] each); ``None`` entries mean zeros (a fresh row)."""

    def __init__(self, bufs: list[torch.Tensor]) -> None:
        self.bufs = bufs

    def get(self, sid: int) -> torch.Tensor:
        return self.bufs[sid]

    def put(self, sid: int, value: torch.Tensor) -> None:
        self.bufs[sid] = value


class StreamPool:
    """[slots, ...] zeros for every buffer; ``reset`` zeroes a slot for a new row."""

    def __init__(self, shapes: list[tuple[int, ...]], slots: int, device: torch.device, dtype: torch.dtype) -> None:
        self.tensors = [torch.zeros((slots, *s), device=device, dtype=dtype) for s in shapes]

    def reset(self, slot: int) -> None:
        for t in self.tensors:
            t[slot].zero_()

    def gather(self, rows: torch.Tensor) -> StreamCall:
        return StreamCall([t.index_select(0, rows) for t in self.tensors])

    def scatter(self, rows: torch.Tensor, call: StreamCall) -> None:
        for t, new in zip(self.tensors, call.bufs):
            t.index_copy_(0, rows, new)

