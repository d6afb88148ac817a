"""Chatterbox backend: T3 rows advance together in one KV-cached batch; rows whose tokens are ready for
audio go through one ragged S3Gen flow pass per step, then the vocoder, and stream out chunk by chunk.

Weights come from ``model_path``, $TTS_APP_CHATTERBOX_PATH or the Hugging Face cache; the model code from
the official chatterbox-tts package (scripts/install_chatterbox.sh). Without either, the constructor
raises ``WeightsMissing`` / ``ChatterboxMissing`` with a one-line how-to; nothing heavy is imported before.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
import torch

from tts_app.backends.base import Backend, RowEmitter, RowInput, StepEstimate, StepOutput
from tts_app.models.capabilities import CHATTERBOX
from tts_app.models.chatterbox import s3gen_batch
from tts_app.models.chatterbox.config import ChatterboxSampling
from tts_app.models.chatterbox.flow_graph import FlowSolver
from tts_app.models.chatterbox.official import ChatterboxMissing, official
from tts_app.models.chatterbox.streaming import ChunkPlan, RowStream, join, window_noise
from tts_app.models.chatterbox.t3_generator import T3Generator, T3Prompt, T3Row
from tts_app.models.chatterbox.voice import VoiceCache, VoiceConds, conditionals, with_exaggeration
from tts_app.models.chatterbox.weights import LoadedChatterbox, WeightsMissing, find_checkpoint, load_chatterbox
from tts_app.text.errors import TextError

S3_TOKENS_PER_S = 25  # Chatterbox's speech tokens: 25 a second of audio

logger = logging.getLogger(__name__)

__all__ = ["ChatterboxBackend", "WeightsMissing", "ChatterboxMissing"]


@dataclass(eq=False)
class ChatterboxState:
    """One request between steps."""

    t3: T3Row
    voice: VoiceConds
    generator: torch.Generator  # S3Gen's random stream (starting noise, vocoder source), seeded per request
    stream: RowStream
    speech: list[int] = dataclasses.field(default_factory=list)  # the row's speech tokens so far (< 6561)
    done: bool = False


class ChatterboxBackend(Backend):
    name = "chatterbox"
    capabilities = CHATTERBOX
    sample_rate = s3gen_batch.SAMPLE_RATE
    # About 30 s of speech; with its prompt (at most 656 positions) a line then leaves T3's 1536-position cache
    # room for 880 speech tokens (35 s), so a line's audio is not cut by the cache.
    max_text_chars = 500

    def __init__(
        self,
        model: LoadedChatterbox,
        sampling: Optional[ChatterboxSampling] = None,
        plan: Optional[ChunkPlan] = None,
        max_batch: int = 4,
        max_seq_len: int = 1536,
        tokens_per_step: int = 4,
        use_cuda_graphs: Optional[bool] = None,
    ) -> None:
        self.model = model
        self.sampling = sampling or ChatterboxSampling()
        self.plan = plan or ChunkPlan()
        self.tokens_per_step = tokens_per_step
        self.prompt = T3Prompt(model.t3, model.tokens)
        # The Qwen3 generator's switch (None: on CUDA only): T3's decode call and S3Gen's flow solve are bucketed and captured.
        self.generator = T3Generator(model.t3, model.backbone, model.tokens, max_batch, max_seq_len, use_cuda_graphs)
        self.flow_solver = FlowSolver(model.s3gen, max_batch, use_cuda_graphs=use_cuda_graphs)
        self.voices = VoiceCache()
        self._punc_norm = official("tts").punc_norm

    @classmethod
    def from_pretrained(cls, model_path: Optional[str] = None, device: Optional[str] = None, **kwargs: Any) -> "ChatterboxBackend":
        """Load from ``model_path`` / $TTS_APP_CHATTERBOX_PATH / the HF cache; one-line errors when weights or code are missing."""
        path = find_checkpoint(model_path)
        dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        return cls(load_chatterbox(path, dev), **kwargs)

    def slot_bytes(self) -> int:
        return self.generator.pool.slot_bytes

    def capture_graphs(self) -> float:
        """On CUDA, capture T3's decode call for every batch and attention-length bucket and the flow solve for
        every batch and frames bucket (before the engine serves: a capture must not run beside a decode);
        returns the seconds taken, 0 on CPU."""
        return self.generator.capture_all(self.tokens_per_step) + self.flow_solver.capture_all()

    @property
    def max_batch_size(self) -> int:
        return self.generator.max_batch

    @property
    def emits_rows(self) -> bool:
        return True

    def check_text(self, text: str, params: Any = None) -> Any:
        """The official normalisation and tokenizer; one-line errors for text it cannot read."""
        text = super().check_text(text, params)
        if not any(c.isascii() and c.isalnum() for c in text):
            raise TextError("the text has no English letters or digits (this Chatterbox model reads English)")
        return self.model.tokenizer.text_to_tokens(self._punc_norm(text))[0]

    # ------------------------------------------------------------------ the engine's calls
    def prepare(self, rows: Sequence[RowInput]) -> list[Any]:
        params = [dataclasses.replace(self.sampling) for _ in rows]
        voices = [with_exaggeration(self._voice(row.params.voice), p.exaggeration) for row, p in zip(rows, params)]
        prompts = []
        for row, voice, p in zip(rows, voices, params):
            ids = row.parsed if isinstance(row.parsed, torch.Tensor) else self.check_text(row.text)
            prompts.append(self.prompt.rows(self.prompt.cond_embeds(voice.t3), ids, p.cfg_weight))
        t3_rows = self.generator.prefill(prompts, params, [row.params.seed for row in rows])
        states = []
        for row, voice, t3_row in zip(rows, voices, t3_rows):
            gen = torch.Generator().manual_seed(int(row.params.seed))
            stream = RowStream()
            if self.plan.streaming:
                stream.noise_bank = s3gen_batch.starting_noise(voice.gen, t3_row.max_new, gen)
            state = ChatterboxState(t3_row, voice, gen, stream)
            self._take_tokens(state, t3_row.tokens)
            states.append(state)
        return states

    def step(self, states: Sequence[Any], emit: RowEmitter | None = None) -> list[StepOutput]:
        rows: list[ChatterboxState] = list(states)
        generating = [s for s in rows if not s.t3.done]
        if generating:
            for s, new in zip(generating, self.generator.decode([s.t3 for s in generating], self.tokens_per_step)):
                self._take_tokens(s, new)
        ready = []
        for s in rows:
            upto = None if s.done else self.plan.emit_upto(s.stream.done_tokens, len(s.speech), s.t3.done)
            if upto is not None:
                ready.append((s, upto))
        audio = dict(zip((id(s) for s, _ in ready), self._render(ready))) if ready else {}
        outputs = []
        for i, s in enumerate(rows):
            out = StepOutput(audio=audio.get(id(s), np.zeros(0, dtype=np.float32)), done=s.done)
            if emit is not None and id(s) in audio:
                emit(i, out)
            outputs.append(out)
        return outputs

    def estimate_step(self, state: Any) -> StepEstimate:
        """``tokens_per_step`` speech tokens (25 a second of audio) while T3 generates; its audio comes
        out a chunk at a time, so a step is costed as its share of that. Once T3 is done, the steps
        left render what remains (no generation): costed apart."""
        if state.t3.done:
            return StepEstimate("render", self.tokens_per_step / S3_TOKENS_PER_S, 0.1)
        return self.steady_estimate()

    def steady_estimate(self) -> StepEstimate:
        return StepEstimate(f"tokens{self.tokens_per_step}", self.tokens_per_step / S3_TOKENS_PER_S, 0.05 * self.tokens_per_step)

    def calibration_text(self) -> Optional[str]:
        """On a GPU a step costs about the same for 1 row as for many: the engine measures batch sizes
        1..max at start (capturing their shapes too) instead of learning that one row at a time."""
        on_gpu = next(self.model.t3.parameters()).device.type == "cuda"
        return "The engine measures what a step costs at each batch size." if on_gpu else None

    def release(self, state: Any) -> None:
        self.generator.release(state.t3)

    # ------------------------------------------------------------------ helpers
    def _take_tokens(self, state: ChatterboxState, new: Sequence[int]) -> None:
        state.speech.extend(t for t in new if self.model.tokens.is_speech(t))
        if state.t3.done:
            self.generator.release(state.t3)  # its KV slot is free for a queued request at once

    def _render(self, ready: list[tuple[ChatterboxState, int]]) -> list[np.ndarray]:
        """One flow pass over every ready row's window, then each row's vocoder call and join."""
        plan, s3gen = self.plan, self.model.s3gen
        flow_rows, spans = [], []
        for s, upto in ready:
            final = s.t3.done and upto == len(s.speech)
            if not s.speech:
                flow_rows.append(None)
                spans.append((0, 0, final))
                continue
            start = plan.window_start(s.stream.done_tokens) if plan.streaming else 0
            end = len(s.speech)
            tokens = torch.tensor(s.speech[start:end], dtype=torch.long)
            if plan.streaming:
                two_lp = s3gen_batch.mel_frames(s.voice.gen, 0)
                noise = window_noise(s.stream.noise_bank, two_lp, start, end)
            else:
                noise = s3gen_batch.starting_noise(s.voice.gen, end - start, s.generator)
            flow_rows.append(s3gen_batch.FlowRow(tokens, s.voice.gen, noise))
            spans.append((start, upto, final))
        live = [r for r in flow_rows if r is not None]
        mels = iter(s3gen_batch.flow_mels(s3gen, live, solver=self.flow_solver)) if live else iter(())
        out = []
        for (s, upto), row, (start, _, final) in zip(ready, flow_rows, spans):
            if row is None:  # T3 ended without a single speech token
                s.done = s.stream.finished = True
                out.append(np.zeros(0, dtype=np.float32))
                continue
            mel = next(mels)
            shift = row.prompt_frames - s3gen_batch.mel_frames(row.ref, 0)  # frames the official cut drops at the front
            a, b = max(0, 2 * (s.stream.done_tokens - start) - shift), max(0, 2 * (upto - start) - shift)
            new_mel = mel[:, a:b]
            tail = s.stream.mel_tail if s.stream.mel_tail is not None else new_mel[:, :0]
            wav = s3gen_batch.vocode(s3gen, torch.cat([tail, new_mel], dim=1), s.generator, fade_in=s.stream.done_tokens == 0)
            samples = join(s.stream, wav.float().cpu().numpy(), tail.shape[1] * s3gen_batch.SAMPLES_PER_FRAME,
                           plan.crossfade_samples, final)
            s.stream.mel_tail = torch.cat([tail, new_mel], dim=1)[:, -plan.vocoder_context_frames:] if plan.vocoder_context_frames else None
            s.stream.done_tokens = upto
            s.done = s.stream.finished = final
            out.append(samples)
        return out

    def _voice(self, voice: Any) -> VoiceConds:
        audio = getattr(voice, "reference_audio", None) if voice is not None else None
        if audio is None:
            return VoiceConds(self.model.builtin.t3, self.model.builtin.gen)
        rate = int(getattr(voice, "reference_sample_rate"))
        key = str(getattr(voice, "content_hash", "")) or str(hash(np.asarray(audio).tobytes()))
        return self.voices.get(key, lambda: conditionals(self.model, audio, rate, self.sampling.exaggeration))
