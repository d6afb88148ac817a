"""Dataclasses mirroring the official Pocket TTS config (``pocket_tts/config/<language>.yaml``, pocket-tts 4.0.1).

A checkpoint folder holds that YAML as ``config.yaml``, with ``weights_path`` and ``tokenizer_path``
naming files in the folder. Field names follow the YAML keys; defaults are the official ones. Only
what the voice-cloning English/French/... models use is supported: LSD flow heads (the released
models), Metaspace ``tokenizer.json`` tokenizers. Anything else is refused with a one-line reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional


class UnsupportedConfig(ValueError):
    """The checkpoint's config asks for something this port does not implement."""


@dataclass(frozen=True)
class FlowLMShape:
    d_model: int
    num_heads: int
    num_layers: int
    dim_feedforward: int
    max_period: float
    attn_dim: int
    num_kv_heads: int
    flow_dim: int
    flow_depth: int
    n_bins: int
    lookup_dim: int
    lookup_rank: Optional[int]
    z_dim: Optional[int]
    insert_bos_before_voice: bool


@dataclass(frozen=True)
class SEANetShape:
    dimension: int
    n_filters: int
    n_residual_layers: int
    ratios: tuple[int, ...]
    kernel_size: int
    residual_kernel_size: int
    last_kernel_size: int
    dilation_base: int
    pad_mode: str
    compress: int


@dataclass(frozen=True)
class MimiTransformerShape:
    d_model: int
    num_heads: int
    num_layers: int
    layer_scale: float
    context: int
    max_period: float
    dim_feedforward: int
    input_dimension: int
    output_dimension: int


@dataclass(frozen=True)
class MimiShape:
    sample_rate: int
    frame_rate: float
    latent_dim: int  # quantizer.dimension: the flow LM's latent width
    quantizer_out: int
    inner_dim: Optional[int]
    outer_dim: Optional[int]
    encoder_seanet: SEANetShape
    decoder_seanet: SEANetShape
    encoder_transformer: MimiTransformerShape
    decoder_transformer: MimiTransformerShape

    @property
    def hop_length(self) -> int:  # samples per encoder frame
        n = 1
        for r in self.encoder_seanet.ratios:
            n *= r
        return n

    @property
    def samples_per_latent(self) -> int:
        return int(self.sample_rate / self.frame_rate)

    @property
    def steps_per_latent(self) -> int:  # encoder frames per latent (the up/downsampling stride)
        return self.samples_per_latent // self.hop_length


@dataclass(frozen=True)
class PocketConfig:
    flow_lm: FlowLMShape
    mimi: MimiShape
    weights_file: str
    tokenizer_file: str
    temperature: float = 0.3
    eos_threshold: float = -4.0
    frames_after_eos: Optional[int] = None  # model_recommended_frames_after_eos
    pad_with_spaces_for_short_inputs: bool = False
    remove_semicolons: bool = False
    append_terminal_punctuation: bool = True
    capitalize_first_letter: bool = True
    replace_characters: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_yaml(cls, path: Path) -> "PocketConfig":
        import yaml  # PyYAML (a gradio dependency): only when a checkpoint is read

        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or "flow_lm" not in data or "mimi" not in data:
            raise UnsupportedConfig(f"{path} is not a Pocket TTS config (needs flow_lm and mimi sections)")
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "PocketConfig":
        f, m = data["flow_lm"], data["mimi"]
        if f.get("flow", {}).get("type", "lsd") != "lsd":
            raise UnsupportedConfig(f"flow type {f['flow']['type']!r}: only the released LSD flow head is ported")
        if f.get("dtype", "float32") != "float32" or m.get("dtype", "float32") != "float32":
            raise UnsupportedConfig("only float32 checkpoints are supported")
        t, lut = f["transformer"], f["lookup_table"]
        if lut.get("tokenizer") not in ("tokenizers", "json") and not str(lut["tokenizer_path"]).endswith(".json"):
            raise UnsupportedConfig("only tokenizer.json tokenizers are supported (not SentencePiece .model files)")
        heads = int(t["num_heads"])
        flow = FlowLMShape(
            d_model=int(t["d_model"]), num_heads=heads, num_layers=int(t["num_layers"]),
            dim_feedforward=int(t.get("dim_feedforward") or int(t["d_model"] * t["hidden_scale"])),
            max_period=float(t["max_period"]), attn_dim=int(t.get("attn_dim") or t["d_model"]),
            num_kv_heads=int(t.get("num_kv_heads") or heads), flow_dim=int(f["flow"]["dim"]),
            flow_depth=int(f["flow"]["depth"]), n_bins=int(lut["n_bins"]), lookup_dim=int(lut["dim"]),
            lookup_rank=lut.get("rank"), z_dim=f.get("z_dim"), insert_bos_before_voice=bool(f.get("insert_bos_before_voice", False)),
        )
        enc_seanet = _seanet(m["seanet"])
        enc_tr = _mimi_transformer(m["transformer"])
        mimi = MimiShape(
            sample_rate=int(m["sample_rate"]), frame_rate=float(m["frame_rate"]),
            latent_dim=int(m["quantizer"]["dimension"]), quantizer_out=int(m["quantizer"]["output_dimension"]),
            inner_dim=m.get("inner_dim"), outer_dim=m.get("outer_dim"), encoder_seanet=enc_seanet,
            decoder_seanet=_seanet(m["decoder_seanet"]) if m.get("decoder_seanet") else enc_seanet,
            encoder_transformer=enc_tr,
            decoder_transformer=_mimi_transformer(m["decoder_transformer"]) if m.get("decoder_transformer") else enc_tr,
        )
        if int(m.get("channels", 1)) != 1:
            raise UnsupportedConfig("only mono Mimi codecs are supported")
        return cls(
            flow_lm=flow, mimi=mimi, weights_file=str(data.get("weights_path") or "model.safetensors"),
            tokenizer_file=str(lut["tokenizer_path"]), temperature=float(data.get("default_temperature", 0.3)),
            eos_threshold=float(data.get("default_eos_threshold", -4.0)),
            frames_after_eos=data.get("model_recommended_frames_after_eos"),
            pad_with_spaces_for_short_inputs=bool(data.get("pad_with_spaces_for_short_inputs", False)),
            remove_semicolons=bool(data.get("remove_semicolons", False)),
            append_terminal_punctuation=bool(data.get("append_terminal_punctuation", True)),
            capitalize_first_letter=bool(data.get("capitalize_first_letter", True)),
            replace_characters=dict(data.get("replace_characters") or {}),
        )


def _seanet(s: dict[str, Any]) -> SEANetShape:
    return SEANetShape(
        dimension=int(s["dimension"]), n_filters=int(s["n_filters"]), n_residual_layers=int(s["n_residual_layers"]),
        ratios=tuple(int(r) for r in s["ratios"]), kernel_size=int(s["kernel_size"]),
        residual_kernel_size=int(s["residual_kernel_size"]), last_kernel_size=int(s["last_kernel_size"]),
        dilation_base=int(s["dilation_base"]), pad_mode=str(s["pad_mode"]), compress=int(s["compress"]),
    )


def _mimi_transformer(t: dict[str, Any]) -> MimiTransformerShape:
    outs = list(t["output_dimensions"])
    if len(outs) != 1:
        raise UnsupportedConfig("Mimi transformers with several outputs are not supported")
    return MimiTransformerShape(
        d_model=int(t["d_model"]), num_heads=int(t["num_heads"]), num_layers=int(t["num_layers"]),
        layer_scale=float(t["layer_scale"]), context=int(t["context"]), max_period=float(t.get("max_period", 10000.0)),
        dim_feedforward=int(t["dim_feedforward"]), input_dimension=int(t["input_dimension"]), output_dimension=int(outs[0]),
    )
