"""The code predictor: a small transformer that fills codebooks 1..G-1 of one talker frame.

Per frame it sees [talker hidden state, embedding of codebook 0] and then its own previous
codes, one per inner step, each codebook with its own embedding table and output head. Its
KV cache is a scratch [B, Hkv, G, Dh] per layer, rebuilt for every frame.
"""

from __future__ import annotations

import torch
from torch import nn

from tts_app.models.qwen3.config import CodePredictorConfig, TalkerConfig
from tts_app.models.layers.blocks import DecoderStack, LayerDims, causal_mask
from tts_app.models.qwen3.sampling import sample_tokens


class CodePredictorModel(DecoderStack):
    def __init__(self, cfg: CodePredictorConfig, talker_hidden: int) -> None:
        super().__init__(cfg.num_hidden_layers, LayerDims.of(cfg), cfg.rope_theta)
        # Embeddings live in the talker's width; small_to_mtp_projection maps them down.
        self.codec_embedding = nn.ModuleList(
            nn.Embedding(cfg.vocab_size, talker_hidden) for _ in range(cfg.num_code_groups - 1)
        )


class CodePredictor(nn.Module):
    def __init__(self, cfg: CodePredictorConfig, talker_cfg: TalkerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.model = CodePredictorModel(cfg, talker_cfg.hidden_size)
        self.lm_head = nn.ModuleList(
            nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False) for _ in range(cfg.num_code_groups - 1)
        )
        self.small_to_mtp_projection: nn.Module = (
            nn.Linear(talker_cfg.hidden_size, cfg.hidden_size, bias=True)
            if cfg.hidden_size != talker_cfg.hidden_size
            else nn.Identity()
        )

    def embed_residual_codes(self, codes_BxGm1: torch.Tensor) -> torch.Tensor:
        """Sum of the codebook 1..G-1 embeddings, [B, talker_hidden]."""
        return sum(emb(codes_BxGm1[:, g]) for g, emb in enumerate(self.model.codec_embedding))  # type: ignore[return-value]

    def predict(
        self,
        talker_hidden_BxD: torch.Tensor,
        code0_embed_BxD: torch.Tensor,
        temperature_B: torch.Tensor,
        top_k_B: torch.Tensor,
        top_p_B: torch.Tensor,
        uniform_BxGm1xV: torch.Tensor,
    ) -> torch.Tensor:
        """Codebooks 1..G-1 for each row, [B, G-1]: a hand-written decode loop over a scratch KV cache."""
        B = talker_hidden_BxD.shape[0]
        G = self.cfg.num_code_groups
        dev, dtype = talker_hidden_BxD.device, talker_hidden_BxD.dtype
        attn0 = self.model.layers[0].self_attn
        kv = [
            (
                torch.zeros(B, attn0.kv_heads, G, attn0.head_dim, device=dev, dtype=dtype),
                torch.zeros(B, attn0.kv_heads, G, attn0.head_dim, device=dev, dtype=dtype),
            )
            for _ in self.model.layers
        ]
        start_B = torch.zeros(B, dtype=torch.long, device=dev)
        idx_BxT = torch.arange(2, device=dev)[None].expand(B, 2)
        x_BxTxD = self.small_to_mtp_projection(torch.stack((talker_hidden_BxD, code0_embed_BxD), dim=1))
        codes: list[torch.Tensor] = []
        for g in range(G - 1):
            h_BxTxD = self.model(x_BxTxD, idx_BxT, causal_mask(idx_BxT, G, start_B), kv, idx_BxT)
            logits = self.lm_head[g](h_BxTxD[:, -1])
            tok_B = sample_tokens(logits, temperature_B, top_k_B, top_p_B, uniform_BxGm1xV[:, g])
            codes.append(tok_B)
            if g == G - 2:
                break
            x_BxTxD = self.small_to_mtp_projection(self.model.codec_embedding[g](tok_B))[:, None]
            idx_BxT = idx_BxT[:, -1:] + 1
        return torch.stack(codes, dim=1)
