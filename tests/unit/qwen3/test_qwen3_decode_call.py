"""The decode call is one capturable function: traced whole by torch.compile, and its host work does not grow with the batch."""

from __future__ import annotations

import pytest
import torch

from tts_app.models.qwen3.generator import BatchedGenerator
from tts_app.models.qwen3.sampling import SamplingParams

from tests.support.decode_ops import ops_per_decode_call
from tests.support.qwen3_talker import prompt_for, run_to_end, tiny_talker

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def tiny():
    cfg, _, talker = tiny_talker()
    return cfg, talker


def _start(cfg, talker, rows: int, max_batch: int, max_frames: int, no_eos: bool = False) -> tuple[BatchedGenerator, list]:
    gen = BatchedGenerator(talker, cfg.tts_pad_token_id, max_batch=max_batch, max_seq_len=256, frames_per_step=3)
    prompts = [prompt_for(talker, cfg, 4 + r % 5, r) for r in range(rows)]
    params = [SamplingParams(max_new_tokens=max_frames - r, min_new_tokens=max_frames if no_eos else 2, top_k=20,
                             subtalker_top_k=10) for r in range(rows)]
    states = gen.prefill([p for p, _ in prompts], [t for _, t in prompts], params, [40 + r for r in range(rows)])
    return gen, states


def test_decode_call_traces_as_one_graph_and_matches_eager(tiny):
    """fullgraph=True raises on any graph break (a host sync, data-dependent Python); the traced call gives the eager codes."""
    cfg, talker = tiny
    eager, eager_rows = _start(cfg, talker, 3, 4, 9)
    traced, traced_rows = _start(cfg, talker, 3, 4, 9)
    torch._dynamo.reset()
    traced._decode_call = torch.compile(traced._decode_call, fullgraph=True, backend="eager")
    run_to_end(eager, eager_rows)
    run_to_end(traced, traced_rows)
    for a, b in zip(eager_rows, traced_rows):
        assert a.frames > 0 and torch.equal(a.all_codes(), b.all_codes())


def test_ops_per_decode_call_do_not_grow_with_batch(tiny):
    cfg, talker = tiny
    counts = {}
    for batch in (1, 8, 32):
        gen, states = _start(cfg, talker, batch, batch, 200, no_eos=True)
        counts[batch] = ops_per_decode_call(gen, states)
        assert all(s.frames == 6 for s in states)  # the warm-up call and the profiled one: 3 frames each
    assert counts[1]["all"] > 100  # the profiler saw the call's ops
    print(f"aten ops per decode call (3 frames), batch 1/8/32: {counts}")
    assert counts[8] == counts[32], counts
    # Batch 1 may dispatch a few more (a batch of one reshapes by views where a larger one copies), never fewer.
    assert all(counts[1][k] >= counts[8][k] for k in ("all", "top")), counts
