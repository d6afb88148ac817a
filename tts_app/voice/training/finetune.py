"""Fine-tune the decoder on (warped model latents -> reference waveform), with early stopping on
held-back frames. Returns the best decoder seen (weights merged, stock layout)."""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from tts_app.voice.training.adapters import merge, trainable
from tts_app.voice.training.decoder import HOP, HifiGanDecoder
from tts_app.voice.training.losses import MelLoss, stft_loss
from tts_app.voice.training.pairs import TrainingPairs

_CONTEXT = 8  # latent frames fed on each side of a segment and cut from the output: no edge effects in the loss


@dataclass(frozen=True)
class TrainConfig:
    scheme: str = "lora4"  # adapters.trainable
    lr: float = 1e-3
    steps: int = 150
    batch: int = 4
    segment_frames: int = 32  # 8,192 samples of target per segment
    mel_weight: float = 1.0  # the MR-STFT loss has weight 1
    own_weight: float = 0.0  # keeps the model's own latents -> its released audio (guards words)
    held_back: float = 0.15  # the clip's last frames: never trained on, they pick the step to keep
    eval_every: int = 10
    patience: int = 4  # evaluations without improvement before stopping
    seed: int = 0


@dataclass
class TrainResult:
    decoder: HifiGanDecoder
    train_losses: list[float] = field(default_factory=list)
    held_losses: list[float] = field(default_factory=list)  # one per evaluation, the first before any step
    best_step: int = 0
    steps_run: int = 0
    cpu_s: float = 0.0


class _Segments:
    """Random segments (with context) of a latent/audio pair, within frames [lo, hi)."""

    def __init__(self, z: np.ndarray, audio: np.ndarray, lo: int, hi: int, frames: int) -> None:
        pad = np.zeros((z.shape[0], _CONTEXT), np.float32)
        self.z = torch.from_numpy(np.concatenate([pad, z, pad], axis=1))
        self.audio = torch.from_numpy(audio)
        self.lo, self.hi, self.frames = lo, max(lo + 1, hi - frames), frames

    def sample(self, rng: np.random.Generator, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        starts = rng.integers(self.lo, self.hi, size=batch)
        n = self.frames + 2 * _CONTEXT
        z = torch.stack([self.z[:, s : s + n] for s in starts])
        y = torch.stack([self.audio[s * HOP : (s + self.frames) * HOP] for s in starts])
        return z, y


def _decode(decoder: HifiGanDecoder, z_with_context: torch.Tensor) -> torch.Tensor:
    return decoder(z_with_context)[:, 0, _CONTEXT * HOP : -_CONTEXT * HOP]


def finetune(
    pairs: TrainingPairs,
    decoder: HifiGanDecoder,
    config: TrainConfig = TrainConfig(),
    should_stop: Callable[[], bool] | None = None,
) -> TrainResult:
    """Adapt a copy of ``decoder``; ``should_stop`` is polled every step (cancellation)."""
    cpu0 = time.process_time()
    rng = np.random.default_rng(config.seed)
    torch.manual_seed(config.seed)
    model = copy.deepcopy(decoder)
    params = trainable(model, config.scheme)
    optimiser = torch.optim.Adam(params, lr=config.lr)
    mel = MelLoss()
    n = pairs.z.shape[1]
    split = int(n * (1 - config.held_back))
    seg = min(config.segment_frames, max(4, split // 2))
    train = _Segments(pairs.z, pairs.audio, 0, split, seg)
    own = _Segments(pairs.model_z, pairs.model_audio, 0, pairs.model_z.shape[1], seg)
    held_z = torch.from_numpy(np.pad(pairs.z[:, split - _CONTEXT :], ((0, 0), (0, _CONTEXT))))[None]
    held_y = torch.from_numpy(pairs.audio[split * HOP :])[None]

    def loss_of(y: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return stft_loss(y, target) + config.mel_weight * mel(y, target)

    def held_loss() -> float:
        with torch.no_grad():
            return float(loss_of(_decode(model, held_z), held_y))

    result = TrainResult(decoder)
    best, best_state, waited = held_loss(), copy.deepcopy(model.state_dict()), 0
    result.held_losses.append(best)
    model.train()
    for step in range(1, config.steps + 1):
        if should_stop is not None and should_stop():
            break
        z, y = train.sample(rng, config.batch)
        loss = loss_of(_decode(model, z), y)
        if config.own_weight > 0:
            z_own, y_own = own.sample(rng, config.batch)
            loss = loss + config.own_weight * loss_of(_decode(model, z_own), y_own)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        result.train_losses.append(loss.item())
        result.steps_run = step
        if step % config.eval_every == 0:
            held = held_loss()
            result.held_losses.append(held)
            if held < best:
                best, best_state, waited, result.best_step = held, copy.deepcopy(model.state_dict()), 0, step
            else:
                waited += 1
                if waited >= config.patience:
                    break
    model.load_state_dict(best_state)
    result.decoder = merge(model.eval())
    result.cpu_s = time.process_time() - cpu0
    return result
