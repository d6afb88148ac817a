"""Chunked (streaming) codec decoding equals whole-sequence decoding.

The decoder is causal, so a chunk decoded with at least a receptive field of left context is
exact (float32 tolerance 1e-5 here). With less context (the streaming default, 25 frames, is
less than the real transformer's 8 x 72-frame reach) it is an approximation; the second test
states the measured bound on a randomly initialised decoder of the real depth and window.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from tts_app.models.qwen3.codec import CodecDecoder
from tests.support.qwen3_talker import tiny_configs
from tts_app.models.qwen3.streaming import decode_new_audio

from tests.support.qwen3_tiny import random_codec

pytestmark = pytest.mark.usefixtures("one_thread")

EXACT_ATOL = 1e-5
# Measured max |chunked - whole| on the real-depth decoder (peak |whole| 0.43), by left context:
# 0 frames 0.53, 10: 0.11, 25: 3.8e-3, 50: 2.9e-3, 100: 3.2e-5.
APPROX_ATOL = 5e-3  # bound for 25 frames of context


def _codec(**overrides) -> CodecDecoder:
    return random_codec(dataclasses.replace(tiny_configs()[1], **overrides))


def _stream(codec: CodecDecoder, codes_TxG: torch.Tensor, chunk_sizes: list[int], left_context: int) -> np.ndarray:
    history: list[torch.Tensor] = []
    pieces, t = [], 0
    for n in chunk_sizes:
        history.append(codes_TxG[t:t + n])
        t += n
        pieces.append(decode_new_audio(codec, [history], [n], left_context)[0])
    return np.concatenate(pieces)


def _whole(codec: CodecDecoder, codes_TxG: torch.Tensor) -> np.ndarray:
    with torch.inference_mode():
        return codec(codes_TxG.T[None])[0].numpy()


def test_chunked_equals_whole_with_receptive_field_context():
    codec = _codec()
    codes = torch.randint(0, codec.cfg.codebook_size, (60, codec.cfg.num_quantizers))
    whole = _whole(codec, codes)
    chunks = [1, 3, 4, 4, 7, 5, 4, 4, 4, 12, 4, 8]
    assert sum(chunks) == 60
    streamed = _stream(codec, codes, chunks, left_context=25)  # tiny decoder reach: 2 layers x 4 frames + convs
    assert streamed.shape == whole.shape == (60 * codec.samples_per_frame,)
    np.testing.assert_allclose(streamed, whole, atol=EXACT_ATOL, rtol=0)


def test_chunked_with_short_context_on_real_depth_decoder():
    codec = _codec(num_hidden_layers=8, sliding_window=72)
    codes = torch.randint(0, codec.cfg.codebook_size, (160, codec.cfg.num_quantizers))
    whole = _whole(codec, codes)
    streamed = _stream(codec, codes, [4] * 40, left_context=25)
    err = float(np.abs(streamed - whole).max())
    assert err <= APPROX_ATOL, f"max abs error {err:.2e}"


def test_rows_with_different_shapes_decode_in_one_call():
    codec = _codec()
    a = torch.randint(0, 64, (30, 4))
    b = torch.randint(0, 64, (9, 4))
    out = decode_new_audio(codec, [[a], [b[:5], b[5:]], []], [4, 4, 0], left_context=25)
    spf = codec.samples_per_frame
    np.testing.assert_allclose(out[0], _whole(codec, a)[-4 * spf:], atol=EXACT_ATOL)
    np.testing.assert_allclose(out[1], _whole(codec, b)[-4 * spf:], atol=EXACT_ATOL)
    assert out[2].size == 0
