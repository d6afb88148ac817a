"""A voice from a clip: read, resampled to 24 kHz, ended on a short pause, encoded by Mimi and projected
into the flow LM's prompt (pocket_tts TTSModel.get_state_for_audio_prompt). Its keys/values are the
voice state, computed once per clip and reused by every row that speaks with it.
"""

from __future__ import annotations

import math
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

PAUSE_S = 0.08
FADE_S = 0.02
FLOOR_DB = 35.0


@dataclass(frozen=True)
class VoiceState:
    """Per flow-LM layer (k, v) [heads, V, head_dim] of the voice prompt at positions 0..V-1."""

    kv: tuple[tuple[torch.Tensor, torch.Tensor], ...]

    @property
    def length(self) -> int:
        return int(self.kv[0][0].shape[1])

    def nbytes(self) -> int:
        return sum(k.numel() * k.element_size() * 2 for k, _ in self.kv)


def read_clip(path: Path) -> tuple[torch.Tensor, int]:
    """(mono samples [1, T] float32, rate) as the official audio_read gives them."""
    if path.suffix.lower() == ".wav":
        with wave.open(str(path), "rb") as w:
            rate, channels, width = w.getframerate(), w.getnchannels(), w.getsampwidth()
            if width == 2:
                samples = np.frombuffer(w.readframes(-1), dtype=np.int16).astype(np.float32) / 32768.0
                if channels > 1:
                    samples = samples.reshape(-1, channels).mean(axis=1)
                return torch.from_numpy(samples).unsqueeze(0), rate
    import soundfile as sf  # other formats and widths (soundfile is in requirements.txt)

    data, rate = sf.read(str(path), dtype="float32")
    mono = data if data.ndim == 1 else data.mean(axis=1)
    return torch.from_numpy(np.ascontiguousarray(mono)).unsqueeze(0), rate


def resample(wav_1xT: torch.Tensor, rate: int, to_rate: int) -> torch.Tensor:
    if rate == to_rate:
        return wav_1xT
    from scipy.signal import resample_poly  # scipy is in requirements.txt; only for clips at another rate

    g = math.gcd(int(rate), int(to_rate))
    out = resample_poly(wav_1xT.numpy(), int(to_rate // g), int(rate // g), axis=-1)
    return torch.from_numpy(out).to(wav_1xT.dtype)


def end_on_pause(wav_1xT: torch.Tensor, rate: int) -> torch.Tensor:
    """Cut the trailing silence (20 ms frames 35 dB under the loudest), fade the last 20 ms out, add 80 ms of zeros."""
    frame = max(1, int(0.02 * rate))
    n = wav_1xT.shape[-1] // frame
    if n == 0:
        return wav_1xT
    rms = wav_1xT[..., : n * frame].reshape(-1, n, frame).square().mean(dim=(0, 2)).sqrt()
    db = 20 * torch.log10(rms + 1e-12)
    loud = torch.nonzero(db > db.max() - FLOOR_DB).flatten()
    end = (int(loud[-1]) + 1) * frame
    wav = wav_1xT[..., :end].clone()
    fade = min(int(FADE_S * rate), end)
    wav[..., end - fade:] *= torch.linspace(1, 0, fade, dtype=wav.dtype)
    return torch.cat([wav, wav.new_zeros(*wav.shape[:-1], int(PAUSE_S * rate))], dim=-1)


# A clip's voice state costs about 80 GFLOP for 10 s at the released size (Mimi's SEANet encoder, its transformer,
# the prompt through the flow LM), seconds on two cores in float32. With ``bf16`` the convolutions and products run in
# bfloat16 (autocast: oneDNN's bf16 kernels on CPUs with AVX512-BF16 or AMX), the sums and the kept state in float32:
# 2-3x faster there (benchmarks/pocket_tts_new_clip.py), its keys/values about 0.7 % off float32's (relative, the
# rounding of bf16's 8-bit mantissa). Off by default: the exactness tests compare float32 with the official code.


@torch.no_grad()
def voice_state(model, wav_1xT: torch.Tensor, rate: int, bf16: bool = False) -> VoiceState:
    """The voice state of a clip (``model``: a LoadedPocket); ``bf16``: computed in bfloat16, kept in float32."""
    sr = model.config.mimi.sample_rate
    wav = end_on_pause(resample(wav_1xT.to(torch.float32), rate, sr), sr)
    with torch.autocast(model.device.type, dtype=torch.bfloat16, enabled=bf16):
        latents = model.mimi.encode(wav[None].to(model.device))[0]  # [frames, latent_dim]
        kv = model.flow_lm.voice_kv(model.flow_lm.voice_prompt(latents))
    dtype = model.flow_lm.input_linear.weight.dtype
    return VoiceState(tuple((k.to(dtype).contiguous(), v.to(dtype).contiguous()) for k, v in kv))


def load_voice_file(path: Path, num_layers: int) -> VoiceState:
    """A voice state saved by the official code (``export_model_state``: ``<layer module>/cache`` of
    [2, 1, T, heads, head_dim] and ``<layer module>/offset``, or the older ``current_end``), as the released
    ``embeddings/<voice>.safetensors`` are."""
    from safetensors import safe_open  # optional dependency: only when a checkpoint's voices load

    kv = []
    with safe_open(str(path), framework="pt") as f:
        keys = set(f.keys())
        for layer in range(num_layers):
            name = f"transformer.layers.{layer}.self_attn"
            if f"{name}/cache" not in keys:
                raise ValueError(f"{path.name} is not a Pocket TTS voice state (no {name}/cache)")
            cache = f.get_tensor(f"{name}/cache")  # [2, 1, T, H, D]
            if f"{name}/offset" in keys:
                length = int(f.get_tensor(f"{name}/offset").view(-1)[0])
            else:
                length = int(f.get_tensor(f"{name}/current_end").shape[0])
            k, v = cache[0, 0, :length], cache[1, 0, :length]
            kv.append((k.transpose(0, 1).contiguous().float(), v.transpose(0, 1).contiguous().float()))
    return VoiceState(tuple(kv))
