"""A tiny randomly initialised Qwen3-TTS of the real architecture, and helpers to drive it (tests, ``--tiny`` benchmark)."""

from __future__ import annotations

import torch

from tts_app.models.qwen3.config import CodecConfig, CodePredictorConfig, Qwen3TTSConfig, SpeakerEncoderConfig, TalkerConfig
from tts_app.models.qwen3.generator import BatchedGenerator, RowState
from tts_app.models.qwen3.prompt import PromptTokens, build_prompt
from tts_app.models.qwen3.sampling import SamplingParams
from tts_app.models.qwen3.talker import Talker

ROLE = [290, 10, 11]


def tiny_configs(num_code_groups: int = 4) -> tuple[Qwen3TTSConfig, CodecConfig]:
    """A randomly-initialisable miniature of the same architecture, for tests and the ``--tiny`` benchmarks."""
    cp = CodePredictorConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, num_code_groups=num_code_groups,
    )
    talker = TalkerConfig(
        vocab_size=96, hidden_size=48, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=12, max_position_embeddings=4096,
        num_code_groups=num_code_groups, text_hidden_size=40, text_vocab_size=300,
        codec_eos_token_id=66, codec_pad_id=64, codec_bos_id=65,
        codec_think_id=67, codec_nothink_id=68, codec_think_bos_id=69, codec_think_eos_id=70,
        code_predictor_config=cp,
    )
    spk = SpeakerEncoderConfig(
        mel_dim=32, enc_dim=48, enc_channels=(32, 32, 32, 64), enc_kernel_sizes=(5, 3, 3, 1),
        enc_dilations=(1, 2, 3, 1), enc_attention_channels=16, enc_res2net_scale=4, enc_se_channels=16,
    )
    model = Qwen3TTSConfig(
        talker_config=talker, speaker_encoder_config=spk,
        im_start_token_id=290, im_end_token_id=291, tts_pad_token_id=292, tts_bos_token_id=293,
        tts_eos_token_id=294,
    )
    codec = CodecConfig(
        codebook_size=64, codebook_dim=16, hidden_size=16, latent_dim=24, head_dim=8,
        num_attention_heads=2, num_key_value_heads=2, intermediate_size=32, num_hidden_layers=2,
        num_quantizers=num_code_groups, sliding_window=4, upsample_rates=(4, 3), upsampling_ratios=(2,),
        decoder_dim=32,
    )
    return model, codec


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
