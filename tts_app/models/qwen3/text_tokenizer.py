"""The Qwen2 byte-level BPE text tokenizer, via the ``tokenizers`` package (optional dependency)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from tts_app.models.qwen3.errors import WeightsMissing
from tts_app.models.qwen3.prompt import PromptTokens

# Pre-tokenisation regex of the Qwen2 tokenizer.
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


class TextTokenizer:
    """Turns a text into the talker's prompt tokens (chat-formatted as the checkpoints expect)."""

    def __init__(self, encode: Callable[[str], list[int]]) -> None:
        self._encode = encode

    @classmethod
    def from_dir(cls, path: Path) -> "TextTokenizer":
        try:
            from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers  # optional dependency (requirements-gpu.txt): only when Qwen3 weights load
        except ImportError as e:
            raise WeightsMissing("the Qwen3-TTS text tokenizer needs `tokenizers`: pip install -r requirements-gpu.txt") from e
        if (path / "tokenizer.json").is_file():
            tok = Tokenizer.from_file(str(path / "tokenizer.json"))
        else:
            tok = Tokenizer(models.BPE.from_file(str(path / "vocab.json"), str(path / "merges.txt")))
            tok.normalizer = normalizers.NFC()
            tok.pre_tokenizer = pre_tokenizers.Sequence([
                pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ])
            tok.decoder = decoders.ByteLevel()
            config: dict[str, Any] = {}
            if (path / "tokenizer_config.json").is_file():
                config = json.loads((path / "tokenizer_config.json").read_text(encoding="utf-8"))
            added = sorted(config.get("added_tokens_decoder", {}).items(), key=lambda kv: int(kv[0]))
            tok.add_special_tokens([AddedToken(v["content"], special=True, normalized=False) for _, v in added])
        return cls(lambda text: tok.encode(text, add_special_tokens=False).ids)

    def prompt_tokens(self, text: str) -> PromptTokens:
        # Tokenise the whole chat string, then slice, so BPE merges at the edges match training.
        ids = self._encode(f"<|im_start|>assistant\n{text}<|im_end|>\n<|im_start|>assistant\n")
        return PromptTokens(role_ids=ids[:3], text_ids=ids[3:-5])

    def reference_ids(self, transcript: str) -> list[int]:
        """Tokens of a reference clip's transcript for in-context cloning (the official ``ref_ids[3:-2]``)."""
        return self._encode(f"<|im_start|>assistant\n{transcript}<|im_end|>\n")[3:-2]
