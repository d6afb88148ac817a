"""Batched generation equals solo generation: left-padded prefill, compaction, slot refill, per-row seeds."""

from __future__ import annotations

import pytest
import torch

from tts_app.models.qwen3.generator import BatchedGenerator
from tts_app.models.qwen3.sampling import SamplingParams, sample_tokens

from tests.support.qwen3_talker import prompt_for, run_to_end, solo_codes, tiny_talker

pytestmark = pytest.mark.usefixtures("one_thread")

# (text length, text offset, max frames, seed): different prompt lengths and end times.
ROWS = [(3, 0, 7, 11), (9, 1, 13, 12), (15, 2, 10, 13), (6, 3, 5, 14)]


@pytest.fixture(scope="module")
def tiny():
    cfg, _, talker = tiny_talker()
    return cfg, talker


def _params(greedy: bool, max_frames: int) -> SamplingParams:
    if greedy:
        return SamplingParams.greedy(max_new_tokens=max_frames, min_new_tokens=2)
    return SamplingParams(max_new_tokens=max_frames, temperature=0.9, top_k=20, top_p=0.9, repetition_penalty=1.2,
                          subtalker_temperature=0.8, subtalker_top_k=10, subtalker_top_p=0.95)


@pytest.mark.parametrize("greedy", [True, False], ids=["greedy", "sampled"])
def test_batched_equals_solo(tiny, greedy):
    cfg, talker = tiny
    gen = BatchedGenerator(talker, cfg.tts_pad_token_id, max_batch=4, max_seq_len=256, frames_per_step=3)
    prompts = [prompt_for(talker, cfg, n, off) for n, off, _, _ in ROWS]
    assert len({p.shape[0] for p, _ in prompts}) == 1  # same-length prompts: text enters one token per frame
    states = gen.prefill(
        [p for p, _ in prompts], [t for _, t in prompts],
        [_params(greedy, m) for _, _, m, _ in ROWS], [seed for *_, seed in ROWS],
    )
    run_to_end(gen, states)
    for (n, off, m, seed), state in zip(ROWS, states):
        solo = solo_codes(talker, cfg, n, off, _params(greedy, m), seed)
        assert torch.equal(state.all_codes(), solo), f"row with {n} text tokens diverged from its solo run"
    assert gen.pool.num_live == 0


def test_left_padded_prefill_equals_solo(tiny):
    """Prompts of different lengths (x-vector present on some rows) share one left-padded prefill."""
    cfg, talker = tiny
    from tts_app.models.qwen3.prompt import PromptTokens, build_prompt

    torch.manual_seed(5)
    spk = torch.randn(cfg.talker_config.hidden_size)
    # (text tokens, x-vector, language id, max frames): the x-vector and the language tag each add a position.
    specs = [(4, None, None, 9), (7, spk, None, 6), (2, spk, 71, 8), (5, None, 71, 7)]
    built = [
        build_prompt(talker, cfg, PromptTokens([290, 10, 11], list(range(30, 30 + n))), s, lang)
        for n, s, lang, _ in specs
    ]
    assert len({p.shape[0] for p, _ in built}) == 3
    params = [SamplingParams.greedy(max_new_tokens=m) for *_, m in specs]

    gen = BatchedGenerator(talker, cfg.tts_pad_token_id, max_batch=4, max_seq_len=256, frames_per_step=4)
    states = gen.prefill([p for p, _ in built], [t for _, t in built], params, [0, 1, 2, 3])
    run_to_end(gen, states)
    for (p, tail), prm, state in zip(built, params, states):
        solo_gen = BatchedGenerator(talker, cfg.tts_pad_token_id, max_batch=1, max_seq_len=256)
        (solo,) = solo_gen.prefill([p], [tail], [prm], [0])
        run_to_end(solo_gen, [solo])
        assert torch.equal(state.all_codes(), solo.all_codes())


@pytest.mark.parametrize("greedy", [True, False], ids=["greedy", "sampled"])
def test_compaction_and_refill_equal_solo(tiny, greedy):
    """Two slots, four requests: a finished row leaves at once and a queued one is prefilled into its slot."""
    cfg, talker = tiny
    gen = BatchedGenerator(talker, cfg.tts_pad_token_id, max_batch=2, max_seq_len=256, frames_per_step=2)
    queue = list(ROWS)
    live, finished = [], []
    while queue or live:
        admit = queue[: gen.free_slots]
        queue = queue[len(admit):]
        if admit:
            prompts = [prompt_for(talker, cfg, n, off) for n, off, _, _ in admit]
            new = gen.prefill([p for p, _ in prompts], [t for _, t in prompts],
                              [_params(greedy, m) for _, _, m, _ in admit], [seed for *_, seed in admit])
            live += [(spec, s) for spec, s in zip(admit, new)]
        gen.decode([s for _, s in live])
        for spec, s in [x for x in live if x[1].done]:
            gen.release(s)
            finished.append((spec, s))
        live = [x for x in live if not x[1].done]
        assert sorted(s.slot.index for _, s in live) == list(range(len(live)))  # live slots stay dense
    assert len(finished) == len(ROWS)
    for (n, off, m, seed), state in finished:
        assert torch.equal(state.all_codes(), solo_codes(talker, cfg, n, off, _params(greedy, m), seed))


def test_rows_not_passed_to_step_do_not_advance(tiny):
    cfg, talker = tiny
    gen = BatchedGenerator(talker, cfg.tts_pad_token_id, max_batch=2, max_seq_len=256, frames_per_step=2)
    prompts = [prompt_for(talker, cfg, 5, k) for k in range(2)]
    params = [SamplingParams.greedy(max_new_tokens=8)] * 2
    a, b = gen.prefill([p for p, _ in prompts], [t for _, t in prompts], params, [0, 1])
    gen.decode([a])  # b is live but skipped this step
    assert b.frames == 0 and a.frames == 2
    run_to_end(gen, [a, b])
    assert torch.equal(b.all_codes(), solo_codes(talker, cfg, 5, 1, params[1], 1))


def test_eos_ban_and_valid_token_space():
    logits = torch.tensor([[0.0, 1.0, 9.0], [0.0, 1.0, 9.0]])
    banned = torch.tensor([[False, False, True], [False, False, False]])
    ones = torch.ones(2)
    tok = sample_tokens(logits, torch.zeros(2), torch.zeros(2, dtype=torch.long), ones, torch.rand(2, 3), banned_BxV=banned)
    assert tok.tolist() == [1, 2]


def test_runs_are_reproducible_by_seed(tiny):
    """Sampled codes are a function of the seed: the same seed twice gives the same codes, another seed others."""
    cfg, talker = tiny
    params = _params(False, 12)
    first, again = solo_codes(talker, cfg, 6, 0, params, 21), solo_codes(talker, cfg, 6, 0, params, 21)
    assert torch.equal(first, again)
    assert not torch.equal(first, solo_codes(talker, cfg, 6, 0, params, 22)[: first.shape[0]])
