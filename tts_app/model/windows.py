"""Window plan of the streaming decoder.

The HiFi-GAN decoder is a stack of convolutions, so an output sample depends
only on latent frames near it. Measured on en_US-joe-medium by perturbing one
latent frame and diffing the decoded audio (benchmarks/receptive_field.py):
the change reaches 10.1 frames to the left and 11.1 frames to the right of the
frame (any nonzero difference). With ``CONTEXT_FRAMES = 12`` on each side of a
window, every output sample sees exactly the frames it sees in a whole-utterance
decode, so the concatenated windows equal that decode up to float rounding.

The first window is short (``first`` output frames plus context: the first
audio comes fast); the windows after it are longer (``window``), since every
window pays ``2 * context`` frames of recomputation. All windows but the first
and last have the same input length; the last ends at the last frame and its
length is rounded up to a multiple of ``LAST_WINDOW_STEP`` by taking more left
context, so only a few distinct lengths occur. Windows of equal length from many
requests run in one batched call with no padding at all, so no row can see
another's frames.
"""

from __future__ import annotations

from dataclasses import dataclass

CONTEXT_FRAMES = 12
FIRST_WINDOW_FRAMES = 64
WINDOW_FRAMES = 160
LAST_WINDOW_STEP = 8


@dataclass(frozen=True)
class Window:
    """Decode latent frames [in_start, in_end) and keep output frames [out_start, out_end)."""

    in_start: int
    in_end: int
    out_start: int
    out_end: int

    @property
    def in_frames(self) -> int:
        return self.in_end - self.in_start


def plan_windows(
    n_frames: int,
    window: int = WINDOW_FRAMES,
    context: int = CONTEXT_FRAMES,
    first: int = FIRST_WINDOW_FRAMES,
) -> list[Window]:
    """Cover ``n_frames`` output frames: a first window of ``first + 2 * context`` input frames, then ``window + 2 * context``."""
    if n_frames <= 0:
        return []
    if window <= 0 or first <= 0 or context < 0:
        raise ValueError("windows must be positive and context non-negative")
    first_span = first + 2 * context
    if n_frames <= first_span:
        return [Window(0, n_frames, 0, n_frames)]
    plan = [Window(0, first_span, 0, first_span - context)]
    span = window + 2 * context
    while plan[-1].out_end < n_frames:
        out_start = plan[-1].out_end
        if out_start + window + context >= n_frames:
            length = min(span, -(-(n_frames - out_start + context) // LAST_WINDOW_STEP) * LAST_WINDOW_STEP)
            plan.append(Window(n_frames - length, n_frames, out_start, n_frames))
        else:
            plan.append(Window(out_start - context, out_start + window + context, out_start, out_start + window))
    return plan
