"""A reference clip -> Chatterbox's conditioning, with the official ``prepare_conditionals`` steps.

T3 gets the voice encoder's speaker embedding, up to 150 speech tokens of the clip's first 6 s and the
emotion ("exaggeration") value; S3Gen gets the official ref dict of the clip's first 10 s at 24 kHz.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from tts_app.models.chatterbox.official import official
from tts_app.models.layers.lru import LRUCache as VoiceCache  # noqa: F401  (the backend's cache of analysed voices)

S3GEN_SR = 24000
S3_SR = 16000
ENC_COND_S = 6  # seconds of the clip T3's prompt tokens come from
DEC_COND_S = 10  # seconds of the clip S3Gen's prompt comes from
MIN_REFERENCE_S = 1.0


@dataclass(frozen=True)
class VoiceConds:
    t3: Any  # the official T3Cond (speaker_emb [1, 256], cond_prompt_speech_tokens [1, <=150], emotion_adv [1, 1, 1])
    gen: dict[str, Any]  # S3Gen's ref dict


@torch.inference_mode()
def conditionals(model: Any, audio: np.ndarray, sample_rate: int, exaggeration: float) -> VoiceConds:
    """Analyse a mono clip as the official code does from a file (librosa's resampling, the same cuts)."""
    import librosa  # heavy (about 1 s): only when a Chatterbox voice is prepared

    audio = np.asarray(audio, dtype=np.float32).reshape(-1)
    if audio.size < MIN_REFERENCE_S * sample_rate:
        raise ValueError(f"the reference clip is shorter than {MIN_REFERENCE_S:g} s")
    ref24 = audio if sample_rate == S3GEN_SR else librosa.resample(audio, orig_sr=sample_rate, target_sr=S3GEN_SR)
    ref16 = librosa.resample(ref24, orig_sr=S3GEN_SR, target_sr=S3_SR)
    device = model.s3gen.device
    gen = model.s3gen.embed_ref(ref24[:DEC_COND_S * S3GEN_SR], S3GEN_SR, device=device)
    prompt, _ = model.s3gen.tokenizer.forward([ref16[:ENC_COND_S * S3_SR]], max_len=model.tokens.cond_prompt_len)
    speaker = torch.from_numpy(model.voice_encoder.embeds_from_wavs([ref16], sample_rate=S3_SR)).mean(0, keepdim=True)
    T3Cond = official("models.t3.modules.cond_enc").T3Cond
    t3 = T3Cond(speaker_emb=speaker.to(device), cond_prompt_speech_tokens=torch.atleast_2d(prompt).to(device),
                emotion_adv=exaggeration * torch.ones(1, 1, 1, device=device))
    return VoiceConds(t3, gen)


def with_exaggeration(conds: VoiceConds, exaggeration: float) -> VoiceConds:
    """The same voice at another emotion value (the official generate rebuilds T3Cond the same way)."""
    T3Cond = official("models.t3.modules.cond_enc").T3Cond
    c = conds.t3
    if float(c.emotion_adv.reshape(-1)[0]) == exaggeration:
        return conds
    t3 = T3Cond(speaker_emb=c.speaker_emb, cond_prompt_speech_tokens=c.cond_prompt_speech_tokens,
                emotion_adv=exaggeration * torch.ones(1, 1, 1, device=c.speaker_emb.device))
    return VoiceConds(t3, conds.gen)
