"""Per-row sampling with fixed tensor shapes (so it can live inside a CUDA graph).

Every row has its own temperature, top-k, top-p and repetition penalty; temperature <= 0
means greedy. Randomness comes in as a uniform noise tensor, a function of the row's seed and the
draw's position (``tts_app.models.layers.row_noise``), so a row's tokens never depend on its batch mates.
Sampling is the exponential race: argmax(p / E) with E ~ Exp(1) picks token i with
probability p_i, the same law as ``torch.multinomial``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch


@dataclass
class SamplingParams:
    """Generation settings of one request (defaults follow the checkpoints' generation_config.json)."""

    temperature: float = 0.9
    top_k: int = 50
    top_p: float = 1.0
    repetition_penalty: float = 1.05
    min_new_tokens: int = 2
    max_new_tokens: int = 2048
    subtalker_temperature: float = 0.9
    subtalker_top_k: int = 50
    subtalker_top_p: float = 1.0

    @classmethod
    def greedy(cls, **overrides: float) -> "SamplingParams":
        base = dict(temperature=0.0, subtalker_temperature=0.0, repetition_penalty=1.0)
        base.update(overrides)
        return cls(**base)  # type: ignore[arg-type]


def sample_tokens(
    logits_BxV: torch.Tensor,
    temperature_B: torch.Tensor,
    top_k_B: torch.Tensor,
    top_p_B: torch.Tensor,
    uniform_BxV: torch.Tensor,
    repetition_penalty_B: Optional[torch.Tensor] = None,
    seen_BxV: Optional[torch.Tensor] = None,
    banned_BxV: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Token index per row, [B] int64. Order as in transformers: penalty, bans, temperature, top-k, top-p."""
    logits = logits_BxV.float()
    V = logits.shape[-1]
    if repetition_penalty_B is not None and seen_BxV is not None:
        pen = repetition_penalty_B[:, None]
        penalised = torch.where(logits < 0, logits * pen, logits / pen)
        logits = torch.where(seen_BxV, penalised, logits)
    if banned_BxV is not None:
        logits = logits.masked_fill(banned_BxV, float("-inf"))
    greedy_B = logits.argmax(dim=-1)

    scaled = logits / temperature_B.clamp_min(1e-5)[:, None]
    sorted_vals, _ = scaled.sort(dim=-1, descending=True)  # [B, V]
    k = torch.where(top_k_B > 0, top_k_B, torch.full_like(top_k_B, V)).clamp(1, V)
    kth_B = sorted_vals.gather(1, (k - 1)[:, None])  # [B, 1]
    scaled = scaled.masked_fill(scaled < kth_B, float("-inf"))
    # Top-p: keep the smallest prefix of the sorted distribution whose mass reaches p (at least one token).
    sorted_vals = sorted_vals.masked_fill(sorted_vals < kth_B, float("-inf"))
    probs_sorted = sorted_vals.softmax(dim=-1)
    mass_before = probs_sorted.cumsum(dim=-1) - probs_sorted
    keep_sorted = mass_before < top_p_B[:, None]
    keep_sorted[:, 0] = True
    cutoff_B = torch.where(keep_sorted, sorted_vals, torch.full_like(sorted_vals, float("inf"))).min(dim=-1).values
    scaled = scaled.masked_fill(scaled < cutoff_B[:, None], float("-inf"))

    exp_noise = -torch.log1p(-uniform_BxV[:, :V].clamp(0.0, 1.0 - 1e-7))  # Exp(1), > 0
    race = scaled.log_softmax(dim=-1) - exp_noise.clamp_min(1e-20).log()
    sampled_B = race.argmax(dim=-1)
    return torch.where(temperature_B > 0, sampled_B, greedy_B)
