"""T3's decode call in fixed shapes (batch and attention length rounded up to their buckets, what one CUDA graph per
bucket replays) gives the same tokens as the exact-shape eager call; the call traces as one graph.

Sampled tokens (not greedy: temperature, min-p, top-p, repetition penalty per row), so a row mixed up with
its neighbour, a pad row leaking or a state update missed changes the draw. Float32: the bucketed call
attends over more masked positions and more rows, which moves logits by rounding only; the tokens agree
exactly on these rows (a draw on a knife edge could flip, none does here).
"""

from __future__ import annotations

import pytest
import torch

from tts_app.models.chatterbox.config import ChatterboxSampling
from tts_app.models.chatterbox.t3_generator import T3Generator

from tests.support.chatterbox_tiny import random_prompts, random_t3

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def tiny():
    return random_t3()


def _run(tiny, fixed: bool, tokens_per_call: int, release: bool = True) -> list[list[int]]:
    t3, backbone, tokens = tiny
    gen = T3Generator(t3, backbone, tokens, max_batch=8, max_seq_len=320, fixed_shapes=fixed)
    params = [ChatterboxSampling(max_new_tokens=n, temperature=t, top_p=tp, min_p=mp, cfg_weight=w)
              for n, t, tp, mp, w in [(40, 0.8, 1.0, 0.05, 0.5), (23, 1.2, 0.9, 0.0, 0.3), (31, 0.6, 0.8, 0.1, 0.0)]]
    rows = gen.prefill(random_prompts(t3, [12, 7, 20]), params, [5, 6, 7])
    late = None
    while not all(r.done for r in rows + ([late] if late else [])):
        live = [r for r in rows + ([late] if late else []) if not r.done]
        gen.decode(live, tokens_per_call)
        for r in live:
            if r.done and release:
                gen.release(r)  # compaction moves the live rows while the others go on
        if late is None and rows[0].write_idx > 40:  # a newcomer joins mid-way
            (late,) = gen.prefill(random_prompts(t3, [9], seed=3), [ChatterboxSampling(max_new_tokens=15)], [8])
    return [r.tokens for r in rows + [late]]


@pytest.mark.parametrize("per_call", [1, 4])
def test_bucketed_calls_give_the_exact_shape_tokens(tiny, per_call):
    want = _run(tiny, fixed=False, tokens_per_call=per_call)
    got = _run(tiny, fixed=True, tokens_per_call=per_call)
    assert [len(t) for t in want] == [40, 23, 31, 15] or any(len(t) < 40 for t in want)
    assert got == want


def test_tokens_per_call_do_not_change_the_tokens(tiny):
    assert _run(tiny, fixed=True, tokens_per_call=4) == _run(tiny, fixed=True, tokens_per_call=1)


def test_the_decode_call_traces_as_one_graph(tiny):
    """fullgraph=True raises on any graph break (a host sync, a data-dependent shape): the call is capturable."""
    want = _run(tiny, fixed=True, tokens_per_call=4)
    torch._dynamo.reset()
    original = T3Generator._decode_call
    compiled = torch.compile(original, fullgraph=True, backend="eager")
    try:
        T3Generator._decode_call = compiled
        got = _run(tiny, fixed=True, tokens_per_call=4)
    finally:
        T3Generator._decode_call = original
    assert got == want


def test_graphs_follow_the_qwen3_switch(tiny):
    t3, backbone, tokens = tiny
    for switch in (None, True, False):  # off the GPU nothing is captured, whatever the switch says
        gen = T3Generator(t3, backbone, tokens, max_batch=2, max_seq_len=64, use_cuda_graphs=switch)
        assert not gen.capturing and gen.graphs is None and gen.capture_all(4) == 0.0
