"""T3's next-token choice, per row: classifier-free guidance, then the official processor order
(repetition penalty, temperature, min-p, top-p), then a draw from the row's own counter-based noise.

Order and arithmetic follow the official loop (transformers' RepetitionPenalty, MinP and TopP warpers),
so under min_p = 1.0 (arg-max only) the tokens equal the official ones; the noise is a
function of the row's seed and the token's position (``tts_app.models.layers.row_noise``), so a row's
draws never depend on its batch mates. The draw is the exponential race (argmax p / E, E ~ Exp(1)),
the law of ``torch.multinomial``.
"""

from __future__ import annotations

from typing import Optional

import torch


def guided(logits_2BxV: torch.Tensor, cfg_B: torch.Tensor) -> torch.Tensor:
    """Rows come in pairs (conditional, unconditional): cond + w * (cond - uncond), [B, V]."""
    cond, uncond = logits_2BxV[0::2], logits_2BxV[1::2]
    return cond + cfg_B[:, None] * (cond - uncond)


def next_tokens(
    logits_BxV: torch.Tensor,
    seen_BxV: torch.Tensor,
    penalty_B: torch.Tensor,
    temperature_B: torch.Tensor,
    min_p_B: torch.Tensor,
    top_p_B: torch.Tensor,
    uniform_BxV: torch.Tensor,
    allowed_BxV: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """One token id per row, [B] int64."""
    pen = penalty_B[:, None]
    logits = torch.where(seen_BxV, torch.where(logits_BxV < 0, logits_BxV * pen, logits_BxV / pen), logits_BxV)
    if allowed_BxV is not None:
        logits = logits.masked_fill(~allowed_BxV, float("-inf"))  # sample over the valid subset only
    logits = logits / temperature_B[:, None]
    probs = logits.softmax(dim=-1)
    # min-p: drop tokens below min_p x the top probability (the top token always stays).
    logits = logits.masked_fill(probs < min_p_B[:, None] * probs.amax(dim=-1, keepdim=True), float("-inf"))
    # top-p (transformers' form): drop the low tail whose cumulative mass is <= 1 - top_p, keep the top token.
    sorted_logits, order = logits.sort(dim=-1, descending=False)
    tail = sorted_logits.softmax(dim=-1).cumsum(dim=-1) <= (1 - top_p_B[:, None])
    tail[:, -1] = False
    logits = logits.masked_fill(tail.scatter(1, order, tail), float("-inf"))
    exp_noise = -torch.log1p(-uniform_BxV.clamp(0.0, 1.0 - 1e-7))  # Exp(1), > 0
    return (logits.log_softmax(dim=-1) - exp_noise.clamp_min(1e-20).log()).argmax(dim=-1)
