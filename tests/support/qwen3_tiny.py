"""A tiny random-weight Qwen3-TTS backend and its checkpoint on disk, for the Qwen3 tests (tests/unit/qwen3).

The module-scoped ``one_thread`` fixture those tests use lives in tests/unit/conftest.py.
"""

from __future__ import annotations

from tts_app.backends.qwen3 import Qwen3Backend
import torch

from tts_app.models.qwen3.codec import CodecDecoder
from tts_app.models.qwen3.config import CodecConfig
from tts_app.models.qwen3.prompt import PromptTokens
from tts_app.models.qwen3.sampling import SamplingParams
from tts_app.models.qwen3.speaker_encoder import SpeakerEncoder
from tests.support.qwen3_talker import tiny_talker


class CharTokenizer:
    def prompt_tokens(self, text: str) -> PromptTokens:
        return PromptTokens([290, 10, 11], [20 + ord(c) % 250 for c in text])


def tiny_backend(**kwargs) -> Qwen3Backend:
    """A Qwen3 backend over tiny random weights (seed 1) and a character tokenizer; ``kwargs`` go to Qwen3Backend."""
    cfg, codec_cfg, talker = tiny_talker(seed=1)
    codec = CodecDecoder(codec_cfg).eval()
    spk = SpeakerEncoder(cfg.speaker_encoder_config).eval()
    return Qwen3Backend(cfg, talker, codec, CharTokenizer(), spk, sampling=SamplingParams(max_new_tokens=9), **kwargs)


def write_checkpoint(backend, folder) -> None:
    """``backend``'s tiny weights as a checkpoint folder laid out like the published ones (needs safetensors, tokenizers)."""
    import dataclasses
    import json

    import safetensors.torch
    import tokenizers

    (folder / "speech_tokenizer").mkdir()
    (folder / "config.json").write_text(json.dumps(dataclasses.asdict(backend.config)))
    (folder / "speech_tokenizer" / "config.json").write_text(
        json.dumps({"decoder_config": dataclasses.asdict(backend.codec.cfg), "output_sample_rate": 24000})
    )
    state = {f"talker.{k}": v.contiguous() for k, v in backend.talker.state_dict().items()}
    state |= {f"speaker_encoder.{k}": v.contiguous() for k, v in backend.speaker_encoder.state_dict().items()}
    safetensors.torch.save_file(state, str(folder / "model.safetensors"))
    safetensors.torch.save_file({f"decoder.{k}": v.contiguous() for k, v in backend.codec.state_dict().items()},
                                str(folder / "speech_tokenizer" / "model.safetensors"))
    vocab = {chr(c): c for c in range(32, 127)} | {"\n": 12, "assistant": 10, "<|im_start|>": 290, "<|im_end|>": 291, "[UNK]": 0}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Split(tokenizers.Regex("."), behavior="isolated")
    tok.add_special_tokens(["<|im_start|>", "<|im_end|>"])
    tok.add_tokens(["assistant"])
    tok.save(str(folder / "tokenizer.json"))


def random_codec(cfg: CodecConfig) -> CodecDecoder:
    """A codec decoder with random weights, codebooks and activations non-trivial (a checkpoint's init is zeros)."""
    torch.manual_seed(0)
    codec = CodecDecoder(cfg).eval()
    with torch.no_grad():
        for name, p in codec.named_parameters():
            if name.endswith(("embedding_sum", "alpha", "beta")):
                p.normal_(0.0, 0.5)
    return codec
