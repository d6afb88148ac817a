"""Finding a Chatterbox checkpoint on disk and loading it. Nothing here downloads.

A checkpoint folder holds the released files: ve.safetensors, t3_cfg.safetensors, s3gen.safetensors,
tokenizer.json and conds.pt (the built-in voice). T3's Llama dimensions are not stored in it: they are the
official ``Llama_520M``, unless the folder has a ``t3_llama.json`` with overrides (the tests' tiny
random-weight T3 has one; released checkpoints do not).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import torch
from torch import nn

from tts_app import settings

from tts_app.models.available import CHATTERBOX_ENV as ENV_VAR
from tts_app.models.available import CHATTERBOX_FILES as FILES
from tts_app.models.available import CHATTERBOX_REPO as REPO_ID
from tts_app.models.available import hf_cache_snapshot
from tts_app.models.available import is_chatterbox_checkpoint as is_checkpoint
from tts_app.models.layers.blocks import DecoderStack, LayerDims
from tts_app.models.chatterbox.config import T3Tokens
from tts_app.models.chatterbox.official import official

logger = logging.getLogger(__name__)

LLAMA_OVERRIDES = "t3_llama.json"
HOW_TO_GET = (
    f"Chatterbox weights not found: pass --model-path DIR or set {ENV_VAR}=DIR (a folder with "
    f"{', '.join(FILES)}), or run `python -m tts_app fetch chatterbox --dir DIR` (about 3.2 GB)"
)


class WeightsMissing(RuntimeError):
    """Raised with a one-line explanation of how to get the weights."""


@dataclass
class LoadedChatterbox:
    t3: nn.Module  # the official T3 without its Llama (``tfmr``): embeddings, conditioning encoder, heads
    backbone: DecoderStack  # T3's Llama layers, in our KV-cached stack
    s3gen: nn.Module
    voice_encoder: nn.Module
    tokenizer: Any  # the official EnTokenizer
    builtin: Any  # the official Conditionals of conds.pt
    tokens: T3Tokens
    path: Path


def find_checkpoint(model_path: Optional[str] = None) -> Path:
    """``model_path``, else $TTS_APP_CHATTERBOX_PATH, else the newest complete HF-cache snapshot; raises WeightsMissing."""
    for given in (model_path, settings.value(ENV_VAR)):
        if given:
            path = Path(given).expanduser()
            if not is_checkpoint(path):
                raise WeightsMissing(f"{path} is not a Chatterbox checkpoint (needs {', '.join(FILES)})")
            return path
    snap = hf_cache_snapshot(REPO_ID, os.environ, is_checkpoint)
    if snap is None:
        raise WeightsMissing(HOW_TO_GET)
    return snap


def llama_config(path: Optional[Path] = None) -> dict[str, Any]:
    """The official Llama_520M dims, updated from ``path``/t3_llama.json when there is one."""
    cfg = dict(official("models.t3.llama_configs").LLAMA_CONFIGS["Llama_520M"])
    extra = path / LLAMA_OVERRIDES if path is not None else None
    if extra is not None and extra.is_file():
        cfg.update(json.loads(extra.read_text()))
    return cfg


def backbone_from_state(cfg: dict[str, Any], state: dict[str, torch.Tensor]) -> DecoderStack:
    """Our KV-cached stack holding T3's Llama layers (``tfmr.*`` keys of a T3 state dict)."""
    dims = LayerDims(cfg["hidden_size"], cfg["intermediate_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"],
                     cfg["head_dim"], cfg["rms_norm_eps"], cfg.get("attention_bias", False), qk_norm=False)
    stack = DecoderStack(cfg["num_hidden_layers"], dims, cfg["rope_theta"], cfg.get("rope_scaling"))
    own = {k[len("tfmr."):]: v for k, v in state.items() if k.startswith("tfmr.") and k != "tfmr.embed_tokens.weight"}
    stack.load_state_dict(own, strict=True)
    return stack.eval()


def _t3(cfg: dict[str, Any], state: dict[str, torch.Tensor], device: torch.device) -> nn.Module:
    """The official T3 built without allocating its Llama (its layers live in our backbone)."""
    llama_configs = official("models.t3.llama_configs")
    T3Config = official("models.t3.modules.t3_config").T3Config
    T3 = official("models.t3.t3").T3
    name = "tts_app/" + json.dumps(cfg, sort_keys=True)  # T3 looks its backbone up in this table by name
    llama_configs.LLAMA_CONFIGS.setdefault(name, cfg)
    hp = T3Config(text_tokens_dict_size=state["text_emb.weight"].shape[0])
    hp.llama_config_name = name
    hp.use_perceiver_resampler = any(k.startswith("cond_enc.perceiver.") for k in state)
    with torch.device("meta"):
        t3 = T3(hp)
    t3.tfmr = None
    t3.to_empty(device=device)
    rest = {k: v for k, v in state.items() if not k.startswith("tfmr.")}
    missing, unexpected = t3.load_state_dict(rest, strict=False)
    if missing or unexpected:
        raise ValueError(f"t3_cfg.safetensors does not match T3: missing {missing[:3]}, unexpected {unexpected[:3]}")
    return t3.eval()


def load_chatterbox(path: Path, device: torch.device, dtype: torch.dtype = torch.float32) -> LoadedChatterbox:
    from safetensors.torch import load_file  # optional dependency (requirements-gpu.txt): only when weights load

    cfg = llama_config(path)
    state = load_file(str(path / "t3_cfg.safetensors"))
    t3 = _t3(cfg, state, device).to(dtype)
    backbone = backbone_from_state(cfg, state).to(device=device, dtype=dtype)
    del state
    s3gen = official("models.s3gen").S3Gen()
    s3gen.load_state_dict(load_file(str(path / "s3gen.safetensors")), strict=False)  # as the official loader
    voice_encoder = official("models.voice_encoder").VoiceEncoder()
    voice_encoder.load_state_dict(load_file(str(path / "ve.safetensors")))
    tokenizer = official("models.tokenizers").EnTokenizer(str(path / "tokenizer.json"))
    builtin = official("tts").Conditionals.load(path / "conds.pt", map_location=device)
    logger.info("Chatterbox loaded from %s (T3: %d layers x %d wide)", path, cfg["num_hidden_layers"], cfg["hidden_size"])
    return LoadedChatterbox(t3, backbone, s3gen.to(device).eval(), voice_encoder.to(device).eval(), tokenizer, builtin,
                            T3Tokens(), path)
