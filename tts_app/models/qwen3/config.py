"""Dataclasses mirroring the Qwen3-TTS checkpoint configs (config.json, speech_tokenizer/config.json).

Field names follow the JSON keys so ``from_dict`` can read a checkpoint config as is;
keys we do not use are ignored.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")


def _from_dict(cls: type[T], data: dict[str, Any]) -> T:
    """Build dataclass ``cls`` from the keys of ``data`` it knows; nested configs are built by the caller.

    A value for a field whose default is a tuple (JSON gives a list) becomes a tuple.
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    known = {k: tuple(v) if isinstance(fields[k].default, tuple) else v for k, v in data.items() if k in fields}
    ignored = sorted(set(data) - set(fields))
    if ignored:
        logger.debug("%s: ignoring config keys %s", cls.__name__, ignored)
    return cls(**known)


# Defaults of the official config classes (qwen-tts 0.1.1) where they differ from ours: a key absent from a
# checkpoint's JSON means the official default, not ours. The talker and the codec decoder have no
# head_dim argument there: the official attention falls back to hidden_size // num_attention_heads.
_OFFICIAL_TALKER = dict(
    vocab_size=3072, hidden_size=1024, intermediate_size=2048, num_hidden_layers=20, num_attention_heads=16,
    num_key_value_heads=2, rope_theta=10000.0, num_code_groups=32, codec_eos_token_id=4198, codec_think_id=4202,
    codec_nothink_id=4203, codec_think_bos_id=4204, codec_think_eos_id=4205, codec_pad_id=4196, codec_bos_id=4197,
)
_OFFICIAL_CODE_PREDICTOR = dict(rope_theta=10000.0, num_code_groups=32)
_OFFICIAL_CODEC = dict(hidden_size=1024, intermediate_size=3072, num_attention_heads=16)


def _with_official_defaults(data: dict[str, Any], defaults: dict[str, Any], derive_head_dim: bool) -> dict[str, Any]:
    data = {**defaults, **data}
    if derive_head_dim and "head_dim" not in data:
        data["head_dim"] = data["hidden_size"] // data["num_attention_heads"]
    return data


class _JsonConfig:
    """``from_json``: ``from_dict`` over a JSON file."""

    @classmethod
    def from_json(cls: type[T], path: str | Path) -> T:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))  # type: ignore[attr-defined]


@dataclass
class _BackboneConfig:
    """The Qwen3 decoder sizes the talker and the code predictor share (defaults: the talker's)."""

    vocab_size: int = 3072
    hidden_size: int = 1024
    intermediate_size: int = 3072
    num_hidden_layers: int = 28
    num_attention_heads: int = 16
    num_key_value_heads: int = 8
    head_dim: int = 128
    rms_norm_eps: float = 1e-6
    rope_theta: float = 1_000_000.0
    attention_bias: bool = False


@dataclass
class CodePredictorConfig(_BackboneConfig):
    """The small transformer that fills codebooks 1..G-1 for each talker frame."""

    vocab_size: int = 2048
    num_hidden_layers: int = 5
    num_code_groups: int = 16


@dataclass
class TalkerConfig(_BackboneConfig):
    """The talker: a Qwen3 decoder over codec frames that predicts codebook 0."""

    max_position_embeddings: int = 32768
    num_code_groups: int = 16
    text_hidden_size: int = 2048
    text_vocab_size: int = 151936
    codec_eos_token_id: int = 2150
    codec_think_id: int = 2154
    codec_nothink_id: int = 2155
    codec_think_bos_id: int = 2156
    codec_think_eos_id: int = 2157
    codec_pad_id: int = 2148
    codec_bos_id: int = 2149
    codec_language_id: dict[str, int] = field(default_factory=dict)
    spk_id: dict[str, int] = field(default_factory=dict)
    code_predictor_config: CodePredictorConfig = field(default_factory=CodePredictorConfig)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TalkerConfig":
        data = _with_official_defaults(data, _OFFICIAL_TALKER, derive_head_dim=True)
        cp = _from_dict(CodePredictorConfig, _with_official_defaults(
            data.get("code_predictor_config") or {}, _OFFICIAL_CODE_PREDICTOR, derive_head_dim=False
        ))
        data["code_predictor_config"] = cp
        # The language and speaker tables may be null in the checkpoint.
        data["codec_language_id"] = data.get("codec_language_id") or {}
        data["spk_id"] = data.get("spk_id") or {}
        return _from_dict(cls, data)


@dataclass
class SpeakerEncoderConfig:
    """ECAPA-TDNN speaker encoder (Base checkpoints only); enc_dim equals the talker hidden size."""

    mel_dim: int = 128
    enc_dim: int = 1024
    enc_channels: tuple[int, ...] = (512, 512, 512, 512, 1536)
    enc_kernel_sizes: tuple[int, ...] = (5, 3, 3, 3, 1)
    enc_dilations: tuple[int, ...] = (1, 2, 3, 4, 1)
    enc_attention_channels: int = 128
    enc_res2net_scale: int = 8
    enc_se_channels: int = 128
    sample_rate: int = 24000


@dataclass
class Qwen3TTSConfig(_JsonConfig):
    """Top-level config.json of a Qwen3-TTS checkpoint."""

    talker_config: TalkerConfig = field(default_factory=TalkerConfig)
    speaker_encoder_config: Optional[SpeakerEncoderConfig] = field(default_factory=SpeakerEncoderConfig)
    tts_model_type: str = "base"
    tts_model_size: str = ""
    tokenizer_type: str = "qwen3_tts_tokenizer_12hz"
    im_start_token_id: int = 151644
    im_end_token_id: int = 151645
    tts_pad_token_id: int = 151671
    tts_bos_token_id: int = 151672
    tts_eos_token_id: int = 151673

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Qwen3TTSConfig":
        data = dict(data)
        data["talker_config"] = TalkerConfig.from_dict(data.get("talker_config") or {})
        if data.get("tts_model_type", "base") == "base":
            spk = data.get("speaker_encoder_config") or {}
            data["speaker_encoder_config"] = _from_dict(SpeakerEncoderConfig, spk)
        else:
            data["speaker_encoder_config"] = None
        return _from_dict(cls, data)


@dataclass
class CodecConfig(_JsonConfig):
    """The 12 Hz codec decoder (speech_tokenizer/config.json, ``decoder_config`` plus rates)."""

    codebook_size: int = 2048
    codebook_dim: int = 512
    hidden_size: int = 512
    latent_dim: int = 1024
    head_dim: int = 64
    num_attention_heads: int = 16
    num_key_value_heads: int = 16
    intermediate_size: int = 1024
    num_hidden_layers: int = 8
    num_quantizers: int = 16
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    sliding_window: int = 72
    attention_bias: bool = False
    layer_scale_initial_scale: float = 0.01
    upsample_rates: tuple[int, ...] = (8, 5, 4, 3)
    upsampling_ratios: tuple[int, ...] = (2, 2)
    decoder_dim: int = 1536
    output_sample_rate: int = 24000

    @property
    def samples_per_frame(self) -> int:
        n = 1
        for r in (*self.upsample_rates, *self.upsampling_ratios):
            n *= r
        return n

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CodecConfig":
        dec = _with_official_defaults(dict(data.get("decoder_config", data)), _OFFICIAL_CODEC, derive_head_dim=True)
        if "output_sample_rate" in data:
            dec["output_sample_rate"] = data["output_sample_rate"]
        return _from_dict(cls, dec)
