"""Setup shared by the Qwen3 test modules (tests/test_qwen3_*.py).

Import ``one_thread`` into a test module to use it there: it is module-scoped and autouse,
so it applies to every test of the importing module and to no other.
"""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    # Tiny matmuls on a shared 2-core box: one intra-op thread avoids OpenMP contention stalls.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


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
