"""A tiny random Chatterbox T3 (the official module with a small Llama) and the released S3Gen, in memory.

No checkpoint and no reference venv: only the official chatterbox-tts modules in this environment
(scripts/install_chatterbox.sh). Used by the fixed-shape tests and ``benchmarks/gpu_check.py --tiny``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from tts_app.models.chatterbox.config import T3Tokens
from tts_app.models.chatterbox.official import official
from tts_app.models.chatterbox.weights import backbone_from_state
from tts_app.models.layers.blocks import DecoderStack

TINY_LLAMA = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, head_dim=16, num_key_value_heads=4)


def random_t3(llama: dict[str, Any] | None = None, seed: int = 0, device: str = "cpu",
              dtype: torch.dtype = torch.float32) -> tuple[nn.Module, DecoderStack, T3Tokens]:
    """(official T3 without its Llama, our backbone with that Llama's random weights, tokens); ``llama`` None: tiny."""
    configs = official("models.t3.llama_configs").LLAMA_CONFIGS
    cfg = {**configs["Llama_520M"], **(TINY_LLAMA if llama is None else llama)}
    name = "tts_app-tests/" + "-".join(f"{k}={cfg[k]}" for k in sorted(TINY_LLAMA))
    configs.setdefault(name, cfg)
    hp = official("models.t3.modules.t3_config").T3Config()
    hp.llama_config_name, hp.use_perceiver_resampler = name, False
    torch.manual_seed(seed)
    with torch.device(device):
        t3 = official("models.t3.t3").T3(hp)
    backbone = backbone_from_state(cfg, t3.state_dict()).to(device=device, dtype=dtype)
    t3.tfmr = None
    return t3.to(dtype).eval(), backbone, T3Tokens()


def random_prompts(t3: nn.Module, lengths: list[int], seed: int = 1) -> list[torch.Tensor]:
    """[2, L, D] prefill rows (as ``T3Prompt.rows`` lays them out: conditional, then unconditional), random."""
    g = torch.Generator().manual_seed(seed)
    D = t3.speech_head.weight.shape[1]
    p = t3.speech_head.weight
    return [(0.5 * torch.randn(2, n, D, generator=g)).to(p.device, p.dtype) for n in lengths]


def random_s3gen(seed: int = 0, device: str = "cpu", dtype: torch.dtype = torch.float32) -> nn.Module:
    """The official S3Gen at its released sizes, random weights."""
    torch.manual_seed(seed)
    s3gen = official("models.s3gen").S3Gen()
    return s3gen.to(device=device, dtype=dtype).eval()


def random_ref(prompt_tokens: int, seed: int, device: str = "cpu") -> dict[str, Any]:
    """A voice's official S3Gen ref dict with random contents: prompt tokens, their mel (2 frames each), an x-vector."""
    g = torch.Generator().manual_seed(seed)
    return dict(prompt_token=torch.randint(0, 6561, (1, prompt_tokens), generator=g).to(device),
                prompt_token_len=torch.tensor([prompt_tokens]),
                prompt_feat=torch.randn(1, 2 * prompt_tokens, 80, generator=g).to(device),
                embedding=torch.randn(1, 192, generator=g).to(device))
