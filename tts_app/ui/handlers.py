"""Event handlers of the Speak tab: they turn page values into engine calls and engine output into page updates."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import gradio as gr
import numpy as np

from tts_app.shared_engine import engine_loaded, get_engine
from tts_app.ui.active_runs import ACTIVE_RUNS
from tts_app.ui.history import Take, add_take
from tts_app.ui.run_figures import RunFigures, estimate_wait_s
from tts_app.ui.session_files import new_file
from tts_app.ui.stream_pacer import StreamPacer
from tts_app.ui.text_lines import TextLimitError, parse_lines
from tts_app.ui.voice_input import (
    MODE_UPLOAD,
    VoiceChoiceError,
    clip_for_report,
    reference_report,
    resolve_voice,
)
from tts_app.voice_names import builtin_voice_path
from tts_app.wav_io import join_with_pauses, wav_bytes, write_wav

logger = logging.getLogger(__name__)

LINE_PAUSE_S = 0.3  # silence between lines, in the stream and in the joined file
STATUS_EVERY_S = 0.3  # how often the waiting status refreshes
_service_times: list[float] = []  # recent per-request running times, for the wait estimate


@dataclass
class SpeakOutputs:
    """The components a Generate run updates, in the order the event lists them."""

    stream: gr.Audio
    full: gr.Audio
    files: gr.File
    status: gr.Markdown
    figures: gr.Dataframe
    lines: gr.State
    history: gr.State

    def as_list(self) -> list[Any]:
        return [self.stream, self.full, self.files, self.status, self.figures, self.lines, self.history]


@dataclass
class _LineState:
    text: str
    chunks: list[np.ndarray] = field(default_factory=list)
    streamed: int = 0  # chunks already sent to the streaming player
    done: bool = False
    path: str | None = None


def _mean_service_s() -> float | None:
    recent = _service_times[-50:]
    return sum(recent) / len(recent) if recent else None


def _record_service(metrics: dict[str, Any]) -> None:
    total = metrics.get("total_s")
    wait = metrics.get("queue_wait_s") or 0.0
    if total:
        _service_times.append(max(float(total) - float(wait), 0.0))
        del _service_times[:-200]


def _queue_note(handles: Sequence[Any]) -> tuple[int, str]:
    """How many of ``handles`` still wait in the engine queue, and a note on their place and wait."""
    waiting = [h for h in handles if h.status.value == "waiting"]
    if not waiting:
        return 0, ""
    ahead = min(h.queue_position() for h in waiting)
    estimate = estimate_wait_s(ahead, get_engine().stats(), _mean_service_s())
    wait = f", about {estimate:.1f} s to wait" if estimate is not None else ""
    return len(waiting), f"{ahead} request{'s' if ahead != 1 else ''} ahead in the engine queue{wait}"


def _waiting_status(handles: Sequence[Any], started: float) -> str:
    elapsed = time.perf_counter() - started
    waiting, note = _queue_note(handles)
    if not waiting:
        return f"**Decoding…** {len(handles)} line{'s' if len(handles) != 1 else ''} in the engine ({elapsed:.1f} s)"
    if waiting == len(handles):
        return f"**Queued:** {note} ({elapsed:.1f} s so far)"
    return f"**Decoding…** {len(handles) - waiting} of {len(handles)} lines running; the other {waiting}: {note} ({elapsed:.1f} s)"


def resolve_profile(voice: Any) -> Any:
    """The voice's profile, analysed once for all the lines of a run; a bad clip raises gr.Error."""
    from tts_app.voice import resolve_voice

    try:
        return resolve_voice(voice)
    except ValueError as exc:  # VoiceError: one line, ready for the page
        raise gr.Error(f"This voice cannot be used: {exc}") from exc


def _submit_all(lines: Sequence[str], voice: Any, seed: int, speed: float, strength: float) -> list[Any]:
    """Submit every line at once (so they batch); on any refusal cancel what was already queued."""
    from tts_app.engine import EngineBusy

    from tts_app.text import saved_lexicon

    engine = get_engine()
    profile = resolve_profile(voice)
    lexicon = saved_lexicon()  # the Pronunciation tab's words, read in every run
    handles: list[Any] = []
    try:
        for number, line in enumerate(lines, start=1):
            try:
                handles.append(
                    engine.submit(line, voice=profile, seed=seed, speed=speed, voice_strength=strength, lexicon=lexicon)
                )
            except EngineBusy as exc:
                raise gr.Error("The server is busy (the engine queue is full). Try again in a moment.") from exc
            except ValueError as exc:
                prefix = f"Line {number}: " if len(lines) > 1 else ""
                raise gr.Error(f"{prefix}{exc}") from exc
    except gr.Error:
        for handle in handles:
            handle.cancel()
        raise
    return handles


async def _pump(index: int, handle: Any, events: asyncio.Queue[tuple[int, Any]]) -> None:
    """Forward one handle's chunks to the run's event queue; None marks its end, an exception its failure."""
    try:
        async for chunk in handle.astream():
            await events.put((index, np.asarray(chunk, dtype=np.float32).reshape(-1)))
        await events.put((index, None))
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - handed to the consumer, which reports it in the page
        await events.put((index, exc))


def _settings_values(speed: float | None, seed: float | None, strength: float | None) -> tuple[float, int, float]:
    try:
        speed_value = float(speed if speed is not None else 1.0)
        seed_value = int(seed if seed is not None else 0)
        strength_value = float(strength if strength is not None else 1.0)
    except (TypeError, ValueError) as exc:
        raise gr.Error(f"Invalid setting: {exc}") from exc
    if not 0.25 <= speed_value <= 4.0:
        raise gr.Error("Speed must be between 0.25 and 4.")
    if not 0.0 <= strength_value <= 1.0:
        raise gr.Error("Voice-matching strength must be between 0 and 1.")
    if seed_value < 0:
        raise gr.Error("Seed must be 0 or more.")
    return speed_value, seed_value, strength_value


async def generate(
    text: str,
    voice_mode: str,
    builtin_voice: str | None,
    reference_clip: str | None,
    voice_strength: float,
    speed: float,
    seed: float,
    streaming: bool,
    history: list[dict[str, Any]] | None,
    request: gr.Request,
    outputs: SpeakOutputs,
) -> AsyncIterator[dict[Any, Any]]:
    """Speak every line of ``text`` in one engine batch; stream line by line when ``streaming``."""
    try:
        lines = parse_lines(text)
        voice, voice_label = resolve_voice(voice_mode, builtin_voice, reference_clip)
    except (TextLimitError, VoiceChoiceError) as exc:
        raise gr.Error(str(exc)) from exc
    speed_value, seed_value, strength_value = _settings_values(speed, seed, voice_strength)
    session = request.session_hash or "anonymous"
    started = time.perf_counter()

    if not engine_loaded():
        yield {outputs.status: "**Loading the model…** (first request of this server)"}
    engine = await asyncio.to_thread(get_engine)
    sample_rate = int(engine.sample_rate)
    handles = await asyncio.to_thread(_submit_all, lines, voice, seed_value, speed_value, strength_value)
    ACTIVE_RUNS.add(session, handles)
    states = [_LineState(text=line) for line in lines]
    figures = RunFigures()
    events: asyncio.Queue[tuple[int, Any]] = asyncio.Queue()
    pumps = [asyncio.create_task(_pump(i, h, events)) for i, h in enumerate(handles)]
    pacer = StreamPacer(sample_rate) if streaming else None
    next_line = 0  # the line the streaming player is on
    finished = 0
    line_items: list[dict[str, str]] = []
    getter: asyncio.Task[tuple[int, Any]] | None = None

    try:
        yield {
            outputs.status: _waiting_status(handles, started),
            outputs.figures: [],
            outputs.files: None,
            outputs.full: None,
            outputs.lines: [],
        }
        while finished < len(states):
            # One pending get() kept across timeouts, so no event is ever dropped by a timeout.
            getter = getter or asyncio.ensure_future(events.get())
            done, _ = await asyncio.wait({getter}, timeout=STATUS_EVERY_S)
            if not done:
                if figures.time_to_first_audio_s is None:
                    yield {outputs.status: _waiting_status(handles, started)}
                continue
            batch = [getter.result()]
            getter = None
            while not events.empty():
                batch.append(events.get_nowait())

            line_done = False
            for index, item in batch:
                state = states[index]
                if isinstance(item, BaseException):
                    raise gr.Error(f"Line {index + 1} failed: {item}")
                if item is None:
                    state.done = True
                    finished += 1
                    line_done = True
                    metrics = handles[index].metrics.as_dict()
                    _record_service(metrics)
                    figures.add_line(index + 1, state.text, metrics)
                    audio = np.concatenate(state.chunks) if state.chunks else np.zeros(0, np.float32)
                    path = write_wav(new_file(session, f"line-{index + 1:02d}", ".wav"), audio, sample_rate)
                    state.path = str(path)
                    line_items.append({"index": str(index + 1), "text": state.text, "path": state.path})
                elif item.size:
                    state.chunks.append(item)
                    if figures.time_to_first_audio_s is None:
                        figures.time_to_first_audio_s = time.perf_counter() - started

            update: dict[Any, Any] = {}
            segments: list[np.ndarray] = []
            if pacer is not None:
                while next_line < len(states):  # the lines in order; later lines wait in their buffers
                    current = states[next_line]
                    for chunk in current.chunks[current.streamed :]:
                        pacer.push(chunk)
                    current.streamed = len(current.chunks)
                    if not current.done:
                        break
                    next_line += 1
                    if next_line < len(states):
                        pacer.push(np.zeros(int(LINE_PAUSE_S * sample_rate), np.float32))
                segments = pacer.take(final=next_line >= len(states))
            for segment in segments[:-1]:
                yield {outputs.stream: wav_bytes(segment, sample_rate)}
            if segments:
                update[outputs.stream] = wav_bytes(segments[-1], sample_rate)
            if line_done:
                ordered = sorted(line_items, key=lambda item: int(item["index"]))
                update[outputs.lines] = ordered
                update[outputs.files] = [item["path"] for item in ordered]
                update[outputs.figures] = figures.table()
            spoken = sum(1 for s in states if s.done)
            if figures.time_to_first_audio_s is not None:
                waiting, note = _queue_note(handles)
                queued = f"; {waiting} waiting, {note}" if waiting else ""
                doing = "Speaking…" if streaming else "Decoding…"
                update[outputs.status] = f"**{doing}** {spoken} of {len(states)} lines done{queued}"
            if update:
                yield update

        figures.total_s = time.perf_counter() - started
        joined = join_with_pauses([np.concatenate(s.chunks) if s.chunks else np.zeros(0, np.float32) for s in states], sample_rate, LINE_PAUSE_S)
        full_path = write_wav(new_file(session, "all-lines", ".wav"), joined, sample_rate)
        take = Take(
            kind="speak",
            lines=list(lines),
            voice=voice_label,
            voice_strength=strength_value,
            speed=speed_value,
            seed=seed_value,
            streaming=bool(streaming),
            figures=figures.summary(),
            line_files=[s.path or "" for s in states],
            full_file=str(full_path),
        )
        summary = figures.summary()
        yield {
            outputs.full: str(full_path),
            outputs.files: [s.path for s in states if s.path] + [str(full_path)],
            outputs.figures: figures.table(),
            outputs.history: add_take(history, take),
            outputs.status: (
                f"✓ **Done:** {len(states)} line{'s' if len(states) != 1 else ''}, "
                f"{summary['audio_s']:.1f} s of audio in {summary['total_s']:.1f} s "
                f"(first audio {summary['time_to_first_audio_s'] or 0:.2f} s, RTF {summary['rtf'] or 0:.2f}, "
                f"max batch {summary['max_batch']})"
            ),
        }
    finally:
        for handle in handles:
            handle.cancel()  # no-op for finished requests; frees the engine when Stop cancelled the run
        for task in pumps:
            task.cancel()
        if getter is not None:
            getter.cancel()
        ACTIVE_RUNS.remove(session, handles)


def stop(request: gr.Request) -> str:
    """Cancel the engine requests of this session's run."""
    count = ACTIVE_RUNS.cancel(request.session_hash or "anonymous")
    if count:
        return f"■ **Stopped:** cancelled {count} engine request{'s' if count != 1 else ''}."
    return "■ Nothing was running."


def voice_report(voice_mode: str, builtin_voice: str | None, reference_clip: str | None) -> str:
    """The reference report for the current voice choice; a bad clip gives a warning, never a trace."""
    if voice_mode == MODE_UPLOAD and not reference_clip:
        return "Upload a clip (wav, flac, mp3, ogg) or record one with the microphone."
    try:
        clip = clip_for_report(voice_mode, builtin_voice, reference_clip)
        return reference_report(clip)
    except (ValueError, OSError) as exc:
        gr.Warning(f"This reference clip cannot be used: {exc}")
        return f"⚠ **This reference clip cannot be used:** {exc}"


def builtin_preview(name: str | None) -> str | None:
    """The clip of a built-in voice, for its preview player."""
    if not name:
        return None
    try:
        return str(builtin_voice_path(name))
    except ValueError as exc:
        raise gr.Error(str(exc)) from exc


def on_upload(reference_clip: str | None) -> str:
    """Uploading or recording a clip switches the voice choice to it."""
    return MODE_UPLOAD if reference_clip else gr.skip()


def engine_stats() -> dict[str, Any]:
    """The engine's aggregate counters (queued, active, max batch seen, mean step time, ...)."""
    return dict(get_engine().stats())
