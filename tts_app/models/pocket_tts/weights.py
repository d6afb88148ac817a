"""Loading a Pocket TTS checkpoint folder into our modules. Nothing here downloads.

A folder holds ``config.yaml`` (the official config schema; its ``weights_path`` and ``tokenizer_path``
name files in the folder, by default ``model.safetensors`` and ``tokenizer.json``), the weights of the
voice-cloning release (keys ``flow_lm.*`` and ``mimi.*``, loaded strictly) and the tokenizer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from tts_app.models.pocket_tts.config import PocketConfig
from tts_app.models.pocket_tts.flow_lm import FlowLM
from tts_app.models.pocket_languages import Variant, variant_of_weights
from tts_app.models.pocket_tts.mimi import Mimi
from tts_app.models.pocket_tts.text import TextRules, Tokenizer

logger = logging.getLogger(__name__)


class WeightsMissing(RuntimeError):
    """The Pocket TTS checkpoint, or a package it needs, is not here (one line: how to get it)."""


@dataclass
class LoadedPocket:
    config: PocketConfig
    flow_lm: FlowLM
    mimi: Mimi
    tokenizer: Tokenizer
    rules: TextRules
    path: Path
    variant: Variant  # the released language the config's weights_path names (English for a bare file name)

    @property
    def device(self) -> torch.device:
        return self.flow_lm.input_linear.weight.device


def _file(folder: Path, name: str) -> Path:
    # A relative path inside the folder (languages/<variant>/model.safetensors, the released layout) as named;
    # otherwise (the official configs' hf:// files) the folder holds the file by its base name.
    if "://" not in name and not Path(name).is_absolute() and ".." not in Path(name).parts and (folder / name).is_file():
        return folder / name
    return folder / Path(name.split("@")[0]).name


def is_checkpoint(folder: Path) -> bool:
    if not (folder / "config.yaml").is_file():
        return False
    try:
        cfg = PocketConfig.from_yaml(folder / "config.yaml")
    except (ValueError, KeyError, TypeError, OSError):
        return False
    return _file(folder, cfg.weights_file).is_file() and _file(folder, cfg.tokenizer_file).is_file()


def _load_into(module: nn.Module, state: dict[str, torch.Tensor], prefix: str) -> None:
    part = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
    missing, unexpected = module.load_state_dict(part, strict=False)
    if missing or unexpected:
        raise WeightsMissing(f"the checkpoint does not match our {type(module).__name__}: "
                             f"missing {missing[:4]}, unexpected {unexpected[:4]}")


def load_pocket(folder: Path, device: torch.device = torch.device("cpu")) -> LoadedPocket:
    try:
        from safetensors.torch import load_file  # optional dependency: only when weights load
    except ImportError as e:
        raise WeightsMissing("reading Pocket TTS weights needs safetensors: pip install -r requirements-gpu.txt") from e
    cfg = PocketConfig.from_yaml(folder / "config.yaml")
    state = load_file(str(_file(folder, cfg.weights_file)))
    if "flow_lm.speaker_proj_weight" not in state:
        raise WeightsMissing("these are the weights without voice cloning; use the voice-cloning release (kyutai/pocket-tts)")
    speaker_dim = cfg.mimi.inner_dim or cfg.mimi.encoder_seanet.dimension
    flow_lm = FlowLM(cfg.flow_lm, cfg.mimi.latent_dim, speaker_dim)
    mimi = Mimi(cfg.mimi)
    _load_into(flow_lm, state, "flow_lm.")
    _load_into(mimi, state, "mimi.")
    tokenizer = Tokenizer(_file(folder, cfg.tokenizer_file), cfg.flow_lm.n_bins)
    rules = TextRules(cfg.pad_with_spaces_for_short_inputs, cfg.remove_semicolons, cfg.append_terminal_punctuation,
                      cfg.capitalize_first_letter, tuple(cfg.replace_characters.items()))
    variant = variant_of_weights(cfg.weights_file)
    logger.info("loaded Pocket TTS (%s) from %s", variant.name, folder)
    return LoadedPocket(cfg, flow_lm.to(device).eval(), mimi.to(device).eval(), tokenizer, rules, folder, variant)
