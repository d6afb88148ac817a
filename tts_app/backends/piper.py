"""The embedded voice as an engine backend: text stage on admission (its flow window by window), one decoder window per step."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from tts_app.models.piper.config import SPEED_MAX, SPEED_MIN
from tts_app.models.available import EMBEDDED_ID
from tts_app.models.piper import FIRST_WINDOW_FRAMES, FLOW_REACH, WINDOW_FRAMES, DecoderStream, LatentRequest, PiperVits, Window, plan_windows
from tts_app.text import TextError, TextOptions, prepare_text, to_ids, word_id_spans
from tts_app.text.cost import check_audio_length, max_pause_s
from tts_app.backends.base import Backend, RowEmitter, RowInput, StepEstimate, StepOutput
from tts_app.models.capabilities import PIPER
from tts_app.backends.word_clock import WordClock
from tts_app.audio.loudness import LevelKeeper

if TYPE_CHECKING:
    from tts_app.backends.params import SpeechParams

_LOGGER = logging.getLogger(__name__)

# Priors for the scheduler's step costs until steps are measured (then learnt per window size):
# about 0.55 ms of decoder per latent frame per row on 2 Zen 4 cores, a text stage about 30 ms.
_PRIOR_S_PER_FRAME = 0.00055
_PRIOR_STEP_S = 0.005
_PRIOR_TEXT_STAGE_S = 0.03
# The flow's runtime keeps the buffers of the longest call it has made (about 16 MB per 1,000 frames after
# the call, measured: a chunk at speed 0.25 is 8,000 frames, +129 MB for the life of the process). Calls of at
# most this many frames bound that; the context each recomputes (2 x FLOW_REACH) adds 6 % to the flow's work.
FLOW_CALL_FRAMES = 1024
_PRIOR_FLOW_S_PER_FRAME = 0.00012  # the flow, per latent frame (a chunk's rest is flowed with its second window)
_FRAMES_PER_ID = 2.3  # latent frames per phoneme id (ids include the blanks between phonemes), measured on the eval text
_COST_KEY_FRAMES = 32  # windows are costed in buckets of this many frames
_MAX_WINDOW_DOUBLINGS = 2  # a safe listener's windows grow to 4x the usual one at most (memory, step length)
_MAX_WINDOW_FRAMES = WINDOW_FRAMES * 2**_MAX_WINDOW_DOUBLINGS
# A pause longer than this goes out as silence in pieces of this length, one a step (never one long array:
# 214 ten-second breaks at speed 0.25 once made one 8,561 s array); a usual pause is within one piece.
SILENCE_PIECE_S = 2.0


def _doubling_bounds(n: int) -> list[int]:
    """Group bounds 0, 1, 2, 4, 8 ... n: groups of 1, 1, 2, 4 ... rows."""
    bounds = [0, 1]
    while bounds[-1] < n:
        bounds.append(min(n, 2 * bounds[-1]))
    return bounds


@dataclass(frozen=True)
class ParsedText:
    """Text after the text side: the chunks to speak, as phoneme ids."""

    text: str
    chunk_ids: tuple[tuple[int, ...], ...]
    pauses_s: tuple[float, ...]
    rates: tuple[float, ...] = ()  # per chunk, times the request's speed (SSML <prosody rate>); empty: all 1
    words: tuple[str, ...] = ()  # the written words, for timestamps
    word_spans: tuple[tuple[tuple[int, int, int], ...], ...] = ()  # per chunk: (word, first id, end id)
    sources: tuple[tuple[int, int, str] | None, ...] = ()  # per word: (text_start, text_end, written), None: not in the text


# benchmarks/loudness_lovo.py turns the level keeper off to measure what it is given.
LEVELLED = True


@dataclass
class PiperRow:
    """One request's decoding state; lives on the engine's request, not on the backend."""

    parsed: ParsedText
    speed: float  # the request's; SSML <prosody rate> multiplies it per chunk
    rng: np.random.Generator
    streamer: Any = None  # voice adapter for this request (tts_app.voice), or None
    level: Any = None  # its LevelKeeper (tts_app.audio.loudness): every line of a take at one level
    next_chunk: int = 0  # index of the next chunk whose text stage has not run
    z_p_CxT: np.ndarray | None = None  # prior of the chunk being decoded [192, T], until all of it is flowed
    z_CxT: np.ndarray | None = None  # latents of that chunk flowed so far [192, T' <= T]
    n_frames: int = 0  # the chunk's T
    decoder: DecoderStream | None = None  # the decoder's state for that chunk
    plan: list[Window] = field(default_factory=list)
    next_window: int = 0
    pause_s: float = 0.0  # silence after the chunk being decoded
    silence_left: int = 0  # samples of that silence still to send (a long pause goes out piece by piece)
    clock: WordClock | None = None  # word timings, released as their audio is sent
    sent_samples: int = 0
    window_frames: int = 0  # the windows after a chunk's first (the engine grows them for a safe listener)

    @property
    def chunk_rate(self) -> float:
        rates = self.parsed.rates
        return rates[self.next_chunk] if rates else 1.0

    @property
    def needs_latents(self) -> bool:
        return not self.silence_left and self.next_window >= len(self.plan) and self.next_chunk < len(self.parsed.chunk_ids)


class PiperBackend(Backend):
    """Piper en_US-joe-medium, batched across requests and streamed window by window."""

    name = EMBEDDED_ID
    capabilities = PIPER
    voice_filter = True  # a clip's analysis drives its filter (the matched route)

    def __init__(
        self,
        model: PiperVits,
        window_frames: int = WINDOW_FRAMES,
        first_window_frames: int = FIRST_WINDOW_FRAMES,
        max_text_chars: int = 5000,
    ) -> None:
        self.model = model
        self.sample_rate = model.config.sample_rate
        self.window_frames = window_frames
        self.first_window_frames = first_window_frames
        self.max_text_chars = max_text_chars
        if max_text_chars != PIPER.max_text_chars:
            self.capabilities = replace(PIPER, max_text_chars=max_text_chars)

    # -- text side (caller's thread) ------------------------------------------
    def check_text(self, text: str, params: SpeechParams | None = None) -> ParsedText:
        super().check_text(text)
        normalize = params is None or params.normalize is not False  # None: this voice's own reading, which expands
        options = TextOptions(normalize, params.lexicon if params is not None else None, max_pause_s=max_pause_s())
        id_map = self.model.config.phoneme_id_map
        prepared = prepare_text(text, self.model.config.espeak_voice, id_map, options)
        chunks = prepared.chunks
        ids = tuple(tuple(to_ids(c.phonemes, id_map)) for c in chunks)
        if not ids:
            raise TextError("text has nothing to speak")
        spans = tuple(tuple(word_id_spans(c.phonemes, c.word_of, id_map)) for c in chunks)
        pauses, rates = tuple(c.pause_after_s for c in chunks), tuple(c.rate for c in chunks)
        sources = tuple(None if sp is None else (sp[0], sp[1], text[sp[0] : sp[1]]) for sp in prepared.spans)
        parsed = ParsedText(prepared.text, ids, pauses, rates, tuple(prepared.words), spans, sources)
        # Before any work: the audio this text would give, at the request's speed, against its length.
        audio_s = self._speech_s(parsed, rates) + max(0.0, sum(pauses) - prepared.break_s)  # breaks: capped on their own
        check_audio_length(audio_s, len(text), params.speed if params is not None else 1.0)
        return parsed

    # -- model side (worker thread) -------------------------------------------
    def prepare(self, rows: Sequence[RowInput]) -> list[PiperRow]:
        states = []
        for row in rows:
            p = row.params
            parsed = row.parsed if isinstance(row.parsed, ParsedText) else self.check_text(row.text, p)
            streamer = None
            if p.voice is not None and p.voice_strength > 0:
                streamer = p.voice.streamer(p.voice_strength, sample_rate=self.sample_rate)
            clock = (
                WordClock.for_chunks(parsed.words, parsed.word_spans, self.sample_rate, self.model.hop, parsed.sources)
                if parsed.word_spans
                else None
            )
            # Every line at one level, the model's own voice too (its lines spread 3.0 dB, the matched route's 7.7:
            # the filter moves it), so that a take, a "Say it" preview and an A/B sample all sound equally loud.
            level = LevelKeeper(self.sample_rate) if LEVELLED else None
            states.append(PiperRow(parsed, p.speed, np.random.default_rng(p.seed), streamer, clock=clock, level=level))
        # The text stage up to the flow, in one batch for every newcomer (the encoder costs half as much
        # per row at 8 rows as alone); each row's flow for its first window runs in its first step (_decode).
        self._run_text_stage(states)
        return states

    def _run_text_stage(self, states: Sequence[PiperRow]) -> None:
        """Latents for the next chunk of every row that has run out, in one ragged batch."""
        todo = [s for s in states if s.needs_latents]
        if not todo:
            return
        cfg = self.model.config
        requests = [
            LatentRequest(
                ids=s.parsed.chunk_ids[s.next_chunk],
                rng=s.rng,
                length_scale=cfg.length_scale,
                speed=min(SPEED_MAX, max(SPEED_MIN, s.speed * s.chunk_rate)),  # SSML prosody rate times the request's speed
                noise_scale=cfg.noise_scale,
                noise_w=cfg.noise_w,
            )
            for s in todo
        ]
        for s, (z_p_CxT, frames_N) in zip(todo, self.model.text_to_timed_priors(requests)):
            s.z_p_CxT, s.z_CxT, s.n_frames = z_p_CxT, None, z_p_CxT.shape[1]
            s.decoder = self.model.new_decoder_stream()
            s.plan = plan_windows(s.n_frames, s.window_frames or self.window_frames, self.first_window_frames)
            s.next_window = 0
            s.pause_s = s.parsed.pauses_s[s.next_chunk] / s.speed  # pauses scale like speech
            if s.clock is not None:
                pause = int(round(s.pause_s * self.sample_rate))
                s.clock.time_chunk(s.parsed.word_spans[s.next_chunk], frames_N, s.n_frames * self.model.hop, pause)
            s.next_chunk += 1

    def _flow_to(self, state: PiperRow, end: int) -> None:
        """Flow the open chunk's prior far enough for frames [0, ``end``): only the first window's
        (what the first audio waits for), then the whole rest, in calls of at most FLOW_CALL_FRAMES
        frames (each call recomputes ``FLOW_REACH`` frames of context on either side; a short rest
        goes with the first)."""
        have = 0 if state.z_CxT is None else state.z_CxT.shape[1]
        if end <= have or state.z_p_CxT is None:
            return
        upto = state.n_frames if have or state.n_frames - end <= 2 * FLOW_REACH else end
        pieces = [self.model.flow_frames(state.z_p_CxT, a, min(upto, a + FLOW_CALL_FRAMES)) for a in range(have, upto, FLOW_CALL_FRAMES)]
        z_CxN = np.concatenate(pieces, axis=1) if len(pieces) > 1 else pieces[0]
        state.z_CxT = z_CxN if state.z_CxT is None else np.concatenate([state.z_CxT, z_CxN], axis=1)
        if upto >= state.n_frames:
            state.z_p_CxT = None

    def slot_bytes(self) -> int:
        # A row holds its open chunk's prior and latents (192 x frames, float32) and its window's audio: for a
        # sentence of 1,000 frames (11.6 s) about 1.5 MB and 0.3 MB; the decoder stream's context is small beside them.
        return 2 * 192 * 1000 * 4 + 4 * _MAX_WINDOW_FRAMES * self.model.hop

    @property
    def emits_rows(self) -> bool:
        return bool(self.model.decodes_rows_alone)

    def handed_out_after(self, position: int) -> float:
        if not self.emits_rows:
            return math.inf
        return 1 << position.bit_length()  # its group's end in _decode's groups of 1, 1, 2, 4 ... (a last group may end sooner)

    # -- what the scheduler plans with (no tensors leave) ------------------------
    def _frames_s(self, frames: float) -> float:
        return frames * self.model.hop / self.sample_rate

    def _estimate(self, frames: int, text_stage: bool, pause_s: float, flow_frames: int = 0) -> StepEstimate:
        bucket = -(-frames // _COST_KEY_FRAMES) * _COST_KEY_FRAMES
        prior = _PRIOR_STEP_S + bucket * _PRIOR_S_PER_FRAME + (_PRIOR_TEXT_STAGE_S if text_stage else 0.0)
        # A chunk's second window also flows the rest of the chunk: its prior says so, but it keeps its
        # window's key (a key per flow length would split the fit into keys too few steps can separate;
        # the window's learnt cost is then the mean over second and later windows, as a text stage's is
        # over sentence lengths).
        prior += flow_frames * _PRIOR_FLOW_S_PER_FRAME
        return StepEstimate(("text+" if text_stage else "") + f"w{bucket}", self._frames_s(frames) + pause_s, prior)

    def estimate_step(self, state: PiperRow) -> StepEstimate:
        if state.silence_left:  # a piece of a long pause: no model work
            return StepEstimate("silence", min(state.silence_left, self._silence_piece()) / self.sample_rate, _PRIOR_STEP_S)
        if state.needs_latents:  # the next chunk's text stage, then its first window
            return self._estimate(self.first_window_frames, True, 0.0)
        w = state.plan[state.next_window]
        flowed = state.z_CxT.shape[1] if state.z_CxT is not None else 0
        flow = state.n_frames - flowed if w.end > flowed else 0
        return self._estimate(w.end - w.start, False, state.pause_s if w.last else 0.0, flow)

    def steady_estimate(self) -> StepEstimate:
        return self._estimate(self.window_frames, False, 0.0)

    def _speech_s(self, parsed: ParsedText, rates: Sequence[float]) -> float:
        """Speech (no pauses) at speed 1, each chunk at its SSML rate (within the model's speed range)."""
        return sum(self._frames_s(len(c) * _FRAMES_PER_ID) / min(SPEED_MAX, max(SPEED_MIN, r)) for c, r in zip(parsed.chunk_ids, rates))

    def _ids_s(self, parsed: ParsedText, first_chunk: int) -> float:
        ids = sum(len(c) for c in parsed.chunk_ids[first_chunk:])
        return self._frames_s(ids * _FRAMES_PER_ID) + sum(parsed.pauses_s[first_chunk:])

    def audio_estimate_s(self, parsed: Any) -> float:
        return self._ids_s(parsed, 0) if isinstance(parsed, ParsedText) else super().audio_estimate_s(parsed)

    def remaining_audio_s(self, state: PiperRow) -> float:
        left = self._ids_s(state.parsed, state.next_chunk) / state.speed + state.silence_left / self.sample_rate
        if state.decoder is not None and state.next_window < len(state.plan):
            left += self._frames_s(state.n_frames - state.plan[state.next_window].start) + state.pause_s
        return left

    def set_window_level(self, state: PiperRow, level: int) -> None:
        """Windows after a chunk's first: the first window's size for a listener who holds little
        (level 0: its next audio is due soon, and a short window comes sooner), the usual at level 1,
        2x at 2 and 4x from 3 on (a file's: base.WIDEST_WINDOW). The rest of the open chunk is planned again after
        its first window (the decoder stream gives the same audio whatever the windows:
        stream_decoder.py)."""
        if level < 0:
            return
        frames = self.first_window_frames if level == 0 else self.window_frames * 2 ** min(level - 1, _MAX_WINDOW_DOUBLINGS)
        if frames == (state.window_frames or self.window_frames):
            return
        state.window_frames = frames
        keep = max(1, state.next_window)  # a chunk's first window stays: its flow covers only itself
        if state.decoder is None or keep >= len(state.plan):
            return  # no chunk is open, or its last window is planned: the next chunk is planned with these
        start = state.plan[keep].start
        rest = plan_windows(state.n_frames - start, frames, frames)
        state.plan = state.plan[:keep] + [Window(start + w.start, start + w.end, w.last) for w in rest]

    def step(self, states: Sequence[PiperRow], emit: RowEmitter | None = None) -> list[StepOutput]:
        silent = {i: self._silence(s) for i, s in enumerate(states) if s.silence_left}
        for i, out in silent.items():
            if emit is not None:
                emit(i, out)
        rest = [i for i in range(len(states)) if i not in silent]
        decoded = iter(self._decode([states[i] for i in rest], emit, rest))
        return [silent[i] if i in silent else next(decoded) for i in range(len(states))]

    def _decode(self, states: Sequence[PiperRow], emit: RowEmitter | None, index: Sequence[int]) -> list[StepOutput]:
        """One decoder window for each of ``states`` (``index``: their places in the step, for ``emit``)."""
        if not states:
            return []
        # Every row's text stage in one batch (the encoder costs half as much per row at 8 rows as
        # alone), then flows and windows in groups of 1, 1, 2, 4, 8 ... rows in step order (the oldest
        # first: a page's first line), each group handed out as it ends: a row's audio waits for the
        # rows before it, not for every row of the step, and the larger groups still go stage by
        # stage (decoding every row on its own measured 0.77-0.94x stock at 16 clients against
        # 1.12-1.23x stage by stage). Only where the decoder runs one row per call anyway (CPU), so
        # the audio is the same bit for bit.
        self._run_text_stage(states)
        split = emit is not None and self.model.decodes_rows_alone and len(states) > 1
        bounds = _doubling_bounds(len(states)) if split else [0, len(states)]
        outputs: list[StepOutput] = []
        for a, b in zip(bounds, bounds[1:]):
            group = states[a:b]
            group_windows = [s.plan[s.next_window] for s in group]
            for s, w in zip(group, group_windows):
                self._flow_to(s, w.end)  # a chunk's first window flows only its own frames
            audio = self.model.decode_stream(
                [s.decoder for s in group],
                [s.z_CxT[:, w.start : w.end] for s, w in zip(group, group_windows)],
                [w.last for w in group_windows],
            )
            for s, a_S in zip(group, audio):
                outputs.append(self._advance(s, a_S))
                if emit is not None:
                    emit(index[len(outputs) - 1], outputs[-1])
        return outputs

    def _advance(self, state: PiperRow, audio: np.ndarray) -> StepOutput:
        """Commit a decoded window to the row; add the pause after a finished chunk."""
        state.next_window += 1
        chunk_done = state.next_window >= len(state.plan)
        if chunk_done and state.pause_s > 0:
            pause = int(round(state.pause_s * self.sample_rate))
            first = min(pause, self._silence_piece())  # the rest goes out a piece a step (step's _silence)
            state.silence_left = pause - first
            audio = np.concatenate([audio, np.zeros(first, np.float32)])
        if chunk_done:
            state.z_p_CxT = state.z_CxT = state.decoder = None  # bounded memory: drop a chunk's latents once decoded
        return self._out(state, audio.astype(np.float32, copy=False), chunk_done)

    def _silence_piece(self) -> int:
        return int(SILENCE_PIECE_S * self.sample_rate)

    def _silence(self, state: PiperRow) -> StepOutput:
        """The next piece of a long pause."""
        piece = min(state.silence_left, self._silence_piece())
        state.silence_left -= piece
        return self._out(state, np.zeros(piece, np.float32), not state.silence_left)

    def _out(self, state: PiperRow, audio: np.ndarray, chunk_done: bool) -> StepOutput:
        """A step's audio through the voice adapter, with the words it completes."""
        done = chunk_done and not state.silence_left and state.next_chunk >= len(state.parsed.chunk_ids)
        if state.streamer is not None:
            audio = state.streamer.process(audio)
            if done:
                audio = np.concatenate([audio, state.streamer.flush()]).astype(np.float32, copy=False)
        if state.level is not None:
            audio = state.level.process(audio)
        state.sent_samples += audio.size
        words = state.clock.release(state.sent_samples, done) if state.clock is not None else ()
        return StepOutput(audio, done, words)
