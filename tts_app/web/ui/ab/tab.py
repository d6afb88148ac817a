"""A/B listening: one text rendered under two settings side by side, optionally blind until revealed."""

from __future__ import annotations

import asyncio
import logging
import random
from dataclasses import asdict, dataclass
from typing import Any

import gradio as gr

from tts_app.models.available import EMBEDDED_ID as MODEL_ID
from tts_app.models.piper.config import SPEED_MAX, SPEED_MIN
from tts_app.catalog.engines import ModelLoadFailed, ModelUnavailable, engine_for
from tts_app.backends.params import SpeechParams
from tts_app.web.engine_calls import submitted
from tts_app.web.guards.client_identity import visitor_key
from tts_app.web.ui.common.players import player_buttons
from tts_app.catalog.clone_route import cloning_model, spoken_by
from tts_app.web.ui.common.model_picker import check_model, model_dropdown
from tts_app.web.ui.common.run_figures import RunFigures
from tts_app.web.ui.common.text_lines import MAX_LINE_CHARS
from tts_app.web.ui.common.user_error import UserError
from tts_app.web.ui.history.preferences import contender, tally_markdown
from tts_app.web.ui.history.takes import Take, add_take
from tts_app.web.ui.session.active_runs import ActiveRuns
from tts_app.web.ui.session.files import new_file
from tts_app.web.ui.session.owner import owner_of
from tts_app.web.ui.session.visitor_voices import VISITOR_VOICES
from tts_app.web.ui.speak.handlers import resolve_page_params, spoken_without
from tts_app.web.ui.voices.voice_input import voice_choices
from tts_app.catalog.voices import DEFAULT_VOICE, builtin_voices
from tts_app.audio.wav_io import GrowingWav
from tts_app.voice.errors import shown_name

logger = logging.getLogger(__name__)

PRESET_VOICES = "Voice A vs voice B"
PRESET_MATCH = "Matched vs unmatched"
PRESET_SEEDS = "Seed 1 vs seed 2"
PRESET_ROUTES = "Cloned vs filter"  # one clip: cloned by a ready cloning model, and the embedded voice's filter
PRESET_CUSTOM = "Custom"
PRESETS = [PRESET_VOICES, PRESET_MATCH, PRESET_SEEDS, PRESET_ROUTES, PRESET_CUSTOM]
DEFAULT_TEXT = "The birch canoe slid on the smooth planks."


@dataclass
class SideControls:
    """One side's settings controls."""

    model: gr.Dropdown
    voice: gr.Dropdown
    strength: gr.Slider
    seed: gr.Number
    speed: gr.Slider

    def as_list(self) -> list[gr.components.Component]:
        return [self.model, self.voice, self.strength, self.seed, self.speed]


def _voice_choices() -> list[str]:
    return [DEFAULT_VOICE, *voice_choices()]


def _two_voices() -> tuple[str, str]:
    names = list(builtin_voices())
    first = "lj_female_us" if "lj_female_us" in names else (names[0] if names else DEFAULT_VOICE)
    others = [n for n in names if n != first]
    second = "f5_ref_en" if "f5_ref_en" in others else (others[0] if others else DEFAULT_VOICE)
    return first, second


def preset_values(preset: str) -> list[Any]:
    """Side A then side B values (model, voice, strength, seed, speed) for a preset; Custom leaves them."""
    first, second = _two_voices()
    if preset == PRESET_VOICES:
        return [MODEL_ID, first, 1.0, 0, 1.0, MODEL_ID, second, 1.0, 0, 1.0]
    if preset == PRESET_MATCH:
        return [MODEL_ID, first, 1.0, 0, 1.0, MODEL_ID, first, 0.0, 0, 1.0]
    if preset == PRESET_SEEDS:
        return [MODEL_ID, first, 1.0, 1, 1.0, MODEL_ID, first, 1.0, 2, 1.0]
    if preset == PRESET_ROUTES:  # with no cloning model ready, both sides are the filter (the voice panel says why)
        return [cloning_model() or MODEL_ID, first, 1.0, 0, 1.0, MODEL_ID, first, 1.0, 0, 1.0]
    return [gr.skip()] * 10


def _describe(settings: dict[str, Any]) -> str:
    return (
        f"{settings['voice']} · strength {settings['strength']:.2f} · seed {settings['seed']} · "
        f"speed {settings['speed']:.2f} · {settings['model']} · {spoken_by(settings['model'], settings['voice'] != DEFAULT_VOICE)}"
    )


def _side_settings(model: str, voice: str, strength: float, seed: float, speed: float, owner: str | None = None) -> dict[str, Any]:
    model = check_model(model)  # one of the models found here, or a one-line error
    if voice != DEFAULT_VOICE and voice not in voice_choices(owner):
        raise UserError(f"Unknown voice {shown_name(voice)}.")
    try:
        values = {"model": model, "voice": voice, "strength": float(strength), "seed": int(seed), "speed": float(speed)}
    except (TypeError, ValueError) as exc:
        raise UserError(f"Invalid setting: {exc}") from exc
    if not SPEED_MIN <= values["speed"] <= SPEED_MAX:
        raise UserError(f"Speed must be between {SPEED_MIN:g} and {SPEED_MAX:g}.")
    return values


def _submit_pair(text: str, sides: list[dict[str, Any]], owner: str | None = None, client: str | None = None) -> list[Any]:
    from tts_app.engine import EngineBusy  # start-up: the engine and its model runtime load on first use

    try:
        engines = [engine_for(side["model"]) for side in sides]  # both sides on one model share its batches
    except ModelLoadFailed as exc:  # its message names the model and says why
        raise UserError(str(exc)) from exc
    except (ModelUnavailable, OSError, RuntimeError) as exc:
        raise UserError(f"The model cannot be loaded: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from exc
    # A voice of the visitor's own goes as its profile; the others by name.
    voices = [None if side["voice"] == DEFAULT_VOICE else VISITOR_VOICES.get(owner, side["voice"]) or side["voice"] for side in sides]
    handles: list[Any] = []
    try:
        # ``client``: the visitor (its fair share, as its Speak runs and API calls); None was the app's own work, never refused.
        asked = [SpeechParams(side["seed"], side["speed"], voice, voice_strength=side["strength"], client=client) for side, voice in zip(sides, voices)]
        params = [resolve_page_params(p, engine.backend) for p, engine in zip(asked, engines)]
        for p, engine, side in zip(params, engines, sides, strict=True):
            kept, note = spoken_without(p, [text], engine, side["model"])
            if note:
                gr.Warning(note)
            handles.append(engine.submit(text, kept))
    except EngineBusy as exc:
        for handle in handles:
            handle.cancel()
        raise UserError("The server is busy (the engine queue is full). Try again in a moment.") from exc
    except ValueError as exc:
        for handle in handles:
            handle.cancel()
        raise UserError(str(exc)) from exc
    return handles


async def _to_file(handle: Any, path: str) -> None:
    """A side's audio written to ``path`` as it comes, 16-bit: no float32 copy of the whole (two sides of a
    2,000-character line at the slowest speed were four of ~70 MB each)."""
    wav = GrowingWav(path, handle.engine.sample_rate)
    try:
        async for audio in handle.astream(forget=True):
            wav.write(audio)
    finally:
        wav.close()
    await handle.aresult()  # the request's error or cancellation, as before (its audio is forgotten: cheap)


BLIND_VOICE = "hidden until revealed"


def _take_of(position: int, side: dict[str, Any], figures: dict[str, Any], path: str, text: str, pair: int, shown: bool) -> Take:
    """One sample's History take. A blind one names its place only (sample 1 or 2), never its side or settings:
    everything that tells the sides apart (voice, model, seed, figures) waits for the reveal."""
    if not shown:
        return Take(kind=f"A/B sample {position}", lines=[text], voice=BLIND_VOICE, voice_strength=None, speed=None,
                    seed=None, streaming=False, figures={}, line_files=[path], pair=pair, position=position)  # fmt: skip
    return Take(kind=f"A/B {position} = {side['label']}", lines=[text], voice=side["voice"], voice_strength=side["strength"],
                speed=side["speed"], seed=side["seed"], streaming=False, figures=figures, line_files=[path],
                note=side["model"], pair=pair, position=position, contender=contender(side))  # fmt: skip


def _revealed_history(history: list[dict[str, Any]] | None, state: dict[str, Any]) -> list[dict[str, Any]]:
    """``history`` with the pair of ``state`` shown as it was: each sample's side, settings and figures, and its vote."""
    takes = [dict(take) for take in history or []]
    vote = state.get("vote")
    for take in takes:
        if take.get("pair") != state["pair"] or take.get("position") not in (1, 2):
            continue
        position = int(take["position"])
        label = state["order"][position - 1]
        side = {**state["sides"][label], "label": label}
        shown = asdict(_take_of(position, side, state["figures"][label], take["line_files"][0], take["lines"][0], state["pair"], True))
        shown["kind"] += " · preferred" if vote == label else ""
        shown["preferred"] = None if vote is None else vote == label
        take.update({k: v for k, v in shown.items() if k not in ("created", "take")})
    return takes


async def render_pair(
    text: str,
    blind: bool,
    history: list[dict[str, Any]] | None,
    previous: dict[str, Any] | None,
    request: gr.Request,
    runs: ActiveRuns,
    *side_values: Any,
) -> tuple[Any, ...]:
    """Render A and B in one engine batch; returns left player, right player, the message, A/B state, history.

    Blind, the players get the sides in a random order under names of their place (sample-1.wav,
    sample-2.wav: one random folder each), and History lists them by place until the reveal. A pair
    still unrevealed when the next is rendered is shown in History then (it can no longer be voted on).
    ``runs``: the page's engine work by session, where the pair's requests are while they render.
    """
    utterance = " ".join(line.strip() for line in (text or "").splitlines() if line.strip())
    if not utterance:
        raise UserError("Enter a sentence to compare.")
    if len(utterance) > MAX_LINE_CHARS:
        raise UserError(f"The text has {len(utterance):,} characters; the limit is {MAX_LINE_CHARS:,}.")
    session = owner_of(request)
    per_side = len(side_values) // 2  # each side's controls, in SideControls.as_list order (a new choice adds one)
    sides = [_side_settings(*side_values[:per_side], owner=session), _side_settings(*side_values[per_side:], owner=session)]
    handles = await submitted(lambda: _submit_pair(utterance, sides, session, visitor_key(request)))
    order = ["A", "B"]
    if blind:
        random.shuffle(order)
    by_label = dict(zip("AB", handles, strict=True))
    # Named by place, not by side: the name, the player's download and its URL say nothing of which is which.
    paths = [str(new_file(session, f"sample-{position}", ".wav")) for position in (1, 2)]
    try:
        with runs.held(session or "anonymous", handles):  # Stop and the run watchdog reach them; cancelled at the end
            await asyncio.gather(*(_to_file(by_label[label], path) for label, path in zip(order, paths, strict=True)))
    except Exception as exc:  # noqa: BLE001 - an engine failure becomes a message in the page, not a trace
        logger.exception("A/B render failed")
        raise gr.Error(f"Rendering failed: {exc}") from exc

    takes = list(history or [])
    if previous and previous.get("blind") and not previous.get("revealed"):
        takes = _revealed_history(takes, previous)
    pair = max((int(t.get("pair") or 0) for t in takes), default=0) + 1
    figures = {}
    for label, handle in by_label.items():
        run = RunFigures()
        metrics = handle.metrics.as_dict()
        run.add_line(1, utterance, metrics)
        run.total_s = metrics.get("total_s")
        run.time_to_first_audio_s = metrics.get("time_to_first_audio_s")
        figures[label] = run.summary()
    state = {"pair": pair, "order": order, "sides": {"A": sides[0], "B": sides[1]}, "blind": bool(blind),
             "revealed": not blind, "vote": None, "figures": figures}  # fmt: skip
    for position, (label, path) in enumerate(zip(order, paths, strict=True), start=1):  # in place order: take numbers say nothing
        take = _take_of(position, {**sides["AB".index(label)], "label": label}, figures[label], path, utterance, pair, not blind)
        takes = add_take(takes, take)
    if blind:
        message = "**Blind mode:** listen to both, pick the one you prefer, then reveal which was which."
    else:
        message = _reveal_text(state).replace("**Revealed.**", "Blind mode is off:")
    return paths[0], paths[1], message, state, takes


def _reveal_text(state: dict[str, Any], history: list[dict[str, Any]] | None = None, note: str = "") -> str:
    order = state["order"]
    sides = state["sides"]
    lines = [f"- **Sample 1** was **{order[0]}**: {_describe(sides[order[0]])}",
             f"- **Sample 2** was **{order[1]}**: {_describe(sides[order[1]])}"]  # fmt: skip
    header = "**Revealed.**"
    vote = state.get("vote")
    if vote is not None:
        header = f"**You preferred sample {order.index(vote) + 1}**, which was **{vote}**."
    if note:
        header += f" {note}"
    board = tally_markdown(history)
    return "\n".join([header, *lines, *(["", board] if board else [])])


def reveal(state: dict[str, Any] | None, history: list[dict[str, Any]] | None = None) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """Show which sample was which, here and in History; returns the message, the A/B state and the history."""
    if not state:
        raise UserError("Render a pair first.")
    shown = {**state, "revealed": True}
    takes = _revealed_history(history, shown) if state.get("blind") else list(history or [])
    return _reveal_text(shown, takes), shown, takes


def prefer(choice: str, state: dict[str, Any] | None, history: list[dict[str, Any]] | None = None) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """Record a preference for the left (Sample 1) or right (Sample 2) player, then reveal.

    Only a blind pair's first vote before its reveal counts in the tally: a vote after seeing the
    sides (or with blind off) would not be a blind one."""
    if not state:
        raise UserError("Render a pair first.")
    if not state.get("blind") or state.get("revealed") or state.get("vote") is not None:
        why = "blind mode was off" if not state.get("blind") else "this pair was already revealed"
        text, shown, takes = reveal(state, history)
        return _reveal_text(shown, takes, f"(Not counted: {why}.)"), shown, takes
    picked = state["order"][0] if choice == "Sample 1" else state["order"][1]
    return reveal({**state, "vote": picked}, history)


def _side_controls(label: str) -> SideControls:
    with gr.Column(variant="panel", elem_classes=["ab-side"]):
        gr.Markdown(f"#### Side {label}")
        model = model_dropdown(f"ab-model-{label.lower()}")
        voice = gr.Dropdown(
            _voice_choices(), value=_two_voices()[0 if label == "A" else 1], label="Voice", elem_id=f"ab-voice-{label.lower()}"
        )
        strength = gr.Slider(0.0, 1.0, value=1.0, step=0.05, label="Voice-matching strength")
        with gr.Row():
            seed = gr.Number(value=0, precision=0, minimum=0, label="Seed")
            speed = gr.Slider(SPEED_MIN, SPEED_MAX, value=1.0, step=0.05, label="Speed")
    return SideControls(model, voice, strength, seed, speed)


def build_ab_tab(history: gr.State, runs: ActiveRuns) -> tuple[list[gr.Dropdown], list[gr.Dropdown]]:
    """The A/B tab's components and events (call inside ``with gr.Tab(...)``); returns its voice and model lists.
    ``runs``: the page's engine work by session."""
    gr.Markdown(
        "Render one sentence under two settings and listen side by side: voice A vs voice B, "
        "matched vs unmatched (strength 1 vs 0), seed 1 vs seed 2. Turn on **blind** to hide which is which."
    )
    with gr.Row(equal_height=True):
        text = gr.Textbox(value=DEFAULT_TEXT, label="Text", lines=2, max_lines=4, scale=3)
        preset = gr.Radio(PRESETS, value=PRESET_VOICES, label="Compare", scale=2)
    with gr.Row():
        side_a = _side_controls("A")
        side_b = _side_controls("B")
    with gr.Row(equal_height=True):
        blind = gr.Checkbox(value=True, label="Blind: hide which side is which until revealed")
        render = gr.Button("Render A and B", variant="primary", elem_id="ab-render")
    with gr.Row():
        left = gr.Audio(label="Sample 1", interactive=False, buttons=player_buttons(), elem_id="ab-left")
        right = gr.Audio(label="Sample 2", interactive=False, buttons=player_buttons(), elem_id="ab-right")
    with gr.Row():
        prefer_left = gr.Button("Prefer sample 1", size="sm", elem_id="ab-prefer-1")
        prefer_right = gr.Button("Prefer sample 2", size="sm", elem_id="ab-prefer-2")
        reveal_btn = gr.Button("Reveal", size="sm", variant="secondary", elem_id="ab-reveal-btn")
    reveal_md = gr.Markdown(label="A/B result", elem_id="ab-reveal")
    state = gr.State(None)

    controls = side_a.as_list() + side_b.as_list()

    async def ab_render(
        text: str,
        blind: bool,
        history: list[dict[str, Any]] | None,
        previous: dict[str, Any] | None,
        a_model: str, a_voice: str, a_strength: float, a_seed: float, a_speed: float,
        b_model: str, b_voice: str, b_strength: float, b_seed: float, b_speed: float,
        request: gr.Request,
    ) -> tuple[Any, ...]:
        """Render ``text`` under settings A and B in one engine batch (blind: shuffled, labels hidden)."""
        return await render_pair(
            text, blind, history, previous, request, runs,
            a_model, a_voice, a_strength, a_seed, a_speed, b_model, b_voice, b_strength, b_seed, b_speed,
        )

    preset.change(preset_values, preset, controls, api_visibility="private", queue=False)
    render.click(
        ab_render,
        [text, blind, history, state, *controls],
        [left, right, reveal_md, state, history],
        api_name="ab_render",
    )
    reveal_btn.click(reveal, [state, history], [reveal_md, state, history], api_name="ab_reveal")
    for button, choice in ((prefer_left, "Sample 1"), (prefer_right, "Sample 2")):
        button.click(lambda s, h, c=choice: prefer(c, s, h), [state, history], [reveal_md, state, history], api_visibility="private")
    return [side_a.voice, side_b.voice], [side_a.model, side_b.model]
