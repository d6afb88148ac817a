"""S3Gen's flow solve in fixed shapes (rows padded to the batch bucket, frames to the length bucket: what one CUDA
graph per bucket replays) equals the ragged eager solve on every valid frame; the solve traces as one graph.

The released S3Gen sizes with random weights. The padded frames are masked out of attention and velocity,
so equal in arithmetic; float32 rounding of attention over more masked keys and convolutions over longer
inputs moves the mel by about 1e-6 (bound 1e-4, the official-parity tests' MEL_ATOL).
"""

from __future__ import annotations

import pytest
import torch

from tts_app.models.chatterbox import s3gen_batch as sb
from tts_app.models.chatterbox.flow_graph import FlowSolver

from tests.support.chatterbox_tiny import random_ref, random_s3gen

pytestmark = pytest.mark.usefixtures("one_thread")

MEL_ATOL = 1e-4
STEPS = 2  # Euler steps (the released 10 cost 5x the time; each step is the same estimator call on the same padding)


@pytest.fixture(scope="module")
def s3gen():
    return random_s3gen()


def _rows(n_tokens: list[int], prompts: list[int]) -> list[sb.FlowRow]:
    rows = []
    for i, (n, lp) in enumerate(zip(n_tokens, prompts)):
        ref = random_ref(lp, seed=10 + i)
        g = torch.Generator().manual_seed(20 + i)
        rows.append(sb.FlowRow(torch.randint(0, 6561, (n,), generator=g), ref, sb.starting_noise(ref, n, g)))
    return rows


def test_bucketed_solve_equals_ragged(s3gen):
    """Three rows of different prompts and lengths (a bucket of 4 rows, 128 frames)."""
    rows = _rows([12, 5, 9], [8, 14, 6])
    want = sb.flow_mels(s3gen, rows, n_timesteps=STEPS)
    solver = FlowSolver(s3gen, max_batch=4, n_timesteps=STEPS, max_frames=128, fixed_shapes=True)
    got = sb.flow_mels(s3gen, rows, solver=solver)
    assert solver.graphs.len_bucket(2 * (14 + 5)) == 128 and solver.graphs.batch_bucket(3) == 4
    worst = 0.0
    for g, w in zip(got, want):
        assert g.shape == w.shape
        worst = max(worst, (g - w).abs().max().item())
    print(f"max |fixed - ragged| mel {worst:.1e}")
    assert worst <= MEL_ATOL


@pytest.mark.slow  # tracing the released estimator takes minutes on one core
def test_the_solve_traces_as_one_graph(s3gen):
    """fullgraph=True raises on any graph break: the official estimator's host sync is gone from the solve."""
    rows = _rows([6, 4], [5, 7])
    solver = FlowSolver(s3gen, max_batch=2, n_timesteps=1, max_frames=64, fixed_shapes=True)
    want = sb.flow_mels(s3gen, rows, solver=solver)
    torch._dynamo.reset()
    solver._call = torch.compile(solver._call, fullgraph=True, backend="eager")
    got = sb.flow_mels(s3gen, rows, solver=solver)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, atol=MEL_ATOL, rtol=0)


def test_a_window_past_the_largest_bucket_is_solved_eagerly(s3gen):
    rows = _rows([30], [10])  # 80 frames > the 64 of the largest bucket
    solver = FlowSolver(s3gen, max_batch=2, n_timesteps=STEPS, max_frames=64, fixed_shapes=True)
    got = sb.flow_mels(s3gen, rows, solver=solver)[0]
    torch.testing.assert_close(got, sb.flow_mels(s3gen, rows, n_timesteps=STEPS)[0], atol=0, rtol=0)


def test_graphs_follow_the_qwen3_switch(s3gen):
    for switch in (None, True, False):  # off the GPU nothing is captured, whatever the switch says
        solver = FlowSolver(s3gen, max_batch=2, use_cuda_graphs=switch)
        assert not solver.capturing and solver.graphs is None and solver.capture_all() == 0.0
