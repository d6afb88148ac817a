"""The Speak tab: the voice, text and settings form on the left, the run's stream and outputs on the right."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import gradio as gr

from tts_app.models.piper.config import SPEED_MAX, SPEED_MIN
from tts_app.models.available import EMBEDDED_ID
from tts_app.web.ui.common.players import player_buttons
from tts_app.web.ui.common.model_picker import model_dropdown
from tts_app.web.ui.common import run_timeline
from tts_app.web.ui.common.run_figures import FIGURE_HEADERS, FIGURE_TYPES
from tts_app.web.ui.common.text_lines import MAX_LINE_CHARS, MAX_LINES
from tts_app.web.ui.session.active_runs import ActiveRuns
from tts_app.web.ui.speak import captions_view, handlers, stopping
from tts_app.web.ui.speak.live_player import LIVE_IDLE
from tts_app.web.ui.speak.voice_step import VoiceStep, build_voice_step, wire_voice_step
from tts_app.web.ui.voices.voice_input import MODE_BUILTIN

EXAMPLES = [
    [
        "The birch canoe slid on the smooth planks.\n"
        "Glue the sheet to the dark blue background.\n"
        "It's easy to tell the depth of a well."
    ],
    [
        "Hello! This is a quick demo of streaming speech.\n"
        "Each line is its own utterance, and all of them are decoded together in one batch.\n"
        "The first line starts playing while the later ones are still being decoded."
    ],
    [
        "Dr. Smith paid $12.50 for 3 coffees on Jan. 5th.\n"
        "The meeting moved to 3:30 p.m. in room 101."
    ],
]


# In the page, on Generate: where the outputs column is not beside the form (a phone), bring its top into view.
SHOW_OUTPUTS_JS = """() => {
  const out = document.querySelector('#speak-outputs'), btn = document.querySelector('#generate-btn');
  if (!out || !btn) return;
  const o = out.getBoundingClientRect(), b = btn.getBoundingClientRect();
  if (o.top >= b.bottom - 1 || o.bottom <= 0 || o.top >= window.innerHeight) out.scrollIntoView({behavior: 'smooth', block: 'start'});
}"""


@dataclass
class SpeakTab:
    """The Speak tab's components: the form (voice, text, settings, buttons) and the run's outputs."""

    voice: VoiceStep
    text: gr.Textbox
    model: gr.Dropdown
    speed: gr.Slider
    seed: gr.Number
    streaming: gr.Checkbox
    normalize: gr.Checkbox
    generate_btn: gr.Button
    stop_btn: gr.Button
    live_flag: gr.State  # True in a page's session (set at load), False for API callers: they keep the HLS stream
    outputs: handlers.SpeakOutputs

    def voice_and_settings(self) -> list[Any]:
        """The voice and settings a Document job reads from this tab, in the order it takes them."""
        voice = self.voice
        return [voice.mode, voice.builtin, voice.upload, voice.voice_text, voice.strength, self.speed, self.seed]


def _render_line_players(items: list[dict[str, str]] | None) -> None:
    # Players only, never a placeholder component: an unkeyed Markdown here was handed the first
    # line player's file by the page when the render swapped it out ("e.trim is not a function").
    if not items:
        return
    for item in items:
        text = item["text"] if len(item["text"]) <= 70 else item["text"][:67] + "…"
        gr.Audio(
            value=item["path"],
            label=f"Line {item['index']} · {text}",
            interactive=False,
            buttons=player_buttons(),
            key=f"line-{item['index']}-{item['path']}",
            elem_classes=["line-player"],
        )


def _build_outputs(history: gr.State, line_items: gr.State) -> tuple[handlers.SpeakOutputs, gr.State]:
    """The right-hand column: status, live stream, captions, line players, the joined file and the figures."""
    status = gr.Markdown("Ready.", label="Status", elem_id="run-status")
    # The page plays the live stream itself (live_player.py, ~1 s sooner than HLS);
    # this HLS player serves API callers, and the page when no live channel is free.
    stream = gr.Audio(
        label="Live stream (lines in order)",
        streaming=True,
        autoplay=True,
        interactive=False,
        visible=False,
        # No download: the take downloads from "All lines, one file". The stream's
        # address carries a per-run token, not the session hash (guards/session_guard.py).
        buttons=[],
        elem_id="stream-player",
    )
    live = gr.HTML(LIVE_IDLE, label="Live stream", show_label=False, elem_id="live-player", padding=False)
    live_flag = gr.State(False)
    captions = gr.HTML(captions_view.EMPTY, label="Captions", show_label=False, elem_id="live-captions", padding=False)
    timeline = gr.HTML(run_timeline.EMPTY, label="Run timeline", show_label=False, elem_id="run-timeline", padding=False)
    gr.Markdown(
        "Each line gets its own player and download below as soon as it is done.",
        elem_classes=["muted"], elem_id="line-players-hint",
    )
    with gr.Column(elem_id="line-players"):
        gr.render(inputs=[line_items])(_render_line_players)
    full = gr.Audio(label="All lines, one file", interactive=False, type="filepath", buttons=player_buttons(), elem_id="full-player")
    with gr.Accordion("Downloads", open=False):
        files = gr.File(label="Line files and the joined file", file_count="multiple", interactive=False)
    # The figures as a table are the API's (/generate's fifth value); the page shows the timeline above instead.
    figures = gr.Dataframe(
        headers=FIGURE_HEADERS,
        datatype=FIGURE_TYPES,
        label="Figures for this run (seconds; RTF = compute time / audio time)",
        interactive=False,
        visible=False,
    )
    outputs = handlers.SpeakOutputs(stream, full, files, status, figures, line_items, history, captions, live, timeline)
    return outputs, live_flag


def build_speak_tab(history: gr.State) -> SpeakTab:
    """Lay out the Speak tab inside the current tab; each run adds its take to ``history``."""
    line_items = gr.State([])  # the finished lines' players of the current run
    with gr.Row(equal_height=False):
        with gr.Column(scale=5, min_width=300):
            voice = build_voice_step()

            gr.Markdown("### 2 · Text", elem_classes=["step-title"])
            text = gr.Textbox(
                value=EXAMPLES[0][0],
                label=f"One utterance per line (up to {MAX_LINES} lines, {MAX_LINE_CHARS:,} characters a line)",
                lines=5,
                max_lines=14,
                elem_id="text-input",
            )
            gr.Examples(EXAMPLES, inputs=[text], label="Examples")

            gr.Markdown("### 3 · Settings", elem_classes=["step-title"])
            model = model_dropdown("speak-model")
            with gr.Row(equal_height=True):
                speed = gr.Slider(SPEED_MIN, SPEED_MAX, value=1.0, step=0.05, label="Speed", scale=3)
                seed = gr.Number(value=0, precision=0, minimum=0, label="Seed", scale=1)
                streaming = gr.Checkbox(value=True, label="Stream", scale=1, elem_id="streaming-toggle")
            normalize = gr.Checkbox(
                value=True, label="Read numbers, dates and abbreviations as words", elem_id="normalize-toggle",
                info="Off: the text is read as written ($5 is 'dollar five').",
            )
            with gr.Row():
                generate_btn = gr.Button("Generate", variant="primary", scale=3, elem_id="generate-btn")
                stop_btn = gr.Button("Stop", variant="stop", scale=1, elem_id="stop-btn")

        # On a wide screen the outputs column stays in view while the form scrolls (theme.py: sticky), so Generate
        # and what it makes are on screen together at 1280x800; stacked on a phone, a click scrolls to them.
        with gr.Column(scale=6, min_width=300, elem_id="speak-outputs"):
            outputs, live_flag = _build_outputs(history, line_items)
    return SpeakTab(voice, text, model, speed, seed, streaming, normalize, generate_btn, stop_btn, live_flag, outputs)


def wire_speak_tab(demo: gr.Blocks, tab: SpeakTab, runs: ActiveRuns) -> None:
    """The Speak tab's events: Generate (api_name "generate"), Stop ("stop"), the engine's counters and the voice step's.

    ``runs`` records each session's engine requests while its Generate runs, so Stop cancels that session's only.
    """
    outputs = tab.outputs
    first_voice = tab.voice.first_voice

    async def generate(  # defaults: what gradio_client shows as optional
        text: str,
        voice_mode: str = MODE_BUILTIN,
        builtin_voice: str | None = first_voice,
        reference_clip: str | None = None,
        voice_strength: float = 1.0,
        speed: float = 1.0,
        seed: float = 0,
        streaming: bool = True,
        history: list[dict[str, Any]] | None = None,
        voice_text: str | None = None,
        normalize_text: bool = True,
        model: str | None = EMBEDDED_ID,
        live_player: bool = False,
        request: gr.Request = None,  # type: ignore[assignment] - Gradio fills it in
    ) -> AsyncIterator[dict[Any, Any]]:
        """Speak each non-empty line of the text (one engine batch), streaming the lines in order."""
        form = handlers.SpeakForm(
            text, voice_mode, builtin_voice, reference_clip, voice_strength, speed, seed, streaming, voice_text,
            normalize_text, model, bool(live_player),
        )
        async for update in handlers.generate(form, history, request, outputs, runs):
            yield update

    async def stop(request: gr.Request) -> str:
        """Cancel the engine requests of this session's run (no other session's); says what finished and what was cancelled."""
        return await stopping.stop(request, runs)

    voice = tab.voice
    tab.streaming.change(lambda on: gr.update(visible=bool(on)), tab.streaming, outputs.live, queue=False, api_visibility="private")
    # The page, unlike an API caller, plays the stream itself: it says so once loaded.
    demo.load(lambda: True, None, tab.live_flag, queue=False, api_visibility="private")
    tab.generate_btn.click(None, None, None, js=SHOW_OUTPUTS_JS, queue=False, api_visibility="private")
    tab.generate_btn.click(
        generate,
        [
            tab.text, voice.mode, voice.builtin, voice.upload, voice.strength, tab.speed, tab.seed, tab.streaming,
            outputs.history, voice.voice_text, tab.normalize, tab.model, tab.live_flag,
        ],
        outputs.as_list(),
        api_name="generate",
        show_progress="hidden",  # the status box tells progress and errors: no per-output spinners or "Error" pills
    )
    # No ``cancels``: the run's handler sees the Stop, keeps what was made (History, the joined file) and ends.
    tab.stop_btn.click(stop, None, outputs.status, api_name="stop")
    gr.api(handlers.engine_stats, api_name="engine_stats")
    wire_voice_step(demo, voice, tab.model)
