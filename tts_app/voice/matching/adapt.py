"""Applying a voice: the per-request streaming adapter and the whole-utterance form.

Pipeline: PSOLA pitch + formant stage -> timbre FIRs (voiced, unvoiced) -> per-sound-class
spectral filter (classmap.py, when the profile has one) -> soft limiter. Each stage
is chunk-independent, so ``adapt`` (one chunk) and a streamer fed any chunking
give the same samples up to float rounding, and the same length as the input.
"""

from __future__ import annotations

import numpy as np

from typing import Any, Protocol

from tts_app.voice.matching.eq import FirStream
from tts_app.voice.errors import VoiceError
from tts_app.voice.matching.plan import AdaptPlan, cached_plan
from tts_app.voice.matching.psola import PsolaStream
from tts_app.voice.matching.specfilter import SpectralFilterStream



class ProfileLike(Protocol):
    """What the adapter reads of a voice profile (profile.VoiceProfile, which imports this module)."""

    cache_key: str
    stats: Any  # analysis.VoiceStats
    class_map: Any  # classmap.ClassMap, or None

_LIMIT_KNEE = 0.9  # above this |sample| the limiter bends smoothly toward 1.0


class StreamingAdapter:
    """One request's adapter. Not thread-safe by design: create one per request (profile.streamer())."""

    def __init__(self, plan: AdaptPlan | None, sample_rate: int) -> None:
        self.sample_rate = int(sample_rate)
        self.plan = plan
        if plan is None:
            self._psola = None
            self._fir = None
            self._fir_u = None
            self._spec = None
        else:
            self._psola = PsolaStream(plan.pitch_map, plan.formant_ratio, self.sample_rate)
            self._fir = FirStream(plan.fir_voiced)
            self._fir_u = FirStream(plan.fir_unvoiced)
            self._spec = (
                SpectralFilterStream(plan.class_map, plan.class_scale, plan.class_gain, self.sample_rate)
                if plan.class_map is not None
                else None
            )
        self.samples_in = 0
        self.samples_out = 0

    @property
    def bypass(self) -> bool:
        """True when strength is 0 (or no voice): chunks come back unchanged, with no delay."""
        return self.plan is None

    @property
    def latency_samples(self) -> int:
        """Most samples process() can hold back before returning them (released by flush())."""
        if self._psola is None or self._fir is None:
            return 0
        spec = self._spec.latency_samples if self._spec is not None else 0
        return self._psola.latency_samples + self._fir.delay + spec

    @property
    def buffered_samples(self) -> int:
        """Samples held inside this adapter right now: bounded per stream."""
        if self._psola is None or self._fir is None:
            return 0
        return self._psola.buffered_samples + 2 * len(self._fir.fir)

    def process(self, chunk: np.ndarray) -> np.ndarray:
        """Adapt the next chunk (float mono); returns the samples that are final so far (float32)."""
        chunk = np.asarray(chunk).reshape(-1)
        self.samples_in += len(chunk)
        if self._psola is None or self._fir is None:
            out = chunk.astype(np.float32, copy=False)
        else:
            out = _soft_limit(self._classes(self._colour(self._psola.process(chunk))))
        self.samples_out += len(out)
        return out

    def flush(self) -> np.ndarray:
        """Return the held-back tail; after it, total output length equals total input length."""
        if self._psola is None or self._fir is None or self._fir_u is None:
            return np.zeros(0, dtype=np.float32)
        tail = self._colour(self._psola.flush())
        tail = np.concatenate([tail, self._fir.flush() + self._fir_u.flush()])
        if self._spec is not None:
            tail = np.concatenate([self._spec.process(tail), self._spec.flush()])
        out = _soft_limit(tail)
        self.samples_out += len(out)
        return out

    def _classes(self, x: np.ndarray) -> np.ndarray:
        return self._spec.process(x) if self._spec is not None else x

    def _colour(self, parts: np.ndarray) -> np.ndarray:
        """Timbre EQ: voiced and unvoiced grains each through their own FIR, summed."""
        assert self._fir is not None and self._fir_u is not None
        return self._fir.process(parts[0]) + self._fir_u.process(parts[1])


def run_adapter(audio: np.ndarray, plan: AdaptPlan | None, sample_rate: int) -> np.ndarray:
    """Whole-utterance adaptation: the streaming adapter fed one chunk."""
    audio = np.asarray(audio).reshape(-1)
    if plan is None:
        return audio.astype(np.float32, copy=True)
    adapter = StreamingAdapter(plan, sample_rate)
    return np.concatenate([adapter.process(audio), adapter.flush()])


def _soft_limit(x: np.ndarray) -> np.ndarray:
    """Per-sample soft clipper: identity below the knee, tanh above, never past 1.0 (chunk-independent)."""
    mag = np.abs(x)
    over = mag > _LIMIT_KNEE
    if not over.any():
        return x.astype(np.float32, copy=False)
    head = 1.0 - _LIMIT_KNEE
    y = x.astype(np.float32, copy=True)
    y[over] = np.sign(x[over]) * (_LIMIT_KNEE + head * np.tanh((mag[over] - _LIMIT_KNEE) / head))
    return y


def check_strength(strength: float) -> float:
    try:
        value = float(strength)
    except (TypeError, ValueError):
        raise VoiceError(f"voice strength must be a number between 0 and 1, not {strength!r}") from None
    if not 0.0 <= value <= 1.0:  # also refuses NaN
        raise VoiceError(f"voice strength must be between 0 and 1, not {strength!r}")
    return value


def streamer_for(profile: "ProfileLike | None", strength: float = 1.0, sample_rate: int = 22050) -> StreamingAdapter:
    """A fresh per-request adapter; strength 0 or no profile gives a pass-through one."""
    strength = check_strength(strength)
    if profile is None or strength == 0.0:
        return StreamingAdapter(None, sample_rate)
    plan = cached_plan(profile.cache_key, profile.stats, strength, int(sample_rate), profile.class_map)
    return StreamingAdapter(plan, sample_rate)


def adapt(audio_22k: np.ndarray, profile: "ProfileLike | None", strength: float = 1.0, sample_rate: int = 22050) -> np.ndarray:
    """Adapt a whole utterance toward ``profile``; same length out, bit-identical copy at strength 0."""
    return run_adapter(audio_22k, streamer_for(profile, strength, sample_rate).plan, sample_rate)
