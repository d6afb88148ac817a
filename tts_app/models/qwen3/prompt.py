"""Prefill embeddings of one request (the layout the checkpoints were trained on, streaming-text mode).

Layout, one row per position (as ``Qwen3TTSForConditionalGeneration.generate`` in qwen-tts 0.1.1):
  role tokens "<|im_start|>assistant\\n"            text_hidden(role)
  codec control tokens (+ x-vector), all but last  tts_pad ... tts_bos  +  codec embeddings
then, without a reference transcript (x-vector only):
  first text token                                 text_hidden(text[0]) + codec_bos
  (the remaining text tokens, then tts_eos, then tts_pad forever, are fed one per generated frame)
or, in-context (reference transcript + the reference clip's codec frames):
  text track  ref text + text + tts_eos            codec track  codec_bos + one summed embedding per ref frame
  the two tracks are added position by position over the codec track's length; text left over is fed
  one per frame, a shorter text track is padded with tts_pad.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from tts_app.models.qwen3.config import Qwen3TTSConfig
from tts_app.models.qwen3.talker import Talker


@dataclass
class PromptTokens:
    role_ids: list[int]  # "<|im_start|>assistant\n"
    text_ids: list[int]  # the text to speak


@dataclass
class IclReference:
    """In-context cloning: the reference clip's transcript tokens and its codec frames."""

    text_ids: list[int]
    codes_TxG: torch.Tensor  # [T_ref, G] int64


def _prefix(
    talker: Talker, cfg: Qwen3TTSConfig, role_ids: list[int], speaker_embed_D: Optional[torch.Tensor],
    language_id: Optional[int],
) -> tuple[torch.Tensor, torch.Tensor]:
    """(role + codec-control rows [P, D], the codec_bos embedding [1, D] that the caller places)."""
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
    text_track = torch.cat((pad_D.expand(codec_NxD.shape[0] - 2, -1), bos_D[None]))
    prefix = torch.cat((talker.text_hidden(ids(role_ids)), text_track + codec_NxD[:-1]))
    return prefix, codec_NxD[-1:]


@torch.inference_mode()
def build_prompt(
    talker: Talker,
    cfg: Qwen3TTSConfig,
    tokens: PromptTokens,
    speaker_embed_D: Optional[torch.Tensor] = None,
    language_id: Optional[int] = None,
    icl: Optional[IclReference] = None,
) -> tuple[torch.Tensor, list[int]]:
    """(prompt embeddings [T, D], trailing text ids fed one per frame, tts_pad after them) for one request."""
    if not tokens.text_ids:
        raise ValueError("text tokenised to nothing")
    dev = talker.codec_head.weight.device
    ids = lambda xs: torch.tensor(xs, dtype=torch.long, device=dev)  # noqa: E731
    prefix, codec_bos = _prefix(talker, cfg, tokens.role_ids, speaker_embed_D, language_id)
    if icl is None:
        first = talker.text_hidden(ids(tokens.text_ids[:1])) + codec_bos
        return torch.cat((prefix, first)), list(tokens.text_ids[1:]) + [cfg.tts_eos_token_id]

    text_all = list(icl.text_ids) + list(tokens.text_ids) + [cfg.tts_eos_token_id]
    codec_track = torch.cat((codec_bos, talker.frame_embedding(icl.codes_TxG.to(dev))))  # [1 + T_ref, D]
    n = codec_track.shape[0]
    text_track = talker.text_hidden(ids(text_all[:n]))
    if text_track.shape[0] < n:
        pad = talker.text_hidden(ids([cfg.tts_pad_token_id]))
        text_track = torch.cat((text_track, pad.expand(n - text_track.shape[0], -1)))
    return torch.cat((prefix, text_track + codec_track)), text_all[n:]
