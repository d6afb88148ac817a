"""A tiny randomly initialised Qwen3-TTS of the real architecture, and helpers to drive it (tests, ``--tiny`` benchmark)."""

from __future__ import annotations

import torch

from tts_app.models.qwen3.config import tiny_configs
from tts_app.models.qwen3.generator import BatchedGenerator, RowState
from tts_app.models.qwen3.prompt import PromptTokens, build_prompt
from tts_app.models.qwen3.sampling import SamplingParams
from tts_app.models.qwen3.talker import Talker

ROLE = [290, 10, 11]


def tiny_talker(seed: int = 0, num_code_groups: int = 4) -> tuple:
    torch.manual_seed(seed)
    cfg, codec_cfg = tiny_configs(num_code_groups)
    return cfg, codec_cfg, Talker(cfg.talker_config).eval()


def text_ids(n: int, offset: int = 0) -> list[int]:
    """Deterministic fake text token ids."""
    return [20 + (7 * i + offset) % 250 for i in range(n)]


def prompt_for(talker: Talker, cfg, n_text: int, offset: int = 0) -> tuple[torch.Tensor, list[int]]:
    return build_prompt(talker, cfg, PromptTokens(ROLE, text_ids(n_text, offset)))


def run_to_end(gen: BatchedGenerator, states: list[RowState], frames_per_step: int | None = None) -> None:
    """Step until every row is done, releasing finished rows at once (as the engine does)."""
    live = list(states)
    while live:
        gen.decode(live, frames_per_step)
        for s in [s for s in live if s.done]:
            gen.release(s)
        live = [s for s in live if not s.done]


def solo_codes(talker: Talker, cfg, n_text: int, offset: int, params: SamplingParams, seed: int) -> torch.Tensor:
    gen = BatchedGenerator(talker, cfg.tts_pad_token_id, max_batch=1, max_seq_len=256)
    p, tail = prompt_for(talker, cfg, n_text, offset)
    (state,) = gen.prefill([p], [tail], [params], [seed])
    run_to_end(gen, [state])
    return state.all_codes()
