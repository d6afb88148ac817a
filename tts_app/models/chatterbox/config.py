"""Chatterbox's fixed token layout (mirrors the official ``T3Config``) and the per-request settings."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class T3Tokens:
    """Special ids and sizes of T3's vocabularies, as in the official T3Config (English model)."""

    start_text: int = 255
    stop_text: int = 0
    start_speech: int = 6561
    stop_speech: int = 6562
    speech_vocab: int = 8194  # rows of speech_emb / speech_head
    codebook: int = 6561  # S3 tokenizer ids: 0..6560 are speech; the rest are control or unused rows
    cond_prompt_len: int = 150  # speech tokens of the reference prompt given to T3

    def is_speech(self, token: int) -> bool:
        return 0 <= token < self.codebook


@dataclass
class ChatterboxSampling:
    """Generation settings of one request; defaults are the official ``ChatterboxTTS.generate`` ones.

    ``valid_only`` samples over the tokens T3 may meaningfully emit (speech ids and EOS); the official
    sampler draws from all 8194 rows, whose unused ids are dropped afterwards. Parity tests turn it off.
    """

    temperature: float = 0.8
    top_p: float = 1.0
    min_p: float = 0.05
    repetition_penalty: float = 1.2
    cfg_weight: float = 0.5
    exaggeration: float = 0.5
    max_new_tokens: int = 1000
    valid_only: bool = True

    def __post_init__(self) -> None:
        if not (self.temperature > 0):
            raise ValueError("temperature must be > 0 (min_p=1.0 is greedy)")
        if not (0 < self.top_p <= 1) or not (0 <= self.min_p <= 1):
            raise ValueError("top_p must be in (0, 1] and min_p in [0, 1]")
        if self.repetition_penalty <= 0 or self.max_new_tokens < 1:
            raise ValueError("repetition_penalty must be > 0 and max_new_tokens >= 1")
