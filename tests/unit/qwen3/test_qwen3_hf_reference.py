"""The hand-written decode loops equal transformers' ``generate()`` under greedy decoding.

The reference follows the upstream recipe: the talker runs under ``generate()`` with the code
predictor's own ``generate()`` inside each step, both on transformers' Qwen3 backbones loaded
with our weights, EOS-suppression via ``min_new_tokens`` and control tokens via
``suppress_tokens``. transformers is an optional test dependency (requirements-gpu.txt).
"""

from __future__ import annotations

import warnings

import pytest
import torch

transformers = pytest.importorskip("transformers", reason="transformers not installed (pip install -r requirements-gpu.txt)")
from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM  # noqa: E402
from transformers.modeling_outputs import CausalLMOutputWithPast  # noqa: E402

from tts_app.models.qwen3.generator import BatchedGenerator  # noqa: E402
from tts_app.models.qwen3.sampling import SamplingParams  # noqa: E402
from tests.support.qwen3_talker import prompt_for, run_to_end, tiny_talker  # noqa: E402

pytestmark = [pytest.mark.reference, pytest.mark.usefixtures("one_thread")]


def _hf_backbone(cls, stack, cfg, vocab: int, hidden: int):
    hf_cfg = Qwen3Config(
        vocab_size=vocab, hidden_size=hidden, intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.num_hidden_layers, num_attention_heads=cfg.num_attention_heads,
        num_key_value_heads=cfg.num_key_value_heads, head_dim=cfg.head_dim, rms_norm_eps=cfg.rms_norm_eps,
        rope_theta=cfg.rope_theta, max_position_embeddings=4096, tie_word_embeddings=False,
    )
    model = cls(hf_cfg).eval()
    ours = {k: v for k, v in stack.state_dict().items() if k.startswith(("layers.", "norm."))}
    missing, unexpected = model.model.load_state_dict(ours, strict=False)
    assert not unexpected and set(missing) <= {"embed_tokens.weight"}, (missing, unexpected)
    return model


class RefCodePredictor(Qwen3ForCausalLM):
    """generate() over the code predictor: head and input embedding chosen by the inner step."""

    def attach(self, ours) -> None:
        self.ours = ours

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None,
                inputs_embeds=None, use_cache=None, cache_position=None, **kwargs):
        if inputs_embeds is not None and inputs_embeds.shape[1] > 1:
            step = 0
        else:
            step = past_key_values.get_seq_length() - 1  # tokens already cached: 2 + steps taken
            inputs_embeds = self.ours.model.codec_embedding[step - 1](input_ids[:, -1:])
        x = self.ours.small_to_mtp_projection(inputs_embeds)
        out = self.model(inputs_embeds=x, position_ids=position_ids, past_key_values=past_key_values,
                         use_cache=True, cache_position=cache_position)
        return CausalLMOutputWithPast(logits=self.ours.lm_head[step](out.last_hidden_state[:, -1:]),
                                      past_key_values=out.past_key_values)


class RefTalker(Qwen3ForCausalLM):
    """generate() over the talker: each decode step first completes the pending frame with the code predictor."""

    def attach(self, ours, cp_ref, trailing_TxD, pad_D) -> None:
        self.ours, self.cp_ref, self.trailing, self.pad = ours, cp_ref, trailing_TxD, pad_D
        self.frames: list[torch.Tensor] = []

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None,
                inputs_embeds=None, use_cache=None, cache_position=None, **kwargs):
        if inputs_embeds is None or inputs_embeds.shape[1] == 1 and input_ids is not None and input_ids.shape[1] > 0:
            c0 = input_ids[:, -1]
            c0_emb = self.ours.model.codec_embedding(c0)
            G = self.ours.cfg.num_code_groups
            rest = self.cp_ref.generate(
                inputs_embeds=torch.stack((self.past_hidden, c0_emb), dim=1),
                generation_config=GenerationConfig(do_sample=False, max_new_tokens=G - 1, min_new_tokens=G - 1,
                                                   eos_token_id=None, pad_token_id=0),
            )[:, -(G - 1):]
            self.frames.append(torch.cat((c0[:, None], rest), dim=1))
            step = len(self.frames) - 1
            text = self.trailing[step] if step < self.trailing.shape[0] else self.pad
            inputs_embeds = (c0_emb + self.ours.code_predictor.embed_residual_codes(rest) + text)[:, None]
        out = self.model(inputs_embeds=inputs_embeds, attention_mask=attention_mask, position_ids=position_ids,
                         past_key_values=past_key_values, use_cache=True, cache_position=cache_position)
        self.past_hidden = out.last_hidden_state[:, -1]
        return CausalLMOutputWithPast(logits=self.lm_head(out.last_hidden_state[:, -1:]),
                                      past_key_values=out.past_key_values)


@pytest.mark.parametrize("rep_penalty", [1.0, 1.3], ids=["plain", "repetition_penalty"])
def test_greedy_loop_equals_transformers_generate(rep_penalty):
    cfg, _, talker = tiny_talker(seed=3)
    tc, cc = cfg.talker_config, cfg.talker_config.code_predictor_config
    cp_ref = _hf_backbone(RefCodePredictor, talker.code_predictor.model, cc, cc.vocab_size, cc.hidden_size)
    cp_ref.attach(talker.code_predictor)
    ref = _hf_backbone(RefTalker, talker.model, tc, tc.vocab_size, tc.hidden_size)
    ref.lm_head.weight.data.copy_(talker.codec_head.weight.data)

    rows = [(4, 0, 9), (11, 1, 6), (7, 2, 12)]  # (text tokens, offset, frames)
    min_new = 3
    gen = BatchedGenerator(talker, cfg.tts_pad_token_id, max_batch=3, max_seq_len=256, frames_per_step=4)
    prompts = [prompt_for(talker, cfg, n, off) for n, off, _ in rows]
    params = [SamplingParams.greedy(max_new_tokens=m, min_new_tokens=min_new, repetition_penalty=rep_penalty)
              for *_, m in rows]
    states = gen.prefill([p for p, _ in prompts], [t for _, t in prompts], params, [0, 1, 2])
    run_to_end(gen, states)

    suppress = [i for i in range(cc.vocab_size, tc.vocab_size) if i != tc.codec_eos_token_id]
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pad_D = talker.text_hidden(torch.tensor(cfg.tts_pad_token_id))
        for (n, off, m), (prompt, tail), state in zip(rows, prompts, states):
            ref.attach(talker, cp_ref, talker.text_hidden(torch.tensor(tail)), pad_D)
            ref.generate(
                inputs_embeds=prompt[None], attention_mask=torch.ones(1, prompt.shape[0], dtype=torch.long),
                generation_config=GenerationConfig(
                    do_sample=False, max_new_tokens=m + 1, min_new_tokens=min_new,
                    eos_token_id=tc.codec_eos_token_id, pad_token_id=tc.codec_pad_id,
                    suppress_tokens=suppress, repetition_penalty=rep_penalty,
                ),
            )
            expected = torch.cat(ref.frames)
            got = state.all_codes()
            assert got.shape == expected.shape and torch.equal(got, expected), f"row with {n} text tokens differs"
