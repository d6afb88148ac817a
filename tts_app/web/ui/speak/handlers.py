"""Event handlers of the Speak tab: they turn page values into engine calls and engine output into page updates."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import gradio as gr

from tts_app.models.piper.config import SPEED_MAX, SPEED_MIN
from tts_app.backends.params import SpeechParams
from tts_app.catalog.engines import ModelLoadFailed, ModelUnavailable, engine_for, model_loaded
from tts_app.models.available import EMBEDDED_ID
from tts_app.catalog.shared_engine import engine_loaded, get_engine
from tts_app.web.guards.client_identity import visitor_key
from tts_app.catalog.clone_route import spoken_by
from tts_app.web.ui.common.model_picker import check_model, model_label
from tts_app.web.ui.common.text_lines import TextLimitError, parse_lines
from tts_app.web.ui.common.user_error import UserError
from tts_app.web.ui.history.takes import Take, add_take
from tts_app.web.ui.session.active_runs import ActiveRuns
from tts_app.web.ui.session.owner import owner_of
from tts_app.web.ui.session.visitor_lexicon import lexicon_for
from tts_app.web.ui.speak.captions_view import EMPTY as EMPTY_CAPTIONS
from tts_app.web.ui.speak.captions_view import captions_html
from tts_app.web.live_channel import LIVE_CHANNELS, LiveChannel, LiveChannelsFull
from tts_app.web.ui.speak.live_player import LIVE_IDLE, expected_gap_s, live_html
from tts_app.web.ui.speak.run_files import RunFiles
from tts_app.web.ui.speak.run_model import Event, LineFailed, RunStep, SpeakRun, next_batch, pump
from tts_app.web.ui.speak.safe_start import SafeStart
from tts_app.web.ui.speak.stream_pacer import prebuffer_for
from tts_app.web.ui.voices.voice_input import (
    MODE_BUILTIN,
    MODE_UPLOAD,
    VoiceChoiceError,
    clip_for_report,
    is_saved_voice,
    reference_report,
    saved_profile,
    saved_voice_report,
    voice_choice,
)
from tts_app.catalog.voices import builtin_voice_path
from tts_app.audio.wav_io import pcm16_array, wav_bytes

logger = logging.getLogger(__name__)

STATUS_EVERY_S = 0.3  # how often the waiting status refreshes


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
    captions: gr.HTML
    live: gr.HTML  # the page's own low-latency player (live_player.py)

    def as_list(self) -> list[Any]:
        return [self.stream, self.full, self.files, self.status, self.figures, self.lines, self.history, self.captions, self.live]


@dataclass(frozen=True)
class SpeakForm:
    """The Speak tab's values for one Generate click, as the page sent them (not yet checked)."""

    text: str
    voice_mode: str
    builtin_voice: str | None
    reference_clip: str | None
    voice_strength: float
    speed: float
    seed: float
    streaming: bool
    voice_text: str | None = None  # what the uploaded clip says, if the visitor typed it
    normalize: bool = True  # False: read numbers, dates and abbreviations as written
    model: str | None = None  # the selector's value (None: the embedded voice)
    live_player: bool = False  # the page plays the stream itself from /live/{token} (API callers: HLS)


def _queue_note(handles: Sequence[Any]) -> tuple[int, str]:
    """How many of ``handles`` still wait in the engine queue, and a note on their place and wait."""
    waiting = [h for h in handles if h.status.value == "waiting"]
    if not waiting:
        return 0, ""
    ahead = min(h.queue_position() for h in waiting)
    estimate = min(h.eta_s() for h in waiting)  # the engine's own prediction (its learnt capacity)
    wait = f", about {estimate:.1f} s to wait" if estimate is not None else ""
    return len(waiting), f"{ahead} request{'s' if ahead != 1 else ''} ahead in the engine queue{wait}"


STOP_WAIT_S = 10.0  # Stop's answer waits at most this long for the run's handler to end


def _stopped(handles: Sequence[Any]) -> bool:
    """Whether the run's requests were cancelled (Stop, or its page gone), or are being: a request that waits
    in the queue is marked cancelled only at the engine's next step, which on a loaded machine came after
    Stop's answer (the status went on saying Starting… and froze there)."""
    return any(h.cancel_asked or h.status.value == "cancelled" for h in handles)


def _waiting_status(handles: Sequence[Any], started: float) -> str:
    elapsed = time.perf_counter() - started
    waiting, note = _queue_note(handles)
    if not waiting:
        return f"**Decoding…** {len(handles)} line{'s' if len(handles) != 1 else ''} in the engine ({elapsed:.1f} s)"
    if waiting == len(handles):
        if min(h.queue_position() for h in handles) == 0:
            return f"**Starting…** ({elapsed:.1f} s)"  # nothing ahead: the engine is gathering this batch
        return f"**Queued:** {note} ({elapsed:.1f} s so far)"
    return f"**Decoding…** {len(handles) - waiting} of {len(handles)} lines running; the other {waiting}: {note} ({elapsed:.1f} s)"


def resolve_page_params(params: SpeechParams) -> SpeechParams:
    """``params`` with the voice analysed once for all the lines of a run; a bad clip raises gr.Error.

    ``params.voice_text``: what the clip says, when the visitor typed it (the voice is then matched on it).
    """
    from tts_app.engine.input_processing import resolve_params  # the voice package is heavy: first run only

    try:
        return resolve_params(params)
    except ValueError as exc:  # VoiceError: one line, ready for the page
        raise UserError(f"This voice cannot be used: {exc}") from exc


def _run_params(asked: SpeechParams, owner: str | None) -> SpeechParams:
    """A run's params: the voice resolved, and the server's words and this visitor's own (read in every run)."""
    return replace(resolve_page_params(asked), lexicon=lexicon_for(owner))


def spoken_without(params: SpeechParams, lines: Sequence[str], engine: Any, model: str) -> tuple[SpeechParams, str]:
    """The page speaks a line without what its model does not honour: the params without it, and a
    one-line note saying what was left out ("" when nothing was)."""
    from tts_app.engine.input_processing import without_refused  # the voice package is heavy: first run only

    kept, refused = without_refused(params, lines, engine.backend.capabilities)
    clip = next((r for r in refused if r.param == "voice"), None)
    if clip is not None:  # a clip is never spoken in another voice: refused, saying why (capabilities.NO_CLONING)
        raise UserError(f"{model} does not take {clip.asked}.")
    dropped = [r.asked for r in refused if r.param != "input"]  # SSML cannot be dropped: the engine refuses it
    if not dropped:
        return kept, ""
    return kept, f"{model} does not support {', '.join(dropped)}: spoken without it."


def _submit_all(engine: Any, lines: Sequence[str], params: SpeechParams) -> list[Any]:
    """Submit every line as one group: they enter the engine together (so they batch), or none does."""
    from tts_app.engine import EngineBusy, LineRejected  # start-up: the engine and its model runtime load on first use

    try:
        return engine.submit_many(lines, params)
    except EngineBusy as exc:
        raise UserError(f"The server is busy: {exc}.") from exc
    except LineRejected as exc:
        prefix = f"Line {exc.index + 1}: " if len(lines) > 1 else ""
        raise UserError(f"{prefix}{exc}") from exc
    except ValueError as exc:
        raise UserError(str(exc)) from exc


def _settings_values(speed: float | None, seed: float | None, strength: float | None) -> tuple[float, int, float]:
    try:
        speed_value = float(speed if speed is not None else 1.0)
        seed_value = int(seed if seed is not None else 0)
        strength_value = float(strength if strength is not None else 1.0)
    except (TypeError, ValueError) as exc:
        raise UserError(f"Invalid setting: {exc}") from exc
    if not SPEED_MIN <= speed_value <= SPEED_MAX:
        raise UserError(f"Speed must be between {SPEED_MIN:g} and {SPEED_MAX:g}.")
    if not 0.0 <= strength_value <= 1.0:
        raise UserError("Voice-matching strength must be between 0 and 1.")
    if seed_value < 0:
        raise UserError("Seed must be 0 or more.")
    return speed_value, seed_value, strength_value


def _open_live(form: SpeakForm, sample_rate: int) -> LiveChannel | None:
    """A live channel when the page plays the stream itself; None for API callers, or when none is free."""
    if not (form.streaming and form.live_player):
        return None
    try:
        return LIVE_CHANNELS.open(sample_rate)
    except LiveChannelsFull:
        logger.warning("no live channel free: this run streams through the page's HLS player")
        return None


def _start_updates(outputs: SpeakOutputs, status: str) -> dict[Any, Any]:
    """The first update of an accepted run: clear the last run's outputs (a refused run leaves them)."""
    return {
        outputs.status: status, outputs.figures: [], outputs.files: None, outputs.full: None, outputs.lines: [],
        outputs.captions: EMPTY_CAPTIONS,
    }  # fmt: skip


def _progress_status(run: SpeakRun, handles: Sequence[Any]) -> str:
    waiting, note = _queue_note(handles)
    queued = f"; {waiting} waiting, {note}" if waiting else ""
    doing = "Speaking…" if run.streaming else "Decoding…"
    return f"**{doing}** {run.finished_count} of {len(run.lines)} lines done{queued}"


def _done_status(summary: dict[str, Any], count: int, route: str = "") -> str:
    model = f" with {summary['model']}" if summary.get("model") else ""
    return (
        f"✓ **Done{model}:** {count} line{'s' if count != 1 else ''}, "
        f"{summary['audio_s']:.1f} s of audio in {summary['total_s']:.1f} s "
        f"(first audio {summary['time_to_first_audio_s'] or 0:.2f} s, RTF {summary['rtf'] or 0:.2f}, "
        f"max batch {summary['max_batch']})" + (f" · voice: {route}" if route else "")
    )


async def generate(
    form: SpeakForm, history: list[dict[str, Any]] | None, request: gr.Request, outputs: SpeakOutputs, runs: ActiveRuns
) -> AsyncIterator[dict[Any, Any]]:
    """Speak every line of ``form.text`` in one engine batch; stream line by line when ``form.streaming``.

    A refused or failed run puts its one-line reason in the status box and raises gr.Error (the
    toast, and the API client's exception); the last run's players, files, captions and figures
    are cleared, so nothing under the error looks like this run's result. The run's engine requests
    are in ``runs`` while it lasts, so Stop can cancel them.
    """
    try:
        async for update in _generate(form, history, request, outputs, runs):
            yield update
    except gr.Error as exc:
        yield _start_updates(outputs, f"⚠ **Not spoken:** {exc.message}") | {outputs.live: LIVE_IDLE}
        raise


async def _generate(
    form: SpeakForm, history: list[dict[str, Any]] | None, request: gr.Request, outputs: SpeakOutputs, runs: ActiveRuns
) -> AsyncIterator[dict[Any, Any]]:
    session = owner_of(request) or "anonymous"
    try:
        lines = parse_lines(form.text)
        voice, voice_label = voice_choice(form.voice_mode, form.builtin_voice, form.reference_clip, session)
    except (TextLimitError, VoiceChoiceError) as exc:
        raise UserError(str(exc)) from exc
    speed_value, seed_value, strength_value = _settings_values(form.speed, form.seed, form.voice_strength)
    model_id = check_model(form.model)
    voice_text = (form.voice_text or "").strip() or None if form.voice_mode == MODE_UPLOAD else None
    # The checkbox's tick is each model's own reading (the embedded voice expands; the others read as given).
    normalize = None if form.normalize is not False else False
    try:
        # The visitor's key, as its API calls have: a session hash costs nothing, so a share per hash was none.
        asked = SpeechParams(seed_value, speed_value, voice, voice_text, strength_value, normalize, client=visitor_key(request))
    except ValueError as exc:  # a seed past the largest, say: one line for the page
        raise UserError(str(exc)) from exc
    started = time.perf_counter()

    if not model_loaded(model_id):
        yield {outputs.status: f"**Loading {model_label(model_id)}…** (its first request on this server)"}
    try:
        engine = await asyncio.to_thread(engine_for, model_id)
    except ModelLoadFailed as exc:  # its message names the model and says why
        raise UserError(str(exc)) from exc
    except (ModelUnavailable, OSError, RuntimeError) as exc:  # e.g. a checkpoint folder that cannot be read
        raise UserError(f"{model_label(model_id)} cannot be loaded: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from exc
    if voice is not None:
        yield {outputs.status: "**Analysing the reference…**"}
    params, note = spoken_without(await asyncio.to_thread(_run_params, asked, session), lines, engine, model_label(model_id))
    if note:
        gr.Warning(note)
    ahead = engine.stats()  # before this run joins: the rows its first line's next window may wait for
    handles = await asyncio.to_thread(_submit_all, engine, lines, params)
    runs.add(session, handles)
    stats = engine.stats()
    prebuffer_s = prebuffer_for(float(stats.get("step_time_s") or 0.0), int(stats.get("rows_stepped") or 0), len(lines))
    live_gap_s = expected_gap_s(
        float(stats.get("row_step_p90_s") or 0.0), len(lines), bool(stats.get("emits_rows")),
        rows_ahead=int(ahead.get("active") or 0) + int(ahead.get("queued") or 0),
    )
    channel = _open_live(form, int(engine.sample_rate))
    gate = SafeStart(handles)  # the live player starts when the engine says the stream will not run dry
    run = SpeakRun(lines, int(engine.sample_rate), bool(form.streaming), started, prebuffer_s=prebuffer_s, live=channel is not None)
    run.figures.model = "" if model_id == EMBEDDED_ID else model_label(model_id)
    events: asyncio.Queue[Event] = asyncio.Queue()
    pumps = [asyncio.create_task(pump(i, h, events)) for i, h in enumerate(handles)]
    getter: asyncio.Future[Event] | None = None
    files = RunFiles(session)
    run_id = uuid.uuid4().hex[:12]  # the page's caption script restarts its clock for a new run

    def metrics_of(index: int) -> dict[str, Any]:
        return handles[index].metrics.as_dict()

    try:
        start = _start_updates(outputs, _waiting_status(handles, started))
        if channel is not None:
            start[outputs.live] = live_html(channel.token, channel.sample_rate, live_gap_s, run_id)
            start[outputs.stream] = gr.update(visible=False)  # a fallback run may have shown it
        elif form.live_player and form.streaming:  # no channel free: this run uses the HLS player
            start[outputs.live] = LIVE_IDLE
            start[outputs.stream] = gr.update(visible=True)
        yield start
        while not run.complete:
            batch, getter = await next_batch(events, getter, STATUS_EVERY_S)
            if _stopped(handles):  # Stop (or the page gone): no later update may turn the status back to waiting
                yield {outputs.status: f"■ **Stopped:** {run.finished_count} of {len(lines)} lines finished."}
                return
            if not batch:
                if channel is not None:
                    for seg in gate.feed():  # a run held to its limit goes out without new audio
                        channel.put(seg)
                if not run.has_audio:
                    yield {outputs.status: _waiting_status(handles, started)}
                continue
            try:
                step = run.feed(batch, metrics_of)
            except LineFailed as exc:
                raise gr.Error(str(exc)) from exc
            for index in step.finished:
                files.add_line(run, index)
            for update in _step_updates(outputs, run, step, files, handles, run_id, channel, gate):
                yield update

        if channel is not None:
            for seg in gate.flush():
                channel.put(seg)
        summary = run.finish() | {"voice_route": spoken_by(model_id, voice is not None)}  # which route spoke it
        full_path = files.finish(run)
        take = Take(
            kind="speak",
            lines=list(lines),
            voice=voice_label,
            voice_strength=strength_value,
            speed=speed_value,
            seed=seed_value,
            streaming=bool(form.streaming),
            figures=summary,
            line_files=files.line_files(len(run.lines)),
            full_file=full_path,
        )
        yield {
            outputs.full: full_path,
            outputs.files: files.listing(),
            outputs.captions: captions_html(run.take_lines(), run_id),
            outputs.figures: run.figures.table(),
            outputs.history: add_take(history, take),
            outputs.status: _done_status(summary, len(run.lines), summary["voice_route"]),
        }
    finally:
        if channel is not None:
            channel.close()  # its reader ends after what is queued (an unopened one expires)
        for handle in handles:
            handle.cancel()  # no-op for finished requests; frees the engine when Stop cancelled the run
        for task in pumps:
            task.cancel()
        if getter is not None:
            getter.cancel()
        files.release()  # served (the last update named them) or stopped: the store's caps apply again
        runs.remove(session, handles)


def _step_updates(
    outputs: SpeakOutputs,
    run: SpeakRun,
    step: RunStep,
    files: RunFiles,
    handles: Sequence[Any],
    run_id: str,
    channel: LiveChannel | None = None,
    gate: SafeStart | None = None,
) -> list[dict[Any, Any]]:
    """The page updates for one step: each live-stream segment (or, with a live channel, none: the
    segments go to the page's own player, once ``gate`` says the stream is safe), then one update of
    everything else."""
    updates: list[dict[Any, Any]] = []
    if channel is not None:
        for seg in gate.feed(step.segments) if gate is not None else step.segments:
            channel.put(seg)
    else:
        updates.extend({outputs.stream: wav_bytes(seg, run.sample_rate)} for seg in step.segments)
    last = updates.pop() if updates else {}
    if step.finished:
        last.update({outputs.lines: files.line_items(run), outputs.files: files.listing(), outputs.figures: run.figures.table()})
    if step.new_words or step.finished:
        last[outputs.captions] = captions_html(run.take_lines(), run_id)
    if run.has_audio:
        last[outputs.status] = _progress_status(run, handles)
    return updates + ([last] if last else [])


async def stop(request: gr.Request, runs: ActiveRuns) -> str:
    """Cancel the engine requests of this session's run (no other session's), and answer once the run's handler
    has ended: every update it sent is then before this one, so none can turn the status back to Speaking… (one
    in flight as Stop came did, and the run, cancelled, sent nothing after it)."""
    session = owner_of(request) or "anonymous"
    count = runs.cancel(session)
    deadline = time.monotonic() + STOP_WAIT_S
    while runs.open_runs(session) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    if count:
        return f"■ **Stopped:** cancelled {count} engine request{'s' if count != 1 else ''}."
    return "■ Nothing was running."


def voice_report(
    voice_mode: str, builtin_voice: str | None, reference_clip: str | None, voice_text: str | None = None,
    request: gr.Request = None,  # type: ignore[assignment] - Gradio fills it in
) -> str:
    """The reference report for the current voice choice; a bad clip gives a warning, never a trace.

    With a typed transcript of an uploaded clip, the report is the matched voice's (it names the transcript used).
    """
    if voice_mode == MODE_UPLOAD and not reference_clip:
        return "Upload a clip (wav, flac, mp3, ogg) or record one with the microphone."
    try:
        if voice_mode == MODE_BUILTIN and is_saved_voice(builtin_voice, owner_of(request)):
            return saved_voice_report(str(builtin_voice), owner_of(request))
        clip = clip_for_report(voice_mode, builtin_voice, reference_clip)
        typed = (voice_text or "").strip()
        if voice_mode == MODE_UPLOAD and clip is not None and typed:
            from tts_app.voice import resolve_voice  # heavy: imported on first use

            report = resolve_voice(str(clip), text=typed).report  # VoiceError (a ValueError) as below
            return f"{'✓' if report.ok else '⚠'} {report.summary()}"
        return reference_report(clip)
    except (ValueError, OSError) as exc:
        gr.Warning(f"This reference clip cannot be used: {exc}")
        return f"⚠ **This reference clip cannot be used:** {exc}"


def prepare_voice(
    voice_mode: str, builtin_voice: str | None, reference_clip: str | None, voice_text: str | None = None,
    request: gr.Request = None,  # type: ignore[assignment] - Gradio fills it in
) -> None:
    """Analyse the chosen voice (an uploaded clip right after its report, a built-in one when picked)
    and build its full-strength plan, so Generate finds both ready (~1 s off the first audio).

    Runs as its own queued event (bounded like every event); a bad clip is left to the report
    and to Generate, which say why in one line.
    """
    if voice_mode == MODE_UPLOAD and not reference_clip:
        return
    try:
        voice, _label = voice_choice(voice_mode, builtin_voice, reference_clip, owner_of(request))
        if voice is None:
            return
        typed = (voice_text or "").strip() or None if voice_mode == MODE_UPLOAD else None
        profile = resolve_page_params(SpeechParams(voice=voice, voice_text=typed)).voice
        if engine_loaded():  # never load the model from here
            profile.streamer(1.0, int(get_engine().sample_rate))
    except (gr.Error, VoiceChoiceError):
        pass  # already shown by the report; Generate raises it again


def builtin_preview(name: str | None, request: gr.Request = None) -> Any:  # type: ignore[assignment]
    """The clip of a built-in voice, or a saved voice's processed reference, for the preview player."""
    if not name:
        return None
    if is_saved_voice(name, owner_of(request)):
        try:
            profile = saved_profile(name, owner_of(request))
        except ValueError:  # deleted meanwhile: nothing to preview
            return None
        # int16, as the player sends it: float32 made Gradio convert it and log a warning every time
        return profile.sample_rate, pcm16_array(profile.audio)
    try:
        return str(builtin_voice_path(name))
    except ValueError:
        return None


def on_upload(reference_clip: str | None) -> str:
    """Uploading or recording a clip switches the voice choice to it."""
    return MODE_UPLOAD if reference_clip else gr.skip()


def engine_stats() -> dict[str, Any]:
    """The engine's aggregate counters (queued, active, max batch seen, mean step time, ...)."""
    return dict(get_engine().stats())
