"""The one-pass prefill of the Pocket TTS generator (text and the BOS latent's input in one flow-LM call, the last
layer attending and feeding forward at the BOS position only) equals feeding the same tokens one at a time, as the
official code's steps do; on a tiny random checkpoint in float64, so that the two orders of arithmetic agree to
rounding (1e-12) and a wrong position, mask or cache write cannot hide under float32 noise."""

from __future__ import annotations

import pytest
import torch

from tests.support.pocket_tts_tiny import write_tiny_checkpoint
from tts_app.models.layers.kv_cache import SlotPool
from tts_app.models.pocket_tts.generator import PocketGenerator
from tts_app.models.pocket_tts.voice import VoiceState
from tts_app.models.pocket_tts.weights import load_pocket

pytestmark = pytest.mark.usefixtures("one_thread")

ATOL = 1e-12
IDS = [[5, 17, 3, 42, 8, 11, 2], [9, 4]]  # ragged: the short row is padded in the one-pass call
STEPS = 5


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    m = load_pocket(write_tiny_checkpoint(tmp_path_factory.mktemp("pocket") / "ckpt", voices=False))
    m.flow_lm.double()
    m.mimi.double()
    return m


def _voice(model, length: int, seed: int) -> VoiceState:
    """A random voice state in the model's cache shape (its values need not come from a clip here)."""
    s = model.config.flow_lm
    g = torch.Generator().manual_seed(seed)
    shape = (s.num_kv_heads, length, s.attn_dim // s.num_heads)
    return VoiceState(tuple((torch.randn(shape, generator=g, dtype=torch.float64),
                             torch.randn(shape, generator=g, dtype=torch.float64)) for _ in range(s.num_layers)))


def _noise(seed: int, dim: int):
    g = torch.Generator().manual_seed(seed)
    draws = torch.randn(STEPS, dim, generator=g, dtype=torch.float64)
    return lambda step: draws[step]


def _token_by_token(model, voice: VoiceState, ids: list[int], noise) -> tuple[torch.Tensor, list[torch.Tensor], list]:
    """(first hidden state [C], latents, (keys, values) [layers, heads, V + text + 1, head_dim] after the BOS) of one
    row alone, every token its own flow-LM call."""
    flow = model.flow_lm
    kv = flow.new_cache(SlotPool(1), 64)
    for layer, (k, v) in enumerate(voice.kv):
        kv.k[layer, 0, :, :voice.length] = k
        kv.v[layer, 0, :, :voice.length] = v
    kv.lengths[0] = voice.length
    one = torch.ones(1, dtype=torch.long)
    for t in ids:
        flow.hidden(flow.conditioner(torch.tensor([[t]])), kv.bind(0, one))
    h = flow.hidden(flow.bos_input()[None, None], kv.bind(0, one))[:, -1]
    n = int(kv.lengths[0])
    first, latents, cache = h[0], [], (kv.k[:, 0, :, :n].clone(), kv.v[:, 0, :, :n].clone())
    for step in range(STEPS):
        latent, _ = flow.head(h, noise(step)[None])
        latents.append(latent[0])
        h = flow.hidden(flow.latent_input(latent), kv.bind(0, one))[:, -1]
    return first, latents, cache


@torch.no_grad()
def test_one_pass_prefill_equals_token_by_token(model):
    voices = [_voice(model, 6, 1), _voice(model, 9, 2)]
    dim = model.flow_lm.ldim
    gen = PocketGenerator(model, max_batch=2, max_len=64)
    gen.eos_threshold = float("inf")  # the rows run their STEPS latents
    rows = gen.prefill(voices, IDS, [STEPS, STEPS], [0, 0], [_noise(10 + i, dim) for i in range(2)])
    firsts = gen.ready_h[:2].clone()
    assert gen.ready[:2].all()
    prefilled = [(gen.kv.k[:, b].clone(), gen.kv.v[:, b].clone()) for b in range(2)]  # before any slot moves
    while not all(r.done for r in rows):
        gen.step()
    for b, (voice, ids, row) in enumerate(zip(voices, IDS, rows)):
        first, latents, (keys, values) = _token_by_token(model, voice, ids, _noise(10 + b, dim))
        n = voice.length + len(ids) + 1
        assert keys.shape[2] == n
        assert (prefilled[b][0][:, :, :n] - keys).abs().max() <= ATOL, f"row {b}: prefilled keys"
        assert (prefilled[b][1][:, :, :n] - values).abs().max() <= ATOL, f"row {b}: prefilled values"
        assert (firsts[b] - first).abs().max() <= ATOL, f"row {b}: first hidden state"
        assert len(row.latents) == STEPS
        assert (torch.stack(row.latents) - torch.stack(latents)).abs().max() <= ATOL, f"row {b}: latents"


@torch.no_grad()
def test_kept_positions_equal_the_full_pass(model):
    """The last layer's output at the kept positions equals the full pass's there; every key is stored alike."""
    flow = model.flow_lm
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 5, flow.shape.d_model, generator=g, dtype=torch.float64)  # [B, T, d_model]
    lens = torch.tensor([5, 3])
    keep = torch.tensor([4, 1])  # any position, not only the last
    caches = [flow.new_cache(SlotPool(2), 16) for _ in range(2)]
    full = flow.hidden(x, caches[0].bind(0, lens))
    kept = flow.hidden(x, caches[1].bind(0, lens), keep_B=keep)
    assert kept.shape == (2, 1, full.shape[-1])
    assert (kept[:, 0] - full[torch.arange(2), keep]).abs().max() <= ATOL
    assert torch.equal(caches[0].k, caches[1].k) and torch.equal(caches[0].v, caches[1].v)
    assert torch.equal(caches[0].lengths, caches[1].lengths)
