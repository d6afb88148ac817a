"""A/B listening: one text rendered under two settings side by side, optionally blind until revealed."""

from __future__ import annotations

import asyncio
import logging
import random
from dataclasses import dataclass
from typing import Any

import gradio as gr

from tts_app.models.available import EMBEDDED_ID as MODEL_ID
from tts_app.models.piper.config import SPEED_MAX, SPEED_MIN
from tts_app.catalog.engines import ModelLoadFailed, ModelUnavailable, engine_for
from tts_app.backends.params import SpeechParams
from tts_app.web.guards.client_identity import visitor_key
from tts_app.catalog.clone_route import cloning_model, spoken_by
from tts_app.web.ui.common.model_picker import check_model, model_dropdown
from tts_app.web.ui.common.run_figures import RunFigures
from tts_app.web.ui.common.text_lines import MAX_LINE_CHARS
from tts_app.web.ui.common.user_error import UserError
from tts_app.web.ui.history.takes import Take, add_take
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
        params = [resolve_page_params(p) for p in asked]
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


async def render_pair(
    text: str,
    blind: bool,
    history: list[dict[str, Any]] | None,
    request: gr.Request,
    *side_values: Any,
) -> tuple[Any, ...]:
    """Render A and B in one engine batch; returns left player, right player, reveal text, A/B state, history."""
    utterance = " ".join(line.strip() for line in (text or "").splitlines() if line.strip())
    if not utterance:
        raise UserError("Enter a sentence to compare.")
    if len(utterance) > MAX_LINE_CHARS:
        raise UserError(f"The text has {len(utterance):,} characters; the limit is {MAX_LINE_CHARS:,}.")
    session = owner_of(request)
    sides = [_side_settings(*side_values[:5], owner=session), _side_settings(*side_values[5:10], owner=session)]
    handles = await asyncio.to_thread(_submit_pair, utterance, sides, session, visitor_key(request))
    paths = [str(new_file(session, f"ab-{label}", ".wav")) for label in "AB"]
    try:
        await asyncio.gather(*(_to_file(h, path) for h, path in zip(handles, paths, strict=True)))
    except Exception as exc:  # noqa: BLE001 - an engine failure becomes a message in the page, not a trace
        logger.exception("A/B render failed")
        raise gr.Error(f"Rendering failed: {exc}") from exc
    finally:
        for handle in handles:
            handle.cancel()

    order = ["A", "B"]
    if blind:
        random.shuffle(order)
    state = {"order": order, "sides": {"A": sides[0], "B": sides[1]}, "blind": bool(blind), "votes": []}
    takes = history
    for label, handle, path in zip("AB", handles, paths, strict=True):
        figures = RunFigures()
        figures.add_line(1, utterance, handle.metrics.as_dict())
        metrics = handle.metrics.as_dict()
        figures.total_s = metrics.get("total_s")
        figures.time_to_first_audio_s = metrics.get("time_to_first_audio_s")
        side = state["sides"][label]
        takes = add_take(
            takes,
            Take(
                kind=f"A/B {label}",
                lines=[utterance],
                voice=side["voice"],
                voice_strength=side["strength"],
                speed=side["speed"],
                seed=side["seed"],
                streaming=False,
                figures=figures.summary(),
                line_files=[path],
                note=side["model"],
            ),
        )
    by_label = dict(zip("AB", paths, strict=True))
    left, right = by_label[order[0]], by_label[order[1]]
    if blind:
        message = "**Blind mode:** listen to both, pick the one you prefer, then reveal which was which."
    else:
        message = _reveal_text(state).replace("**Revealed.**", "Blind mode is off:")
    return left, right, message, state, takes


def _reveal_text(state: dict[str, Any], choice: str | None = None) -> str:
    order = state["order"]
    sides = state["sides"]
    lines = [f"- **Sample 1** was **{order[0]}**: {_describe(sides[order[0]])}",
             f"- **Sample 2** was **{order[1]}**: {_describe(sides[order[1]])}"]
    header = "**Revealed.**"
    if choice is not None:
        header = f"**You preferred {choice}**, which was **{order[0] if choice == 'Sample 1' else order[1]}**."
    tally = state.get("votes", [])
    if tally:
        wins_a = sum(1 for v in tally if v == "A")
        header += f" Votes this session: A {wins_a}, B {len(tally) - wins_a}."
    return "\n".join([header, *lines])


def reveal(state: dict[str, Any] | None) -> str:
    """Show which sample was which."""
    if not state:
        raise UserError("Render a pair first.")
    return _reveal_text(state)


def prefer(choice: str, state: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """Record a preference for the left (Sample 1) or right (Sample 2) player, then reveal."""
    if not state:
        raise UserError("Render a pair first.")
    new_state = dict(state)
    picked = state["order"][0] if choice == "Sample 1" else state["order"][1]
    new_state["votes"] = [*state.get("votes", []), picked]
    return _reveal_text(new_state, choice), new_state


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


def build_ab_tab(history: gr.State) -> tuple[list[gr.Dropdown], list[gr.Dropdown]]:
    """The A/B tab's components and events (call inside ``with gr.Tab(...)``); returns its voice and model lists."""
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
        left = gr.Audio(label="Sample 1", interactive=False, elem_id="ab-left")
        right = gr.Audio(label="Sample 2", interactive=False, elem_id="ab-right")
    with gr.Row():
        prefer_left = gr.Button("Prefer sample 1", size="sm")
        prefer_right = gr.Button("Prefer sample 2", size="sm")
        reveal_btn = gr.Button("Reveal", size="sm", variant="secondary")
    reveal_md = gr.Markdown(elem_id="ab-reveal")
    state = gr.State(None)

    controls = side_a.as_list() + side_b.as_list()

    async def ab_render(
        text: str,
        blind: bool,
        history: list[dict[str, Any]] | None,
        a_model: str, a_voice: str, a_strength: float, a_seed: float, a_speed: float,
        b_model: str, b_voice: str, b_strength: float, b_seed: float, b_speed: float,
        request: gr.Request,
    ) -> tuple[Any, ...]:
        """Render ``text`` under settings A and B in one engine batch (blind: shuffled, labels hidden)."""
        return await render_pair(
            text, blind, history, request,
            a_model, a_voice, a_strength, a_seed, a_speed, b_model, b_voice, b_strength, b_seed, b_speed,
        )

    preset.change(preset_values, preset, controls, api_visibility="private", queue=False)
    render.click(
        ab_render,
        [text, blind, history, *controls],
        [left, right, reveal_md, state, history],
        api_name="ab_render",
    )
    reveal_btn.click(reveal, state, reveal_md, api_name="ab_reveal")
    prefer_left.click(lambda s: prefer("Sample 1", s), state, [reveal_md, state], api_visibility="private")
    prefer_right.click(lambda s: prefer("Sample 2", s), state, [reveal_md, state], api_visibility="private")
    return [side_a.voice, side_b.voice], [side_a.model, side_b.model]
