"""Counter-based random numbers: a uniform draw is a hash of (row key, frame, codebook, token index).

A request's randomness is a pure function of its seed and of where the draw is used, so a row's
tokens never depend on which rows share its batch, on the order of calls, or on a generator
object's position; nothing random happens on the host, and the same integer ops run on CPU and
CUDA, inside a CUDA graph or a ``torch.compile`` trace.

The mix is Wellons' ``lowbias32`` (xor-shift / multiply, a bijection of 32-bit words with strong
avalanche), chained over the counter's fields. Words are held in int64 and masked to 32 bits;
every product is split so that it stays below 2**63 (signed overflow is undefined in the kernels).
"""

from __future__ import annotations

import torch

_MASK32 = 0xFFFFFFFF
_MUL_A = 0x7FEB352D
_MUL_B = 0x846CA68B
_ROUND = 0x9E3779B9  # added between chained fields so a zero field still moves the state


def _mul32(x: torch.Tensor, c: int) -> torch.Tensor:
    """(x * c) mod 2**32 for 32-bit x held in int64: low and high 16 bits of c separately (< 2**48 each)."""
    lo = x * (c & 0xFFFF)
    hi = ((x * (c >> 16)) & 0xFFFF) << 16
    return (lo + hi) & _MASK32


def mix32(x: torch.Tensor) -> torch.Tensor:
    """lowbias32 on 32-bit words held in int64 (any shape)."""
    x = x & _MASK32
    x = x ^ (x >> 16)
    x = _mul32(x, _MUL_A)
    x = x ^ (x >> 15)
    x = _mul32(x, _MUL_B)
    return x ^ (x >> 16)


def row_key(seed: int) -> int:
    """A request's 32-bit key from its seed (any non-negative int up to 64 bits), computed on the host once."""
    lo = torch.tensor([seed & _MASK32], dtype=torch.long)
    hi = torch.tensor([(seed >> 32) & _MASK32], dtype=torch.long)
    return int(mix32(mix32(lo + _ROUND) ^ hi)[0])


def row_uniform(key_B: torch.Tensor, frame_B: torch.Tensor, codebook_C: torch.Tensor, width: int) -> torch.Tensor:
    """U[0, 1) draws, [B, C, width] float32: element (b, c, v) depends only on (key_B[b], frame_B[b], codebook_C[c], v).

    key_B: each row's ``row_key``; frame_B: the frame (or token position) being sampled, per row;
    codebook_C: the codebooks sampled at that frame; v: the vocabulary index the draw is for.
    """
    h_B = mix32(key_B + _ROUND)
    h_B = mix32(h_B ^ (frame_B & _MASK32))
    h_BxC = mix32(h_B[:, None] ^ (codebook_C[None, :] + _ROUND))
    token_V = torch.arange(width, device=key_B.device, dtype=torch.long)
    h_BxCxV = mix32(mix32(h_BxC[:, :, None] ^ token_V) + _ROUND)
    # 24 high bits: exactly representable in float32, so the draw is < 1 and the step is 2**-24.
    return (h_BxCxV >> 8).to(torch.float32) * (1.0 / (1 << 24))
