"""Counter-based noise (tts_app/models/layers/row_noise.py): the hash, the law of the draws, and their independence.

The draws are a fixed function of their counters, so every figure here is the same on every run:
the thresholds are statistical, the outcomes are not flaky.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from tts_app.models.layers.row_noise import mix32, row_key, row_uniform
from tts_app.models.qwen3.sampling import sample_tokens

M32 = 0xFFFFFFFF


def _lowbias32(x: int) -> int:
    """Wellons' reference, in Python's unbounded ints."""
    x &= M32
    x ^= x >> 16
    x = (x * 0x7FEB352D) & M32
    x ^= x >> 15
    x = (x * 0x846CA68B) & M32
    return x ^ (x >> 16)


def _draws(keys: list[int], frames: list[int], books: list[int], width: int) -> torch.Tensor:
    return row_uniform(torch.tensor(keys), torch.tensor(frames), torch.tensor(books), width)


def test_mix32_equals_the_reference_on_edge_and_random_words():
    words = [0, 1, 2, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, M32] + list(np.random.default_rng(0).integers(0, 2**32, 200))
    got = mix32(torch.tensor([int(w) for w in words], dtype=torch.long)).tolist()
    assert got == [_lowbias32(int(w)) for w in words]


def test_row_key_uses_all_64_bits_of_the_seed():
    keys = {row_key(s) for s in (0, 1, 2**32, 2**32 + 1, 2**63 - 1, 2**64 - 1)}
    assert len(keys) == 6 and all(0 <= k <= M32 for k in keys)


def test_draws_are_uniform():
    u = _draws([row_key(s) for s in range(50)], list(range(50)), [0, 1, 2, 3], 1000).flatten().numpy()  # 200,000
    assert u.min() >= 0.0 and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    counts = np.bincount((u * 256).astype(int), minlength=256)
    assert stats.chisquare(counts).pvalue > 1e-3


@pytest.mark.parametrize("neighbour", ["seed", "frame", "codebook", "token"])
def test_neighbouring_counters_are_independent(neighbour):
    """Pairs of draws one step apart in one counter field: correlation ~ 0 and their joint 16x16 histogram flat."""
    n_rows, width = 400, 500
    seeds, frames = list(range(n_rows)), [7] * n_rows
    a = _draws([row_key(s) for s in seeds], frames, [2], width + 1)[:, 0]
    if neighbour == "seed":
        b = _draws([row_key(s + 1) for s in seeds], frames, [2], width + 1)[:, 0]
    elif neighbour == "frame":
        b = _draws([row_key(s) for s in seeds], [8] * n_rows, [2], width + 1)[:, 0]
    elif neighbour == "codebook":
        b = _draws([row_key(s) for s in seeds], frames, [3], width + 1)[:, 0]
    else:
        b = a[:, 1:]
    x, y = a[:, :width].flatten().numpy(), b[:, :width].flatten().numpy()  # 200,000 pairs
    assert abs(np.corrcoef(x, y)[0, 1]) < 0.012  # 4 standard errors
    joint = np.bincount((x * 16).astype(int) * 16 + (y * 16).astype(int), minlength=256)
    assert stats.chisquare(joint).pvalue > 1e-3


def test_a_row_draws_the_same_whatever_its_batch():
    keys, frames = [row_key(s) for s in (5, 9, 11, 2**40)], [0, 3, 3, 100]
    together = _draws(keys, frames, [1, 2], 64)
    for r in range(4):
        assert torch.equal(_draws(keys[r:r + 1], frames[r:r + 1], [1, 2], 64)[0], together[r])
    assert not torch.equal(together[1], together[2])  # same frame, other seed


def test_exponential_race_on_counter_noise_follows_the_softmax():
    """Token frequencies of sample_tokens fed with these draws (4,000 rows x 5 frames) match the distribution."""
    probs = torch.tensor([0.5, 0.25, 0.15, 0.1])
    B, frames = 4000, 5
    keys = torch.tensor([row_key(s) for s in range(B)])
    ones = torch.ones(B)
    counts = torch.zeros(4)
    for f in range(frames):
        u = row_uniform(keys, torch.full((B,), f), torch.tensor([0]), 4)[:, 0]
        tok = sample_tokens(probs.log().expand(B, 4), ones, torch.zeros(B, dtype=torch.long), ones, u)
        counts += torch.bincount(tok, minlength=4)
    assert stats.chisquare(counts.numpy(), (probs * B * frames).numpy()).pvalue > 1e-3
