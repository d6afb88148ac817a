"""The codec in fixed shapes (``CodecWindows``, what a CUDA graph per batch bucket replays) equals the ragged eager decode.

Rows are right-padded to W = left context + frames per step and the batch to its bucket; the decoder
is causal, so this is exact in arithmetic. In float32 the padded call's convolutions and attention run
over other lengths and batch sizes (other blockings of the same sums), so the tolerance is float32
rounding: 1e-5 on samples in [-1, 1] (measured: about 1e-7).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tts_app.models.qwen3.codec import CodecDecoder
from tts_app.models.qwen3.config import CodecConfig
from tests.support.qwen3_talker import tiny_configs
from tts_app.models.qwen3.streaming import CodecWindows, decode_new_audio

from tests.support.qwen3_tiny import random_codec

pytestmark = pytest.mark.usefixtures("one_thread")

ATOL = 1e-5


def _histories(cfg: CodecConfig, lengths: list[int], chunk: int) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(1)
    out = []
    for n in lengths:
        codes = rng.integers(0, cfg.codebook_size, (n, cfg.num_quantizers))
        out.append([codes[i:i + chunk] for i in range(0, n, chunk)])
    return out


def _assert_equal(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    worst = 0.0
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == np.float32
        if w.size:
            worst = max(worst, float(np.abs(g - w).max()))
    assert worst <= ATOL, worst
    return worst


@pytest.fixture(scope="module")
def tiny() -> CodecDecoder:
    return random_codec(tiny_configs()[1])


def test_bucketed_windows_equal_ragged_decode(tiny):
    """Five rows with new frames (a bucket of 8): a first window, short contexts, steady rows, short last steps; one idle."""
    windows = CodecWindows(tiny, left_context=10, frames_per_step=4, max_batch=8, fixed_shapes=True)
    histories = _histories(tiny.cfg, [4, 8, 30, 41, 22, 17], chunk=4)
    new = [4, 4, 4, 1, 2, 0]  # rows 3 and 4 end on fewer frames than a step
    got = windows.decode(histories, new)
    want = decode_new_audio(tiny, histories, new, left_context=10)
    assert [g.size for g in got] == [n * tiny.samples_per_frame for n in new]
    print(f"max |fixed - ragged| {_assert_equal(got, want):.1e}")
    # The call read the staged buffers of bucket 8 (5 rows) and wrote nothing a later call depends on.
    assert windows.bucket(5) == 8 and windows.codes_BxGxW.shape == (8, tiny.cfg.num_quantizers, 14)
    again = windows.decode(histories, new)
    for a, b in zip(again, got):
        np.testing.assert_array_equal(a, b)


def test_more_new_frames_than_a_step_take_the_ragged_way(tiny):
    windows = CodecWindows(tiny, left_context=10, frames_per_step=4, max_batch=4, fixed_shapes=True)
    histories = _histories(tiny.cfg, [12, 20], chunk=6)
    got = windows.decode(histories, [6, 6])
    _assert_equal(got, decode_new_audio(tiny, histories, [6, 6], left_context=10))


def test_the_window_call_traces_as_one_graph(tiny):
    """fullgraph=True raises on any graph break (a host sync, a data-dependent shape): the call is capturable."""
    windows = CodecWindows(tiny, left_context=10, frames_per_step=4, max_batch=4, fixed_shapes=True)
    histories = _histories(tiny.cfg, [9, 30, 3], chunk=3)
    want = windows.decode(histories, [3, 3, 3])
    torch._dynamo.reset()
    windows._call = torch.compile(windows._call, fullgraph=True, backend="eager")
    got = windows.decode(histories, [3, 3, 3])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.slow
def test_released_layout_bucketed_equals_ragged():
    """The released codec's sizes (random weights), three rows in a bucket of 4; a short window keeps it under a minute."""
    codec = random_codec(CodecConfig())
    windows = CodecWindows(codec, left_context=2, frames_per_step=2, max_batch=4, fixed_shapes=True)
    histories = _histories(codec.cfg, [2, 7, 4], chunk=2)
    new = [2, 2, 1]
    got = windows.decode(histories, new)
    want = decode_new_audio(codec, histories, new, left_context=2)
    print(f"released layout: max |fixed - ragged| {_assert_equal(got, want):.1e}")


def test_graphs_follow_the_generator_switch(tiny):
    """Off the GPU there is nothing to capture: the ragged way, whatever the switch says."""
    for switch in (None, True, False):
        windows = CodecWindows(tiny, left_context=10, frames_per_step=4, max_batch=4, use_cuda_graphs=switch)
        assert windows.graphs is None and not windows.fixed
        assert windows.capture_all() == 0.0
