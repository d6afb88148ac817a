"""Drive a backend's rows through prepare/step to the end, as the engine does (tests only)."""

from __future__ import annotations

from typing import Any

import numpy as np


def run_rows(backend: Any, rows: list[Any]) -> list[np.ndarray]:
    """One whole audio per row ([T] float32), each the concatenation of the row's streamed windows."""
    states = backend.prepare(rows)
    audio: list[list[np.ndarray]] = [[] for _ in rows]
    active = list(range(len(rows)))
    while active:
        outs = backend.step([states[i] for i in active])
        for i, out in zip(active, outs):
            audio[i].append(out.audio)
        active = [i for i, out in zip(active, outs) if not out.done]
    return [np.concatenate(a) for a in audio]
