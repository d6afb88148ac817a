"""The Qwen3 backend through the engine contract: prepare/step/release, streaming audio, voices, loading."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from tests.support.qwen3_tiny import tiny_backend as _backend
from tests.support.qwen3_tiny import write_checkpoint
from tts_app.backends.base import RowInput
from tts_app.backends.params import SpeechParams
from tts_app.backends.qwen3 import Qwen3Backend, WeightsMissing
from tts_app.models.qwen3.prompt import PromptTokens
from tts_app.models.qwen3.sampling import SamplingParams

pytestmark = pytest.mark.usefixtures("one_thread")


def _drain(backend, states) -> list[np.ndarray]:
    audio = [[] for _ in states]
    live = list(range(len(states)))
    while live:
        outs = backend.step([states[i] for i in live])
        for i, out in zip(live, outs):
            assert out.audio.dtype == np.float32 and out.audio.ndim == 1
            audio[i].append(out.audio)
        for i, out in zip(list(live), outs):
            if out.done:
                backend.release(states[i])
                live.remove(i)
    return [np.concatenate(a) for a in audio]


def test_streams_audio_and_batch_mates_do_not_matter():
    backend = _backend(max_batch=3, frames_per_step=2)
    voice = SimpleNamespace(reference_audio=np.sin(np.arange(16000) / 9.0).astype(np.float32), reference_sample_rate=16000)
    rows = [RowInput(1, "hello there", SpeechParams(seed=5)), RowInput(2, "a longer sentence here", SpeechParams(seed=6, voice=voice)),
            RowInput(3, "short", SpeechParams(seed=7))]
    together = _drain(backend, backend.prepare(rows))
    spf = backend.codec.samples_per_frame
    for row, audio in zip(rows, together):
        assert 0 < audio.size <= 9 * spf and audio.size % spf == 0  # EOS or max_new_tokens frames
        alone = _drain(backend, backend.prepare([row]))[0]
        assert audio.shape == alone.shape  # sampled with per-row seeds: same tokens solo or batched
        np.testing.assert_allclose(audio, alone, atol=1e-5)
    assert backend.free_slots == backend.max_batch_size


def test_too_many_rows_is_a_clear_error():
    backend = _backend(max_batch=1)
    with pytest.raises(RuntimeError, match="slots"):
        backend.prepare([RowInput(1, "a", SpeechParams()), RowInput(2, "b", SpeechParams())])


def test_missing_weights_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setenv("TTS_APP_QWEN3_PATH", str(tmp_path))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(WeightsMissing) as e:
        Qwen3Backend.from_pretrained()
    msg = str(e.value)
    assert "\n" not in msg and "TTS_APP_QWEN3_PATH" in msg and "huggingface-cli download" in msg


def test_loads_a_checkpoint_directory(tmp_path):
    pytest.importorskip("safetensors.torch", reason="safetensors not installed (requirements-gpu.txt)")
    pytest.importorskip("tokenizers", reason="tokenizers not installed (requirements-gpu.txt)")
    ref = _backend()
    write_checkpoint(ref, tmp_path)  # laid out like the published ones

    loaded = Qwen3Backend.from_pretrained(str(tmp_path), device="cpu", sampling=SamplingParams(max_new_tokens=5))
    assert loaded.tokenizer.prompt_tokens("hi!") == PromptTokens([290, 10, 12], [ord("h"), ord("i"), ord("!")])
    for a, b in zip(loaded.talker.state_dict().values(), ref.talker.state_dict().values()):
        assert torch.equal(a, b)
    (out,) = _drain(loaded, loaded.prepare([RowInput(1, "hi!", SpeechParams(seed=3))]))
    assert out.size == 5 * loaded.codec.samples_per_frame and np.isfinite(out).all()
