"""The talker: a Qwen3 decoder whose tokens are codec frames; it predicts codebook 0.

Its input at each frame is the sum of the frame's G codebook embeddings plus the projected
embedding of the next text token (or the tts pad once the text is used up).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tts_app.models.qwen3.code_predictor import CodePredictor
from tts_app.models.qwen3.config import TalkerConfig
from tts_app.models.layers.blocks import DecoderStack, LayerDims


class TalkerModel(DecoderStack):
    def __init__(self, cfg: TalkerConfig) -> None:
        super().__init__(cfg.num_hidden_layers, LayerDims.of(cfg), cfg.rope_theta)
        self.codec_embedding = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.text_embedding = nn.Embedding(cfg.text_vocab_size, cfg.text_hidden_size)


class TextProjection(nn.Module):
    def __init__(self, text_hidden: int, hidden: int) -> None:
        super().__init__()
        self.linear_fc1 = nn.Linear(text_hidden, text_hidden, bias=True)
        self.linear_fc2 = nn.Linear(text_hidden, hidden, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear_fc2(F.silu(self.linear_fc1(x)))


class Talker(nn.Module):
    def __init__(self, cfg: TalkerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.model = TalkerModel(cfg)
        self.text_projection = TextProjection(cfg.text_hidden_size, cfg.hidden_size)
        self.codec_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        self.code_predictor = CodePredictor(cfg.code_predictor_config, cfg)

    @property
    def num_valid_tokens(self) -> int:
        """Sampling space of codebook 0: the codebook entries plus EOS (index ``codebook_size``)."""
        return self.cfg.code_predictor_config.vocab_size + 1

    def text_hidden(self, text_ids: torch.Tensor) -> torch.Tensor:
        """Projected text embeddings, [..., D]."""
        return self.text_projection(self.model.text_embedding(text_ids))

    def valid_logits(self, h_BxD: torch.Tensor) -> torch.Tensor:
        """Logits over codebook entries + EOS only, [B, codebook_size + 1]; the control tokens are never scored."""
        n = self.cfg.code_predictor_config.vocab_size
        eos = self.cfg.codec_eos_token_id
        w = self.codec_head.weight
        return torch.cat((F.linear(h_BxD, w[:n]), F.linear(h_BxD, w[eos:eos + 1])), dim=-1)

    def index_to_token(self, idx_B: torch.Tensor) -> torch.Tensor:
        """Map a sampling index back to the codec token id (the last index is EOS)."""
        n = self.cfg.code_predictor_config.vocab_size
        return torch.where(idx_B == n, torch.full_like(idx_B, self.cfg.codec_eos_token_id), idx_B)

    def frame_embedding(self, codes_BxG: torch.Tensor) -> torch.Tensor:
        """Talker input for a complete frame: sum of its G codebook embeddings, [B, D]."""
        return self.model.codec_embedding(codes_BxG[:, 0]) + self.code_predictor.embed_residual_codes(codes_BxG[:, 1:])
