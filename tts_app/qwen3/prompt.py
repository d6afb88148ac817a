"""Prefill embeddings of one request (the layout the checkpoints were trained on, streaming-text mode).

Layout, one row per position:
  role tokens "<|im_start|>assistant\\n"            text_hidden(role)
  codec control tokens (+ x-vector), all but last  tts_pad ... tts_bos  +  codec embeddings
  first text token                                 text_hidden(text[0]) + codec_bos
The remaining text tokens (then tts_eos, then tts_pad forever) are added to the talker input
one per generated frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from .config import Qwen3TTSConfig
from .talker import Talker


@dataclass
class PromptTokens:
    role_ids: list[int]  # "<|im_start|>assistant\n"
    text_ids: list[int]  # the text to speak


@torch.inference_mode()
def build_prompt(
    talker: Talker,
    cfg: Qwen3TTSConfig,
    tokens: PromptTokens,
    speaker_embed_D: Optional[torch.Tensor] = None,
    language_id: Optional[int] = None,
) -> tuple[torch.Tensor, list[int]]:
    """(prompt embeddings [T, D], trailing text ids) for one request."""
    if not tokens.text_ids:
        raise ValueError("text tokenised to nothing")
    tc = cfg.talker_config
    dev = talker.codec_head.weight.device
    ids = lambda xs: torch.tensor(xs, dtype=torch.long, device=dev)  # noqa: E731

    if language_id is None:
        control = [tc.codec_nothink_id, tc.codec_think_bos_id, tc.codec_think_eos_id]
    else:
        control = [tc.codec_think_id, tc.codec_think_bos_id, language_id, tc.codec_think_eos_id]
    codec_parts = [talker.model.codec_embedding(ids(control))]
    if speaker_embed_D is not None:
        codec_parts.append(speaker_embed_D.to(dev, codec_parts[0].dtype)[None])
    codec_parts.append(talker.model.codec_embedding(ids([tc.codec_pad_id, tc.codec_bos_id])))
    codec_NxD = torch.cat(codec_parts)

    special = talker.text_hidden(ids([cfg.tts_pad_token_id, cfg.tts_bos_token_id]))
    pad_D, bos_D = special[0], special[1]
    n = codec_NxD.shape[0]
    text_track = torch.cat((pad_D.expand(n - 2, -1), bos_D[None]))
    prompt = torch.cat((
        talker.text_hidden(ids(tokens.role_ids)),
        text_track + codec_NxD[:-1],
        talker.text_hidden(ids(tokens.text_ids[:1])) + codec_NxD[-1:],
    ))
    return prompt, list(tokens.text_ids[1:]) + [cfg.tts_eos_token_id]
