"""How a chunk's latent frames are fed to the streaming decoder, one window per engine step.

The first window is short, so the first audio comes fast; the windows after it
are longer, since every decoder call pays a fixed cost and, in its first
stage, recomputes about 11 frames of context (stream_decoder.py). Windows carry
no context of their own: the decoder stream keeps what it needs.
"""

from __future__ import annotations

from dataclasses import dataclass

FIRST_WINDOW_FRAMES = 64
WINDOW_FRAMES = 160


@dataclass(frozen=True)
class Window:
    """Latent frames [start, end) of a chunk; ``last`` flushes the decoder stream."""

    start: int
    end: int
    last: bool


def plan_windows(n_frames: int, window: int = WINDOW_FRAMES, first: int = FIRST_WINDOW_FRAMES) -> list[Window]:
    """Cover ``n_frames`` latent frames: ``first`` frames, then ``window`` frames at a time.

    A remainder under a quarter window joins the window before it, so no step
    is spent on a sliver; but not the first window, which would then be its
    chunk's only (and last) call and run at an exact, uncached shape
    (stream_decoder.py).
    """
    if n_frames <= 0:
        return []
    if window <= 0 or first <= 0:
        raise ValueError("windows must be positive")
    bounds = [0, min(first, n_frames)]
    while bounds[-1] < n_frames:
        end = bounds[-1] + window
        bounds.append(n_frames if n_frames - end < window // 4 else end)
    return [Window(a, b, b == n_frames) for a, b in zip(bounds, bounds[1:])]
