"""Pocket TTS backend: voice cloning on a CPU, rows batched and streamed by the engine.

A request is spoken as the official code speaks it: its text cut into chunks of whole sentences
(at most 50 tokens each when it can), each chunk one generator row starting from the voice state
afresh; the request's next chunk takes the slot of the one that ended, inside the same step. A step
advances each of its rows by a few latents (``latents_per_step``; the window does not grow with the listener's
buffer: every latent reads all the flow LM's weights, so a step's cost grows with its latents, fixed part and all,
and a larger window saves nothing while it hides the per-step price admission plans with) and decodes
with Mimi the latents made before it, batched across rows per window size: the two run side by side, the flow
LM in one stage thread and Mimi in another (one intra-op thread each on two cores), so that a step costs the
longer of the two instead of their sum. A chunk's first latent (the flow head alone: the prefill left its hidden
state ready) is made before the stages start; a request starting to speak also makes the rest of its first audio
and the window after it there: its first audio is decoded and handed out at once, a latent at a time as each is
made or in one piece, as the engine's plan says (tts_app/engine/first_audio.py), the
window after it is decoded in the step and handed out at its end (else the first audio ran dry before the pipeline
handed out more), and the latents the flow LM makes beside that decode are the next step's audio. The audio is the
same as made one stage after the other: each row's noise is its own and the windows are the same. The first audio's
latents are decoded one at a time whatever the plan (the plan, made from timings, says only when they go out), so
the machine's load never changes a request's bits; batch mates and the GEMM route change only the rounding (within
1e-5: tests/unit/pocket_tts/test_pocket_tts_same_seed.py says why). The voice state of a clip is computed once and cached by the clip's
content hash, per visitor, ahead of the step loop: in the submitting thread (``prepare_params``; the engine's loop,
which every stream waits on, then finds it ready), or earlier still when the page got the clip (``prepare_voice``,
at most one such build per visitor at a time). Builds run one at a time in the process, in their own worker thread
at a lower priority than the streams' stages (two at once on two cores only slowed both and the streams beside them). A checkpoint's saved voices (``voices/`` or ``embeddings/*.safetensors``) are its
built-in ones. A request's latents over all its chunks are capped by ``max_seconds`` (the server's
$TTS_APP_MAX_SECONDS): a model whose end of speech never comes stops there, as Qwen3-TTS's max_new_tokens does.
Weights come from ``model_path``, $TTS_APP_POCKET_TTS_PATH or the Hugging Face cache;
nothing is downloaded.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np
import torch

from tts_app import captions as align
from tts_app import settings
from tts_app.audio.loudness import LevelKeeper
from tts_app.backends.model_voice import ModelVoice
from tts_app.backends.base import Backend, FirstAudioPlan, RowEmitter, RowInput, StepEstimate, StepOutput
from tts_app.models.capabilities import NO_CLONING, NO_CLONING_FIX, POCKET_TTS, pocket_capabilities
from tts_app.models.layers import small_gemm
from tts_app.models.layers.stage_thread import StageThread
from tts_app.models.layers.visitor_cache import VisitorCache
from tts_app.models.piper.precision import decoder_kind, precision_from_env
from tts_app.models.pocket_tts.generator import PocketGenerator, Row, seeded_noise
from tts_app.models.pocket_tts.text import max_frames, prepare, split_chunks
from tts_app.models.pocket_tts.voice import VoiceState, load_voice_file, voice_state
from tts_app.models.pocket_tts.voice_files import saved_voice_files
from tts_app.models.pocket_tts.weights import LoadedPocket, WeightsMissing, load_pocket
from tts_app.text.errors import TextError

logger = logging.getLogger(__name__)

__all__ = ["PocketBackend", "WeightsMissing"]

MAX_CHUNK_TOKENS = 200  # with a 30 s clip's prompt (378 positions) a chunk still has 446 latents (36 s) of room
# A request's first audio, in latents (80 ms each): what a player started at it holds until the step's end hands out
# the next window. Handed out in one piece, a larger first audio came later and a smaller one ran dry, by about as
# much (2 cores, 2026-11-28, one stream / 6 at 0.75 of capacity: 1 latent 68 / 157-175 ms and stalls of 0.3 / 1.3 %,
# 2 latents 93 / 220-230 ms and 0 / 0.5 %, 3 latents 118-141 / 293-298 ms and none). A lone stream's is now handed
# out a latent at a time where that keeps up (first_audio.py): 3 latents still, from 69-82 ms, no stall.
FIRST_LATENTS = 3
# Every request's audio at one active-speech level, peaks under -1 dBFS (tts_app.audio.loudness); the parity tests
# with the official code and benchmarks/loudness_lovo.py turn it off to compare the model's own output.
LEVELLED = True
# A visitor's clips' voice states kept (the 4 most recent, at most 64 MB), all visitors' at most 256 MB: a 10 s clip's
# state is about 6 MB at the released size, and computing it again costs its Mimi encode and prompt.
VOICE_ENTRIES, VOICE_VISITOR_MB, VOICE_TOTAL_MB = 4, 64, 256
VOICE_NICE = 10  # the voice-state worker's priority below the streams' (Linux nice; 10: about a tenth of a busy core)


@dataclass
class Chunk:
    ids: list[int]
    frames_after_eos: int


@dataclass(eq=False)
class PocketState:
    """One request: its chunks, its voice, the row speaking the current chunk."""

    chunks: list[Chunk]
    voice: VoiceState
    seed: int
    row: Optional[Row] = None
    draining: Optional[Row] = None  # an ended chunk whose last latents the next step decodes (its flow slot is free)
    next_chunk: int = 0
    done: bool = False
    aligner: Any = None
    audio_s: float = 0.0
    latents_left: int = 0  # what the request's cap leaves for its chunks not yet started
    level: Optional[LevelKeeper] = None  # its audio at the take's one level (tts_app.audio.loudness)


class PocketBackend(Backend):
    name = "pocket-tts"
    capabilities = POCKET_TTS

    def __init__(self, model: LoadedPocket, max_batch: int = 8, max_len: int = 1024, latents_per_step: int = 2,
                 max_seconds: float = 0.0, stage_threads: int = 0, first_latents: int = FIRST_LATENTS) -> None:
        """``max_seconds`` > 0 caps each request's audio (all its chunks together); 0 leaves the per-chunk caps only.
        ``stage_threads``: intra-op threads of each of the two stages (flow LM, Mimi); 0: half the process's.
        ``first_latents``: latents in a request's first audio (see FIRST_LATENTS)."""
        self.model = model
        if model.device.type == "cpu":  # a decode step's few-row products: the faster library on this CPU
            small_gemm.calibrate(settings.value("TTS_APP_SMALL_GEMM") or "auto")
        # One checkpoint reads one language: the API refuses another (``language``) before queueing.
        self.capabilities = pocket_capabilities(model.variant.code, model.cloning)
        self.sample_rate = model.config.mimi.sample_rate
        self.samples_per_latent = model.config.mimi.samples_per_latent
        self.latents_per_step = latents_per_step
        self.first_latents = max(1, first_latents)
        # At least one latent, so that a request always gets a first chunk started; rounded first so that a
        # whole number of latents given in seconds (17.44 s x 12.5 = 218.00000000000003) is not one more.
        latents = math.ceil(round(max_seconds * model.config.mimi.frame_rate, 6))
        self.max_latents = max(1, latents) if max_seconds > 0 else 0
        self.generator = PocketGenerator(model, max_batch, max_len)
        self.max_len = max_len
        # A clip's voice state (about 6 MB for a 10 s clip at the released size), per visitor: bounded, and never
        # another visitor's (tts_app.models.layers.visitor_cache).
        self.voices: VisitorCache[VoiceState] = VisitorCache(VoiceState.nbytes, entries=VOICE_ENTRIES,
                                                             visitor_bytes=VOICE_VISITOR_MB << 20, total_bytes=VOICE_TOTAL_MB << 20)
        self._own_voice: Optional[VoiceState] = None  # the BOS-only prompt, when the checkpoint has no saved voice
        self.builtin = self._builtin_voices(model.path)
        threads = stage_threads or max(1, torch.get_num_threads() // 2)
        self.lm, self.mimi = StageThread("pocket-flow-lm", threads), StageThread("pocket-mimi", threads)
        # Clips' voice states, one at a time, with all the process's threads but behind the streams' stages: a new
        # clip arriving while others listen no longer took the cores their audio needed (benchmarks/pocket_tts_new_clip.py).
        self.voice_worker = StageThread("pocket-voice", torch.get_num_threads(), nice=VOICE_NICE)

    @classmethod
    def from_pretrained(cls, model_path: Optional[str] = None, **kwargs: Any) -> "PocketBackend":
        from tts_app.models.available import find_pocket_checkpoint  # the catalogue: only to find the folder

        path = find_pocket_checkpoint(model_path)
        return cls(load_pocket(path, torch.device("cpu")), **kwargs)

    def slot_bytes(self) -> int:
        return self.generator.pool.slot_bytes + 2 * self.generator.mimi_pool.slot_bytes  # a request may hold two rows (a chunk draining)

    @property
    def max_batch_size(self) -> int:
        return self.generator.pool.capacity

    @property
    def free_slots(self) -> int:
        return self.generator.free_slots

    @property
    def voice_names(self) -> list[str]:
        return sorted(self.builtin)

    # ------------------------------------------------------------------ the engine's calls
    def check_text(self, text: str, params: Any = None) -> Any:
        """The official chunks and their token ids; one-line errors for text it cannot speak."""
        text = super().check_text(text, params)
        m = self.model
        chunks = []
        for c in split_chunks(text, m.tokenizer, m.rules):
            prepared, guess = prepare(c, m.rules)
            ids = m.tokenizer.encode(prepared)
            after = m.config.frames_after_eos if m.config.frames_after_eos is not None else guess + 2
            # A "sentence" the official cut leaves longer than any real one (no punctuation, say) is cut by
            # count, so that every chunk fits a slot beside the longest voice prompt.
            chunks += [Chunk(ids[i:i + MAX_CHUNK_TOKENS], after) for i in range(0, len(ids), MAX_CHUNK_TOKENS)]
        if not chunks:
            raise TextError("the text has nothing this model can read")
        return chunks

    def prepare(self, rows: Sequence[RowInput]) -> list[Any]:
        states = []
        for row in rows:
            chunks = row.parsed if isinstance(row.parsed, list) else self.check_text(row.text)
            state = PocketState(chunks, self._voice(row.params.voice, row.params.client), int(row.params.seed),
                                latents_left=self.max_latents,
                                level=LevelKeeper(self.sample_rate) if LEVELLED else None)
            if align.enabled() and self.capabilities.word_timings == "aligned":
                state.aligner = align.WordAligner(row.text, self.sample_rate)
            states.append(state)
        self._start_chunks(states)
        return states

    def first_audio_shape(self) -> tuple[int, float]:
        return self.first_latents, self.samples_per_latent / self.sample_rate

    def step(self, states: Sequence[Any], emit: RowEmitter | None = None, plan: Optional[FirstAudioPlan] = None) -> list[StepOutput]:
        """``plan``: how the first audio of requests starting to speak goes out (the engine's; None: all at the end)."""
        rows: list[PocketState] = [s for s in states]
        fresh = [s for s in rows if s.row is not None and s.row.step == 0 and not s.row.done]
        early: dict[int, StepOutput] = {}
        if fresh:
            # Every chunk's first latent: the flow head alone (the prefill left its hidden state ready). A request
            # starting to speak makes its first audio's latents, handed out as they are decoded (a latent at a time
            # or whole: ``plan_first_audio``), then the window after them, which
            # the pipeline below decodes: without it the pipeline would hand out nothing more of the row until the
            # next step's end, and the first audio ran dry before that (a later chunk's listener holds plenty).
            # Both stages are idle here, so this runs in the engine's thread with the process's intra-op threads
            # (a stage's one thread made first audio 2x slower).
            starting = [s for s in fresh if self._starts(s)]
            self._make([s.row for s in fresh], 1)
            if plan is None:  # no engine's plan: a latent at a time (each alone, as the official code), handed out at the end
                plan = FirstAudioPlan((len(starting), len(rows)), time.perf_counter, each=True, hold=self.first_latents - 1)
            early = self._first_audio(rows, starting, emit, plan)
            self._make([s.row for s in starting], self.latents_per_step)
        # What Mimi decodes now: an ended chunk's last latents, then the current chunk's latents made so far; the
        # latents the flow LM makes meanwhile are the next step's.
        parts = [(s, r) for s in rows for r in (s.draining, s.row) if r is not None]
        ends = [len(r.latents) for _, r in parts]
        decoding = self.mimi.submit(self.generator.decode, [r for _, r in parts], ends)
        try:
            self.lm.run(self._make_latents, rows)
        finally:  # never leave Mimi running past the step, even when the flow LM failed
            decoded = decoding.result()
        audio: dict[int, list[torch.Tensor]] = {}
        for (s, _), a in zip(parts, decoded):
            audio.setdefault(id(s), []).append(a)
        restart = [s for s in rows if self._end_chunk(s)]
        if restart:
            self._start_chunks(restart)
        outputs = []
        for s in rows:
            s.done = s.row is None and s.draining is None
            a = _levelled(s, torch.cat(audio[id(s)]).float().cpu().numpy()) if id(s) in audio else np.zeros(0, dtype=np.float32)
            s.audio_s += a.size / self.sample_rate
            words = s.aligner.feed(a, s.done) if s.aligner is not None else ()
            out = StepOutput(a, s.done, words)
            first = early.get(id(s))
            if first is not None and emit is None:  # not handed out yet: the step's audio begins with it
                out = _joined([first, out])
            outputs.append(out)
        return outputs

    def _make(self, rows: list[Row], latents: int) -> None:
        """``latents`` more for each of ``rows``, one generator step each (a row that ends leaves the rest)."""
        for _ in range(latents):
            self.generator.step([r for r in rows if not r.done])

    @staticmethod
    def _starts(state: PocketState) -> bool:
        """True for a request whose first chunk has not spoken yet (its first audio is still to come)."""
        return state.audio_s == 0 and state.draining is None and state.row is not None and state.row.decoded == 0

    def _first_audio(self, rows: list[PocketState], starting: list[PocketState], emit: RowEmitter | None,
                     plan: FirstAudioPlan) -> dict[int, StepOutput]:
        """The first ``first_latents`` latents of requests ``starting`` to speak, made and decoded before the pipeline
        runs (the engine's thread, all its intra-op threads) and handed out through ``emit`` as ``plan`` says: decoded
        a latent at a time or at once, handed out from latent ``plan.hold`` on. Returns each request's first audio
        whole (the step's audio begins with it when there is no ``emit``); ``plan`` gets what it took."""
        index = {id(s): i for i, s in enumerate(rows)}
        made: dict[int, list[StepOutput]] = {}
        held: dict[int, list[StepOutput]] = {}
        last = self.first_latents - 1
        decoding_s = 0.0
        for n in range(self.first_latents):
            if n:
                t = plan.clock()
                self._make([s.row for s in starting], 1)
                plan.flow_s = plan.clock() - t
            # Every latent is decoded as it is made, whatever the plan: the plan (made from timings, so from the
            # machine's load) says only when the audio goes out. Mimi's streaming decode of the same latents in
            # windows cut otherwise gives other float sums (about 1e-7), which 16-bit samples turn into other bits:
            # two requests of one seed differed so under load.
            live = [s for s in starting if not s.row.done]  # a row that ended leaves its last latents to the pipeline
            if live:
                t = plan.clock()
                for s, a in zip(live, self.generator.decode([s.row for s in live])):
                    audio = _levelled(s, a.float().cpu().numpy())
                    s.audio_s += audio.size / self.sample_rate
                    out = StepOutput(audio, False, s.aligner.feed(audio, False) if s.aligner is not None else ())
                    made.setdefault(id(s), []).append(out)
                    held.setdefault(id(s), []).append(out)
                took = plan.clock() - t
                decoding_s += took
                if plan.each:
                    plan.decode_one_s = took
                elif n == last:
                    plan.decode_all_s = decoding_s  # the whole first audio's decode, as the plan prices it
            if held and (not live or plan.hands_out(n, last)):
                if emit is not None:
                    for s in starting:
                        if id(s) in held:
                            emit(index[id(s)], _joined(held[id(s)]))
                held.clear()
                plan.ended_at = plan.clock()
            if not live:
                break
        return {key: _joined(outs) for key, outs in made.items()}

    def estimate_step(self, state: Any) -> StepEstimate:
        made, heard = self._plan(state)
        return self._estimate(made, heard)

    def steady_estimate(self) -> StepEstimate:
        return self._estimate(self.latents_per_step, self.latents_per_step)

    def remaining_audio_s(self, state: Any) -> float:
        """Audio still to come: latents made but not yet heard, the current chunk's latents still to make (the official
        guess of 3 tokens a second; past it, up to the chunk's cap: the cautious reading for admission, which counts
        on a stream's end), and the later chunks' guesses."""
        fr = self.model.config.mimi.frame_rate
        latents = sum(len(r.latents) - r.decoded for r in (state.draining, state.row) if r is not None)
        row = state.row
        if row is not None and not row.done:
            latents += self._latents_to_come(row, fr)
        later = sum(len(c.ids) for c in state.chunks[state.next_chunk:]) / 3.0 * fr
        if self.max_latents:
            later = min(later, max(0, state.latents_left - (len(row.latents) if row is not None else 0)))
        return (latents + later) / fr

    @staticmethod
    def _latents_to_come(row: Row, frame_rate: float) -> int:
        made = len(row.latents)
        if row.eos_step is not None:  # speech ended: the official tail after it
            return max(0, row.eos_step + row.frames_after_eos - row.step)
        guess = row.max_frames - round(2.0 * frame_rate)  # max_frames: the guess plus 2 s
        return max(0, (guess if made < guess else row.max_frames) - made)

    def calibration_text(self) -> Optional[str]:
        """A step reads every flow-LM weight once whatever its rows (8 rows cost about 2.7x one row on 2 cores, not
        8x): the engine measures batch sizes 1..max at start, so admission prices a stream by the batched step."""
        return "The engine measures what a step costs at each batch size."

    def release(self, state: Any) -> None:
        for row in (state.draining, state.row):
            if row is not None:
                self.generator.release(row)
        state.draining = state.row = None

    # ------------------------------------------------------------------ helpers
    def _ahead(self, state: PocketState) -> int:
        """Latents the flow LM makes for the row beside this step's decode (its first latent not counted)."""
        return 0 if state.row is None or state.row.done else self.latents_per_step

    def _plan(self, state: PocketState) -> tuple[int, int]:
        """(latents the flow LM makes, latents Mimi decodes) in the row's next step."""
        last = state.draining
        heard = len(last.latents) - last.decoded if last is not None else 0
        row = state.row
        if row is None:
            return 0, heard
        if row.step == 0 and not row.done:
            # A chunk's first latent at once; a request's first audio and the window after it, when it starts to speak.
            first = min(self.first_latents + self.latents_per_step, row.max_frames) if self._starts(state) else 1
            return first + self._ahead(state), first + heard
        return self._ahead(state), heard + len(row.latents) - row.decoded

    def _estimate(self, made: int, heard: int) -> StepEstimate:
        # The two stages overlap: a step costs the longer one (one row on one core: ~28 ms a latent of flow LM,
        # ~10 ms a latent of Mimi). A row whose flow LM is done only decodes its last latents.
        key = f"latents{made}" if made else f"decode{heard}"
        return StepEstimate(key, heard * self.samples_per_latent / self.sample_rate, max(0.03 * made, 0.01 * heard))

    def _make_latents(self, rows: list[PocketState]) -> None:
        """Each live row's latents of this step, in the flow-LM stage (a row that ends leaves the batch early)."""
        self._make([s.row for s in rows if self._ahead(s)], self.latents_per_step)

    def _end_chunk(self, s: PocketState) -> bool:
        """After a step: free a decoded ended chunk; a chunk the flow LM ended waits for its last decode. True when
        the request's next chunk starts now (into the flow slot just freed, beside the last decode)."""
        if s.draining is not None:
            self.generator.release(s.draining)
            s.draining = None
        row = s.row
        if row is None or not row.done:
            return False
        s.latents_left -= len(row.latents)
        s.row = None
        if row.decoded < len(row.latents):
            s.draining = row
        else:
            self.generator.release(row)
        return s.next_chunk < len(s.chunks) and (not self.max_latents or s.latents_left > 0)

    def _start_chunks(self, states: list[PocketState]) -> None:
        """Prefill each state's next chunk into a free slot (one ragged call)."""
        dim, temp = self.generator.ldim, self.model.config.temperature
        voices, ids, caps, after, noise = [], [], [], [], []
        for s in states:
            chunk = s.chunks[s.next_chunk]
            room = self.max_len - s.voice.length - len(chunk.ids)
            if room < 1:
                raise TextError(f"a sentence of {len(chunk.ids)} tokens is too long for this model's cache")
            voices.append(s.voice)
            ids.append(chunk.ids)
            cap = min(max_frames(len(chunk.ids), self.model.config.mimi.frame_rate), room)
            caps.append(min(cap, s.latents_left) if self.max_latents else cap)
            after.append(chunk.frames_after_eos)
            # Each chunk's noise comes from the request's seed and the chunk's index: a row speaks alike alone or batched.
            noise.append(seeded_noise(s.seed * 1009 + s.next_chunk, dim, temp))
        # Between stage runs (prepare, or a step's end): the engine's thread and all its intra-op threads (first audio).
        for s, row in zip(states, self.generator.prefill(voices, ids, caps, after, noise)):
            s.row = row
            s.next_chunk += 1

    def _voice(self, voice: Any, client: Optional[str] = None) -> VoiceState:
        if isinstance(voice, ModelVoice):
            if voice.name not in self.builtin:  # the API checks the name first; a voice file that failed to load
                raise TextError(f"this model has no saved voice {voice.name[:64]!r}; it has: {', '.join(self.voice_names) or 'none'}")
            return self.builtin[voice.name]
        audio = getattr(voice, "reference_audio", None) if voice is not None else None
        if audio is None:
            return self._default_voice()
        if not self.model.cloning:  # the engine's capability check refuses it first; never another voice for a clip
            raise TextError(f"this model does not take a voice clip ({NO_CLONING}: {NO_CLONING_FIX})")
        key, build = self._clip_state(voice)
        return self.voices.get(client, key, build)

    def prepare_params(self, params: Any, ahead: bool = False) -> None:
        """A clip's voice state into the visitor's cache, in the submitting thread (the engine's hook) or, ``ahead``,
        when the page got the clip."""
        self.prepare_voice(params.voice, params.client, ahead)

    def prepare_voice(self, voice: Any, client: Optional[str] = None, ahead: bool = False) -> bool:
        """Compute a clip's voice state for ``client`` now, in the caller's thread, unless it is cached; a build of the
        same clip under way (the page's, say) is waited for. ``ahead`` (the page, when it got the clip, before any
        Generate): skipped while one of the visitor's builds is under way, so that a visitor uploading clip after clip
        holds one build at a time; the Generate then builds what it needs. True when the state is ready. A voice that
        is no clip (a saved voice, the model's own) needs nothing; one this model cannot take is left to ``prepare``,
        which refuses it in one line."""
        if getattr(voice, "reference_audio", None) is None or not self.model.cloning:
            return False
        key, build = self._clip_state(voice)
        if ahead and self.voices.peek(client, key) is None and self.voices.building(client):
            return False
        self.voices.get(client, key, build)
        return True

    def _clip_state(self, voice: Any) -> tuple[str, Callable[[], VoiceState]]:
        """(the cache key of a clip, a build of its voice state, one build at a time in the process)."""
        rate = int(getattr(voice, "reference_sample_rate"))
        samples = np.asarray(voice.reference_audio, dtype=np.float32).reshape(-1)
        key = f"{getattr(voice, 'content_hash', '')}:{rate}:{samples.size}" if getattr(voice, "content_hash", "") else str(hash(samples.tobytes()))
        bf16 = self.model.device.type == "cpu" and decoder_kind(precision_from_env()) == "bf16"  # $TTS_APP_PRECISION fast

        def build() -> VoiceState:
            return self.voice_worker.run(voice_state, self.model, torch.from_numpy(samples.copy())[None], rate, bf16)
        return f"{key}:bf16" if bf16 else key, build

    def _default_voice(self) -> VoiceState:
        default = self.model.variant.default_voice  # the official default of the language, when the checkpoint has it
        if default in self.builtin:
            return self.builtin[default]
        if self.builtin:
            return self.builtin[sorted(self.builtin)[0]]
        # No saved voice: the prompt is the BOS before the voice alone (the model's voice without a clip).
        if self._own_voice is None:
            self._own_voice = VoiceState(tuple(
                (k.contiguous(), v.contiguous()) for k, v in self.model.flow_lm.voice_kv(self.model.flow_lm.voice_prompt(
                    torch.zeros(0, self.model.config.mimi.inner_dim or self.model.config.mimi.latent_dim)))))
        return self._own_voice

    def _builtin_voices(self, folder: Path) -> dict[str, VoiceState]:
        found = {}
        for name, f in saved_voice_files(folder).items():
            try:
                found[name] = load_voice_file(f, self.model.config.flow_lm.num_layers)
            except (ValueError, KeyError, OSError) as e:
                logger.warning("skipping voice %s: %s", f.name, e)
        return found

    def audio_estimate_s(self, parsed: Any) -> float:
        guess = sum(len(c.ids) for c in parsed) / 3.0 if isinstance(parsed, list) else super().audio_estimate_s(parsed)
        # The official estimate is 3 tokens a second; no request outlasts its cap (queue ETAs and prices use this).
        return min(guess, self.max_latents / self.model.config.mimi.frame_rate) if self.max_latents else guess


def _levelled(state: PocketState, audio: np.ndarray) -> np.ndarray:
    return state.level.process(audio) if state.level is not None else audio


def _joined(outs: list[StepOutput]) -> StepOutput:
    """Consecutive pieces of one row's audio as one output (done as the last piece says)."""
    if len(outs) == 1:
        return outs[0]
    return StepOutput(np.concatenate([o.audio for o in outs]), outs[-1].done, tuple(w for o in outs for w in o.words))
