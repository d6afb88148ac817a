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
from tts_app.models.available import EMBEDDED_ID, EMBEDDED_IDS
from tts_app.catalog.shared_engine import engine_loaded, get_engine
from tts_app.web.engine_calls import submitted
from tts_app.web.guards.client_identity import visitor_key
from tts_app.catalog.clone_route import spoken_by
from tts_app.web.ui.common.model_picker import check_model, model_label
from tts_app.web.ui.common.run_timeline import EMPTY as EMPTY_TIMELINE
from tts_app.web.ui.common.run_timeline import timeline_html
from tts_app.web.ui.common.text_lines import TextLimitError, parse_lines
from tts_app.web.ui.common.user_error import UserError
from tts_app.web.ui.history.takes import Take, add_take
from tts_app.web.ui.session.active_runs import ActiveRuns, Run
from tts_app.web.ui.session.owner import owner_of
from tts_app.web.ui.session.visitor_lexicon import lexicon_for
from tts_app.web.ui.speak.captions_view import EMPTY as EMPTY_CAPTIONS
from tts_app.web.ui.speak.captions_view import LiveCaptions, captions_html
from tts_app.web.live_channel import LIVE_CHANNELS, LiveChannel, LiveChannelsFull
from tts_app.web.ui.speak.api_view import ApiView
from tts_app.web.ui.speak.live_player import LIVE_IDLE, expected_gap_s, live_html
from tts_app.web.ui.speak.run_files import RunFiles
from tts_app.web.ui.speak.run_model import Event, LineFailed, RunStep, SpeakRun, next_batch, pump
from tts_app.web.ui.speak.run_status import done_status, progress_status, stopped_status, waiting_status
from tts_app.web.ui.speak.safe_start import SafeStart
from tts_app.web.ui.speak.stopping import settle
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
    timeline: gr.HTML  # the run's picture (run_timeline.py); the figures table is the API's, hidden in the page

    def as_list(self) -> list[Any]:
        return [self.stream, self.full, self.files, self.status, self.figures, self.lines, self.history, self.captions, self.live,
                self.timeline]  # fmt: skip


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


def _stopped(handles: Sequence[Any]) -> bool:
    """Whether the run's requests were cancelled (Stop, or its page gone), or are being: a request that waits
    in the queue is marked cancelled only at the engine's next step, which on a loaded machine came after
    Stop's answer (the status went on saying Starting… and froze there)."""
    return any(h.cancel_asked or h.status.value == "cancelled" for h in handles)


def resolve_page_params(params: SpeechParams, backend: Any = None) -> SpeechParams:
    """``params`` with the voice analysed once for all the lines of a run; a bad clip raises gr.Error.

    ``params.voice_text``: what the clip says, when the visitor typed it (the voice is then matched on it).
    ``backend``: the one that speaks it (a model that clones skips the filter's analysis: resolve_params).
    """
    from tts_app.engine.input_processing import resolve_params  # the voice package is heavy: first run only

    try:
        return resolve_params(params, backend)
    except ValueError as exc:  # VoiceError: one line, ready for the page
        raise UserError(f"This voice cannot be used: {exc}") from exc


def _run_params(asked: SpeechParams, owner: str | None, backend: Any = None) -> SpeechParams:
    """A run's params: the voice resolved for ``backend``, and the server's words and this visitor's own (read in
    every run)."""
    return replace(resolve_page_params(asked, backend), lexicon=lexicon_for(owner))


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
        outputs.captions: EMPTY_CAPTIONS, outputs.timeline: EMPTY_TIMELINE,
    }  # fmt: skip


def _take(form: SpeakForm, run: SpeakRun, files: RunFiles, voice_label: str, summary: dict[str, Any], full_path: str,
          stopped: bool = False) -> Take:
    """The run's History take: its lines, voice, settings and figures, the line files made and the joined one."""
    speed, seed, strength = _settings_values(form.speed, form.seed, form.voice_strength)  # checked at the run's start
    return Take(
        kind="speak · stopped" if stopped else "speak",
        lines=[line.text for line in run.lines],
        voice=voice_label,
        voice_strength=strength,
        speed=speed,
        seed=seed,
        streaming=bool(form.streaming),
        figures=summary,
        line_files=files.line_files(len(run.lines)),
        full_file=full_path,
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
    entry = runs.begin(owner_of(request) or "anonymous")  # from the click on: a Stop while the model loads counts
    view = None if form.live_player else ApiView(outputs)  # an API caller gets every output, the status as plain text
    try:
        async for update in _generate(form, history, request, outputs, runs, entry):
            yield view.complete(update) if view else update
    except gr.Error as exc:
        failed = _start_updates(outputs, f"⚠ **Not spoken:** {exc.message}") | {outputs.live: LIVE_IDLE}
        yield view.complete(failed) if view else failed
        raise
    finally:
        runs.end(entry)


async def _generate(
    form: SpeakForm, history: list[dict[str, Any]] | None, request: gr.Request, outputs: SpeakOutputs, runs: ActiveRuns,
    entry: Run,
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
    params, note = spoken_without(await asyncio.to_thread(_run_params, asked, session, engine.backend), lines, engine, model_label(model_id))
    if note:
        gr.Warning(note)
    if entry.stopped:  # Stop came while the model loaded or the voice was analysed: nothing was submitted
        entry.outcome = stopped_status(0, len(lines))
        yield {outputs.status: entry.outcome}
        return
    ahead = engine.stats()  # before this run joins: the rows its first line's next window may wait for
    handles = await submitted(lambda: _submit_all(engine, lines, params))  # cancelled with the event, even mid-submission
    runs.attach(entry, handles)  # cancelled at once if Stop came meanwhile
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
    captions = LiveCaptions(run_id)

    def metrics_of(index: int) -> dict[str, Any]:
        return handles[index].metrics.as_dict()

    try:
        start = _start_updates(outputs, waiting_status(handles, started))
        if channel is not None:
            start[outputs.live] = live_html(channel.token, channel.sample_rate, live_gap_s, run_id)
            start[outputs.stream] = gr.update(visible=False)  # a fallback run may have shown it
        elif form.live_player and form.streaming:  # no channel free: this run uses the HLS player
            start[outputs.live] = LIVE_IDLE
            start[outputs.stream] = gr.update(visible=True)
        yield start
        while not run.complete:
            batch, getter = await next_batch(events, getter, STATUS_EVERY_S)
            if entry.stopped or _stopped(handles):  # Stop (or the page gone): no later update may say waiting again
                made = await settle(pumps, events, getter, handles)  # what the lines made up to the stop
                getter = None
                for index in run.feed(made, metrics_of).finished:
                    files.add_line(run, index)
                summary = run.finish()
                full_path = files.finish(run) if run.has_audio else None  # what was made, kept
                entry.outcome = stopped_status(run.finished_count, len(lines))
                take = _take(form, run, files, voice_label, summary, full_path, stopped=True) if full_path else None
                yield _final_updates(outputs, run, files, run_id, history, take, entry.outcome, stopped=True)
                return
            if not batch:
                if channel is not None:
                    for seg in gate.feed():  # a run held to its limit goes out without new audio
                        channel.put(seg)
                if not run.has_audio:
                    yield {outputs.status: waiting_status(handles, started)}
                continue
            try:
                step = run.feed(batch, metrics_of)
            except LineFailed as exc:
                raise gr.Error(str(exc)) from exc
            for index in step.finished:
                files.add_line(run, index)
            run.release(files.wavs)  # a line written and streamed is on disk only: the run holds the lines being made
            for update in _step_updates(outputs, run, step, files, handles, captions, channel, gate):
                yield update

        if channel is not None:
            for seg in gate.flush():
                channel.put(seg)
        summary = run.finish() | {"voice_route": spoken_by(model_id, voice is not None)}  # which route spoke it
        full_path = files.finish(run)
        take = _take(form, run, files, voice_label, summary, full_path)
        yield _final_updates(outputs, run, files, run_id, history, take, done_status(summary, len(run.lines), summary["voice_route"]))
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


def _final_updates(
    outputs: SpeakOutputs, run: SpeakRun, files: RunFiles, run_id: str, history: list[dict[str, Any]] | None,
    take: Take | None, status: str, stopped: bool = False,
) -> dict[Any, Any]:
    """The last update of a run, done or stopped: its files, captions, figures and timeline, its take in History
    (the line players only when stopped: a done run showed each as it finished, and a new list re-renders them)."""
    return {
        outputs.full: files.full or None,
        outputs.files: files.listing(),
        **({outputs.lines: files.line_items(run)} if stopped else {}),
        outputs.captions: captions_html(run.take_lines(), run_id),
        outputs.figures: run.figures.table(),
        outputs.timeline: timeline_html(run.figures),
        outputs.history: add_take(history, take) if take is not None else history,
        outputs.status: status,
    }


def _step_updates(
    outputs: SpeakOutputs,
    run: SpeakRun,
    step: RunStep,
    files: RunFiles,
    handles: Sequence[Any],
    captions: LiveCaptions,
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
        last.update({outputs.lines: files.line_items(run), outputs.files: files.listing(), outputs.figures: run.figures.table(),
                     outputs.timeline: timeline_html(run.figures)})  # fmt: skip
    if step.new_words or step.finished:
        html = captions.update(run.take_lines())
        if html is not None:  # an unchanged box is not sent again
            last[outputs.captions] = html
    if run.has_audio:
        last[outputs.status] = progress_status(run, handles)
    return updates + ([last] if last else [])


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
    model: str | None = None, request: gr.Request = None,  # type: ignore[assignment] - Gradio fills it in
) -> None:
    """Analyse the chosen voice (an uploaded clip right after its report, a built-in one when picked)
    and build its full-strength plan, so Generate finds both ready (~1 s off the first audio).
    ``model``: the Speak tab's Model; a loaded model that clones gets the clip's checks and cleaning (it never
    uses the filter's analysis, which took seconds of the 2 cores its first audio then waited for) and what it
    makes of the clip (Pocket TTS: this visitor's voice state of it, at most one such build per visitor at a time:
    seconds that Generate then does not wait for); one not loaded gets nothing.

    Runs as its own queued event (bounded like every event); a bad clip is left to the report
    and to Generate, which say why in one line.
    """
    if voice_mode == MODE_UPLOAD and not reference_clip:
        return
    model_id = model if isinstance(model, str) and model else EMBEDDED_ID
    if model_id not in EMBEDDED_IDS and not model_loaded(model_id):
        return
    try:
        voice, _label = voice_choice(voice_mode, builtin_voice, reference_clip, owner_of(request))
        if voice is None:
            return
        typed = (voice_text or "").strip() or None if voice_mode == MODE_UPLOAD else None
        if model_id not in EMBEDDED_IDS:
            # The clip's checks and cleaning, then what the model makes of it before speaking (Pocket TTS: its voice
            # state, seconds of Mimi's encoder and the flow LM), for this visitor as Generate will ask: found ready.
            backend = engine_for(model_id).backend
            params = resolve_page_params(SpeechParams(voice=voice, voice_text=typed, client=visitor_key(request)), backend)
            backend.prepare_params(params, ahead=True)
            return
        profile = resolve_page_params(SpeechParams(voice=voice, voice_text=typed)).voice
        if engine_loaded():  # never load the model from here
            profile.streamer(1.0, int(get_engine().sample_rate))
    except (gr.Error, VoiceChoiceError, ModelUnavailable, ModelLoadFailed, ValueError):
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
