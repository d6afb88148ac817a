"""When a row's speech tokens become audio, and how the chunks join.

Chunks: the first after ``first_tokens`` speech tokens (0.4 s of audio: an early first sound), then every
``chunk_tokens`` (1 s: fewer flow passes). A chunk's flow pass sees ``context_tokens`` already spoken tokens
on its left and every token generated so far on its right, and emits audio only for tokens that have
``lookahead_tokens`` after them: the flow's encoder reads 3 tokens ahead (its pre-lookahead layer), so
frames short of that would change once the next tokens come. Each row's starting noise is one fixed
bank over its whole utterance, so overlapping windows see the same noise on the same frames.

Joins: the vocoder gets ``vocoder_context_frames`` of already-spoken mel on the left; the last
``crossfade_samples`` of each chunk are held back and cross-faded (raised cosine) with the same stretch
as the next chunk's vocoder call renders it.

``chunk_tokens = 0`` turns streaming off: the row is rendered whole when T3 is done, exactly as the
official ``generate`` renders it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import torch


@dataclass(frozen=True)
class ChunkPlan:
    first_tokens: int = 10
    chunk_tokens: int = 25
    lookahead_tokens: int = 3
    context_tokens: int = 25
    vocoder_context_frames: int = 6
    crossfade_samples: int = 480  # 20 ms at 24 kHz: one mel frame

    @property
    def streaming(self) -> bool:
        return self.chunk_tokens > 0

    def emit_upto(self, done_tokens: int, available: int, finished: bool) -> Optional[int]:
        """Speech tokens whose audio can go out now (exclusive end), or None when none can yet."""
        if finished:
            return available  # the last chunk (it also flushes the held crossfade)
        if not self.streaming:
            return None
        upto = available - self.lookahead_tokens
        want = self.first_tokens if done_tokens == 0 else self.chunk_tokens
        return upto if upto - done_tokens >= want else None

    def window_start(self, done_tokens: int) -> int:
        return max(0, done_tokens - self.context_tokens)


@dataclass
class RowStream:
    """One row's streaming state: bounded (a few mel frames and one crossfade of samples)."""

    noise_bank: Optional[torch.Tensor] = None  # [80, prompt frames + 2 * max tokens] (streaming only)
    done_tokens: int = 0
    mel_tail: Optional[torch.Tensor] = None  # [80, <= vocoder_context_frames] last frames already voiced
    held: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    finished: bool = False


def window_noise(bank_80xF: torch.Tensor, prompt_frames_2Lp: int, start: int, end: int) -> torch.Tensor:
    """The bank's prompt frames + the frames of speech tokens start..end-1."""
    return torch.cat([bank_80xF[:, :prompt_frames_2Lp], bank_80xF[:, prompt_frames_2Lp + 2 * start:prompt_frames_2Lp + 2 * end]], dim=1)


def join(stream: RowStream, wav: np.ndarray, context_samples: int, crossfade: int, final: bool) -> np.ndarray:
    """Samples to send from a vocoder call whose first ``context_samples`` re-render audio already sent."""
    new = wav[context_samples:]
    if stream.held.size:
        n = stream.held.size
        ramp = (0.5 - 0.5 * np.cos(np.pi * (np.arange(n) + 0.5) / n)).astype(np.float32)  # 0 -> 1
        overlap = wav[context_samples - n:context_samples]
        new = np.concatenate([stream.held * (1 - ramp) + overlap * ramp, new])
    if final or new.size <= crossfade:
        stream.held = np.zeros(0, dtype=np.float32)
        return new.astype(np.float32, copy=False) if final else _hold_all(stream, new)
    stream.held = new[-crossfade:].astype(np.float32)
    return new[:-crossfade].astype(np.float32, copy=False)


def _hold_all(stream: RowStream, new: np.ndarray) -> np.ndarray:
    stream.held = new.astype(np.float32)
    return np.zeros(0, dtype=np.float32)
