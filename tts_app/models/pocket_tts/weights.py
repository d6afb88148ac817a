"""Loading a Pocket TTS checkpoint folder into our modules. Nothing here downloads.

A folder holds ``config.yaml`` (the official config schema; its ``weights_path`` and ``tokenizer_path``
name files in the folder, by default ``model.safetensors`` and ``tokenizer.json``), the weights of the
voice-cloning release (keys ``flow_lm.*`` and ``mimi.*``, loaded strictly) and the tokenizer.

The no-cloning release (``kyutai/pocket-tts-without-voice-cloning``, not gated; its config's ``weights_path`` names
it) loads too, with ``cloning`` False: what only a clip needs (the speaker projection, Mimi's encoder) may be absent
from it, and the backend then speaks its saved voices only.
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
    cloning: bool = True  # False: the no-cloning release (saved voices only; a clip is refused)

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


# What only a clip's voice state reads: the no-cloning release may lack it.
CLONING_ONLY = ("speaker_proj_weight", "encoder.", "encoder_transformer.", "downsample.")
NO_CLONING_REPO_URL = "hf://kyutai/pocket-tts-without-voice-cloning/"


def _load_into(module: nn.Module, state: dict[str, torch.Tensor], prefix: str, cloning: bool = True) -> None:
    part = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
    missing, unexpected = module.load_state_dict(part, strict=False)
    if not cloning:
        missing = [k for k in missing if not k.startswith(CLONING_ONLY)]
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
    cloning = "flow_lm.speaker_proj_weight" in state and not cfg.weights_file.startswith(NO_CLONING_REPO_URL)
    speaker_dim = cfg.mimi.inner_dim or cfg.mimi.encoder_seanet.dimension
    flow_lm = FlowLM(cfg.flow_lm, cfg.mimi.latent_dim, speaker_dim)
    mimi = Mimi(cfg.mimi)
    _load_into(flow_lm, state, "flow_lm.", cloning)
    _load_into(mimi, state, "mimi.", cloning)
    tokenizer = Tokenizer(_file(folder, cfg.tokenizer_file), cfg.flow_lm.n_bins)
    rules = TextRules(cfg.pad_with_spaces_for_short_inputs, cfg.remove_semicolons, cfg.append_terminal_punctuation,
                      cfg.capitalize_first_letter, tuple(cfg.replace_characters.items()))
    variant = variant_of_weights(cfg.weights_file)
    logger.info("loaded Pocket TTS (%s%s) from %s", variant.name, "" if cloning else ", no cloning", folder)
    return LoadedPocket(cfg, flow_lm.to(device).eval(), mimi.to(device).eval(), tokenizer, rules, folder, variant, cloning)
