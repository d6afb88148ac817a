"""Qwen3-TTS backend: batched prefill into a static KV cache, continuous batching, streaming codec decode.

Weights come from ``model_path``, $TTS_APP_QWEN3_PATH or the Hugging Face cache; nothing is
downloaded. Without them the constructor raises ``WeightsMissing`` with a one-line how-to,
and the rest of the app is unaffected (nothing heavy is imported until then).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Optional, Sequence

import numpy as np
import torch

from tts_app import captions as align
from tts_app.backends.base import Backend, RowEmitter, RowInput, StepEstimate, StepOutput
from tts_app.models.capabilities import QWEN3, QWEN3_LANGUAGES
from tts_app.models.qwen3.codec import CodecDecoder
from tts_app.models.qwen3.config import Qwen3TTSConfig
from tts_app.models.qwen3.generator import BatchedGenerator, RowState
from tts_app.models.qwen3.prompt import build_prompt
from tts_app.models.qwen3.sampling import SamplingParams
from tts_app.models.qwen3.speaker_encoder import SpeakerEncoder
from tts_app.models.qwen3.streaming import CodecWindows
from tts_app.models.qwen3.talker import Talker
from tts_app.models.qwen3.text_tokenizer import TextTokenizer
from tts_app.models.qwen3.weights import WeightsMissing, find_checkpoint, load_qwen3

logger = logging.getLogger(__name__)

__all__ = ["Qwen3Backend", "WeightsMissing"]


class Qwen3Backend(Backend):
    """The engine's view of Qwen3-TTS. One state per request (a ``RowState``); the backend holds only the model."""

    name = "qwen3"
    capabilities = QWEN3

    def __init__(
        self,
        config: Qwen3TTSConfig,
        talker: Talker,
        codec: CodecDecoder,
        tokenizer: TextTokenizer,
        speaker_encoder: Optional[SpeakerEncoder] = None,
        sampling: Optional[SamplingParams] = None,
        max_batch: int = 16,
        max_seq_len: int = 2048,
        frames_per_step: int = 4,
        codec_left_context: int = 25,
        use_cuda_graphs: Optional[bool] = None,
    ) -> None:
        self.config = config
        # A checkpoint reads the languages its table names (a fine-tune may name none): any other is
        # refused when asked for, not spoken in the model's own choice.
        table = config.talker_config.codec_language_id
        self.capabilities = dataclasses.replace(QWEN3, languages=tuple(code for code, name in QWEN3_LANGUAGES.items() if name in table))
        self.talker, self.codec, self.tokenizer, self.speaker_encoder = talker, codec, tokenizer, speaker_encoder
        self.sampling = sampling or SamplingParams()
        self.codec_left_context = codec_left_context
        self.sample_rate = codec.cfg.output_sample_rate
        self.generator = BatchedGenerator(
            talker, config.tts_pad_token_id, max_batch, max_seq_len, frames_per_step, use_cuda_graphs
        )
        # The same switch: on CUDA the codec's windows are bucketed and captured too.
        self.codec_windows = CodecWindows(codec, codec_left_context, frames_per_step, max_batch, use_cuda_graphs)
        self.capture_s = 0.0  # seconds the start-up capture took (capture_graphs)

    @classmethod
    def from_pretrained(
        cls,
        model_path: Optional[str] = None,
        device: Optional[str] = None,
        dtype: Optional[torch.dtype] = None,
        **kwargs: Any,
    ) -> "Qwen3Backend":
        """Load from ``model_path`` / $TTS_APP_QWEN3_PATH / the HF cache; raises ``WeightsMissing`` if absent."""
        path = find_checkpoint(model_path)
        dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        dt = dtype or (torch.bfloat16 if dev.type == "cuda" else torch.float32)
        m = load_qwen3(path, dev, dt)
        return cls(m.config, m.talker, m.codec, m.tokenizer, m.speaker_encoder, **kwargs)

    def capture_graphs(self) -> float:
        """On CUDA, capture the decode call of every batch and attention-length bucket the server will use, and
        the codec window of every batch bucket (before the engine serves: a capture must not run beside a
        decode); returns the seconds taken, 0 on CPU."""
        self.capture_s = self.generator.capture_all() + self.codec_windows.capture_all()
        return self.capture_s

    def slot_bytes(self) -> int:
        return self.generator.pool.slot_bytes

    @property
    def max_batch_size(self) -> int:
        return self.generator.max_batch

    @property
    def free_slots(self) -> int:
        return self.generator.free_slots

    def prepare(self, rows: Sequence[RowInput]) -> list[Any]:
        prompts, tails, params, seeds = [], [], [], []
        for row in rows:
            prompt, tail = build_prompt(
                self.talker, self.config, self.tokenizer.prompt_tokens(row.text), self._speaker_embedding(row.params.voice),
                self._language_id(row.params.language),
            )
            prompts.append(prompt)
            tails.append(tail)
            params.append(dataclasses.replace(self.sampling))
            seeds.append(row.params.seed)
        states = list(self.generator.prefill(prompts, tails, params, seeds))
        if align.enabled():
            for state, row in zip(states, rows):
                state.aligner = align.WordAligner(row.text, self.sample_rate)
        return states

    def step(self, states: Sequence[Any], emit: RowEmitter | None = None) -> list[StepOutput]:
        rows: list[RowState] = list(states)
        new = self.generator.decode(rows)
        audio = self.codec_windows.decode([s.codes for s in rows], [n.shape[0] for n in new])
        return [StepOutput(a, s.done, s.aligner.feed(a, s.done) if s.aligner is not None else ()) for a, s in zip(audio, rows)]

    def estimate_step(self, state: Any) -> StepEstimate:
        """Every step is ``frames_per_step`` codec frames (decoder steps, then one codec call) for any
        row: one cost key; the prior is a CPU's, learnt away after the first measured step."""
        return self.steady_estimate()

    def steady_estimate(self) -> StepEstimate:
        frames = self.generator.frames_per_step
        return StepEstimate(f"frames{frames}", frames * self.codec.samples_per_frame / self.sample_rate, 0.05 * frames)

    def calibration_text(self) -> Optional[str]:
        """On a GPU a step costs about the same for 1 row as for many: the engine measures batch sizes
        1..max at start (capturing their shapes too) instead of learning that one row at a time."""
        on_gpu = next(self.talker.parameters()).device.type == "cuda"
        return "The engine measures what a step costs at each batch size." if on_gpu else None

    def release(self, state: Any) -> None:
        self.generator.release(state)

    def _language_id(self, language: Optional[str]) -> Optional[int]:
        """The checkpoint's id for a requested language; None (the model's own choice) when none was asked.
        A language outside the table was refused before (``capabilities``)."""
        if language is None:
            return None
        return self.config.talker_config.codec_language_id[QWEN3_LANGUAGES[language]]

    def _speaker_embedding(self, voice: Any) -> Optional[torch.Tensor]:
        audio = getattr(voice, "reference_audio", None) if voice is not None else None
        if audio is None:
            return None
        if self.speaker_encoder is None:
            logger.warning("this checkpoint has no speaker encoder; ignoring the reference voice")
            return None
        rate = int(getattr(voice, "reference_sample_rate", self.speaker_encoder.cfg.sample_rate))
        return self.speaker_encoder.embed_audio(np.asarray(audio, dtype=np.float32), rate)
