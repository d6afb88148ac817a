"""The decode call's one device-to-host copy: into a pinned buffer, then an event (CUDA); a plain view on CPU."""

from __future__ import annotations

import numpy as np
import torch


class HostOutput:
    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._pinned: dict[tuple[int, ...], torch.Tensor] = {}
        self._event = torch.cuda.Event() if device.type == "cuda" else None

    def fetch(self, out: torch.Tensor) -> np.ndarray:
        """``out`` as a host array; valid until the next fetch of the same shape (callers copy what they keep)."""
        if self._event is None:
            return out.numpy()
        buf = self._pinned.get(tuple(out.shape))
        if buf is None:
            buf = self._pinned[tuple(out.shape)] = torch.empty(out.shape, dtype=out.dtype, pin_memory=True)
        buf.copy_(out, non_blocking=True)
        self._event.record()
        self._event.synchronize()  # waits for this copy only, not for the whole device
        return buf.numpy()
