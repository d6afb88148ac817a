"""Decoder fine-tuning (issue 27): a short run lowers its held-back loss, starts from the released
weights exactly, can be cancelled, and hands back a decoder of the stock layout."""

from __future__ import annotations


import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("librosa")

from scipy.signal import lfilter  # noqa: E402

from tts_app.assets import BUILTIN_VOICES_DIR  # noqa: E402
from tts_app.voice.training.adapters import trainable  # noqa: E402
from tts_app.voice.training.decoder import HOP, load_decoder  # noqa: E402
from tts_app.voice.training.finetune import TrainConfig, finetune  # noqa: E402
from tts_app.voice.training.latents import text_latents  # noqa: E402
from tts_app.voice.training.pairs import TrainingPairs, frame_features, to_model_rate, warp_index  # noqa: E402

SHARED_VOICES = BUILTIN_VOICES_DIR  # the shared clips, shipped inside the package
SMALL = dict(batch=2, segment_frames=16, eval_every=4, patience=10)


@pytest.fixture(scope="module")
def stock():
    return load_decoder()


@pytest.fixture(scope="module")
def pairs(stock) -> TrainingPairs:
    """Target: the model's own audio through a strong tilt filter (a "voice" the decoder can learn)."""
    z = text_latents("The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background.", seed=0)
    with torch.no_grad():
        audio = stock(torch.from_numpy(z)[None])[0, 0].numpy()
    target = lfilter([1.0, -0.95], [1.0], audio).astype(np.float32) * 0.5
    return TrainingPairs(z, target, z, audio, "test")


def _out(decoder, z: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return decoder(torch.from_numpy(z)[None]).numpy()


@pytest.mark.parametrize("scheme", ["lora4", "late"])
def test_short_run_lowers_held_back_loss(stock, pairs, scheme):
    torch.set_num_threads(1)
    result = finetune(pairs, stock, TrainConfig(scheme=scheme, lr=3e-3 if scheme == "lora4" else 3e-4, steps=12, **SMALL))
    assert result.steps_run == 12
    assert min(result.held_losses[1:]) < result.held_losses[0] * 0.97
    assert result.best_step > 0
    assert result.cpu_s > 0
    # the kept decoder is the best one seen, of the stock layout, and it differs from the released one
    assert set(result.decoder.state_dict()) == set(stock.state_dict())
    assert np.abs(_out(result.decoder, pairs.z[:, :40]) - _out(stock, pairs.z[:, :40])).max() > 1e-3


def test_low_rank_adapters_start_at_the_released_decoder(stock, pairs):
    import copy

    model = copy.deepcopy(stock)
    params = trainable(model, "lora2")
    assert params and all(p.requires_grad for p in params)
    assert not any(p.requires_grad for n, p in model.named_parameters() if n.endswith("original"))
    assert np.array_equal(_out(model, pairs.z[:, :40]), _out(stock, pairs.z[:, :40]))


def test_cancelled_run_returns_the_released_weights(stock, pairs):
    result = finetune(pairs, stock, TrainConfig(steps=50, **SMALL), should_stop=lambda: True)
    assert result.steps_run == 0
    assert np.array_equal(_out(result.decoder, pairs.z[:, :40]), _out(stock, pairs.z[:, :40]))


def test_unknown_scheme_is_refused(stock):
    with pytest.raises(ValueError, match="unknown adapter scheme"):
        trainable(stock, "everything")


def test_warp_index_follows_a_time_stretch():
    """DTW pairs the frames of a 1.5x longer copy of real speech (every other hop repeated) back to their sources."""
    import soundfile as sf

    audio, rate = sf.read(str(SHARED_VOICES / "lj_female_us.wav"), dtype="float32")
    audio = to_model_rate(audio, rate)[: 4 * 22050]
    n = len(audio) // HOP
    source = np.repeat(np.arange(n), np.where(np.arange(n) % 2 == 0, 2, 1))
    slow = np.concatenate([audio[i * HOP : (i + 1) * HOP] for i in source])
    index = warp_index(frame_features(slow, len(source)), frame_features(audio, n))
    assert len(index) == len(source) and np.all(np.diff(index) >= 0)
    error = np.abs(index - source)
    assert np.mean(error <= 1) > 0.9 and error.max() <= 4
