"""Finding a Qwen3-TTS checkpoint on disk and loading it into our modules. Nothing here downloads.

A checkpoint directory holds config.json, *.safetensors (keys ``talker.*``, ``speaker_encoder.*``),
the text tokenizer files and speech_tokenizer/ (config.json, *.safetensors with ``decoder.*``).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch
from torch import nn

from tts_app import settings

from tts_app.models.qwen3.codec import CodecDecoder
from tts_app.models.qwen3.config import CodecConfig, Qwen3TTSConfig
from tts_app.models.qwen3.errors import WeightsMissing
from tts_app.models.qwen3.speaker_encoder import SpeakerEncoder
from tts_app.models.qwen3.talker import Talker
from tts_app.models.qwen3.text_tokenizer import TextTokenizer

logger = logging.getLogger(__name__)

ENV_VAR = "TTS_APP_QWEN3_PATH"
KNOWN_REPOS = ("Qwen/Qwen3-TTS-12Hz-0.6B-Base", "Qwen/Qwen3-TTS-12Hz-1.7B-Base")
HOW_TO_GET = (
    f"Qwen3-TTS weights not found: pass --model-path DIR or set {ENV_VAR}=DIR, or put them in the Hugging Face "
    f"cache; to fetch them (about 2.5 GB) run `huggingface-cli download {KNOWN_REPOS[0]} --local-dir DIR` "
    "and `pip install -r requirements-gpu.txt`"
)


@dataclass
class LoadedQwen3:
    config: Qwen3TTSConfig
    talker: Talker
    codec: CodecDecoder
    speaker_encoder: Optional[SpeakerEncoder]
    tokenizer: TextTokenizer
    path: Path


def _is_checkpoint(path: Path) -> bool:
    return (
        (path / "config.json").is_file()
        and (path / "speech_tokenizer" / "config.json").is_file()
        and any(path.glob("*.safetensors"))
    )


def _hf_cache_snapshots() -> list[Path]:
    """Snapshots of the known repos in the local Hugging Face cache (file-system lookup only)."""
    hub = os.environ.get("HF_HUB_CACHE") or os.path.join(
        os.environ.get("HF_HOME", os.path.join(Path.home(), ".cache", "huggingface")), "hub"
    )
    found: list[Path] = []
    for repo in KNOWN_REPOS:
        snaps = Path(hub) / ("models--" + repo.replace("/", "--")) / "snapshots"
        if snaps.is_dir():
            found += sorted(snaps.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)
    return found


def find_checkpoint(model_path: Optional[str] = None) -> Path:
    """The first complete checkpoint among: ``model_path``, $TTS_APP_QWEN3_PATH, the HF cache."""
    candidates = [Path(p).expanduser() for p in (model_path, settings.value(ENV_VAR)) if p]
    for path in candidates + _hf_cache_snapshots():
        if _is_checkpoint(path):
            return path
        if path in candidates:
            logger.warning("%s is not a Qwen3-TTS checkpoint (needs config.json, *.safetensors, speech_tokenizer/)", path)
    raise WeightsMissing(HOW_TO_GET)


def _read_safetensors(directory: Path) -> dict[str, torch.Tensor]:
    try:
        from safetensors.torch import load_file  # optional dependency (requirements-gpu.txt): only when weights load
    except ImportError as e:
        raise WeightsMissing("reading Qwen3-TTS weights needs safetensors: pip install -r requirements-gpu.txt") from e
    state: dict[str, torch.Tensor] = {}
    for f in sorted(directory.glob("*.safetensors")):
        state.update(load_file(str(f)))
    return state


def _load_into(module: nn.Module, state: dict[str, torch.Tensor], prefix: str) -> None:
    part = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
    missing, unexpected = module.load_state_dict(part, strict=False)
    if missing or unexpected:
        raise RuntimeError(f"checkpoint does not match {type(module).__name__}: missing {missing[:5]}, unexpected {unexpected[:5]}")


def load_qwen3(path: Path, device: torch.device, dtype: torch.dtype) -> LoadedQwen3:
    cfg = Qwen3TTSConfig.from_json(path / "config.json")
    codec_cfg = CodecConfig.from_json(path / "speech_tokenizer" / "config.json")
    state = _read_safetensors(path)
    talker = Talker(cfg.talker_config)
    _load_into(talker, state, "talker.")
    speaker_encoder = None
    if cfg.speaker_encoder_config is not None and any(k.startswith("speaker_encoder.") for k in state):
        speaker_encoder = SpeakerEncoder(cfg.speaker_encoder_config)
        _load_into(speaker_encoder, state, "speaker_encoder.")
    codec = CodecDecoder(codec_cfg)
    _load_into(codec, _read_safetensors(path / "speech_tokenizer"), "decoder.")
    tokenizer = TextTokenizer.from_dir(path)
    move = lambda m: m.to(device=device, dtype=dtype).eval()  # noqa: E731
    logger.info("loaded Qwen3-TTS from %s (%s, %s)", path, device, dtype)
    return LoadedQwen3(cfg, move(talker), move(codec), move(speaker_encoder) if speaker_encoder else None, tokenizer, path)
