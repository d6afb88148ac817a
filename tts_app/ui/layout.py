"""The page: components, their arrangement, and the events wiring them to the handlers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import gradio as gr

from tts_app.config import SPEED_MAX, SPEED_MIN
from tts_app.ui import captions_view, handlers
from tts_app.ui.ab import build_ab_tab
from tts_app.ui.api_help import api_help_markdown
from tts_app.ui.document_tab import build_document_tab
from tts_app.ui.document_tab import resume as resume_document
from tts_app.ui.history import HISTORY_HEADERS, HISTORY_TYPES, history_table, history_zip, take_audio
from tts_app.models_available import EMBEDDED_ID
from tts_app.ui.lexicon_panel import build_lexicon_panel
from tts_app.ui.live_player import LIVE_IDLE
from tts_app.ui.loading_status import POLL_S as POLL_LOADING_S
from tts_app.ui.loading_status import loading_status
from tts_app.ui.model_picker import model_dropdown
from tts_app.ui.model_picker import refresh as refresh_model
from tts_app.ui.run_figures import FIGURE_HEADERS, FIGURE_TYPES
from tts_app.ui.owner import owner_of, page_closed, watch_session_ends
from tts_app.ui.stream_encoder import tune_stream_encoder
from tts_app.ui.text_lines import MAX_LINE_CHARS, MAX_LINES
from tts_app.ui.user_error import quiet_input_validation
from tts_app.ui.voice_input import MODE_BUILTIN, MODE_UPLOAD, VOICE_MODES, default_builtin, is_own_voice, voice_choices
from tts_app.ui.voice_library import delete_voice, refresh_ab_choices, refresh_choices, save_voice
from tts_app.voice_names import builtin_voice_path

# The Gradio queue holds up to QUEUE_MAX_SIZE events and runs up to CONCURRENCY at once, so
# many sessions reach the engine together and it batches across users (Gradio's default of
# one event at a time would serialize every visitor behind one another).
QUEUE_MAX_SIZE = 128
CONCURRENCY = 32

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

HEADER = (
    "# tts_app\n"
    "Streaming text to speech with voice matching. Type one utterance per line: every line of a click is "
    "decoded in one batch, and the first line plays while the others are still decoding. "
    "Also served as an OpenAI-compatible API at `/v1/audio/speech` (see the API tab)."
)


def _history_outputs(history: list[dict[str, Any]] | None, request: gr.Request) -> tuple[Any, Any]:
    rows = history_table(history)
    archive = history_zip(history, owner_of(request))
    return rows, gr.update(value=archive, interactive=archive is not None)


def _select_take(history: list[dict[str, Any]] | None, event: gr.SelectData) -> Any:
    row = event.index[0] if isinstance(event.index, (list, tuple)) else int(event.index)
    path, caption = take_audio(history, int(row))
    return gr.update(value=path, label=caption or "Selected take")


def _cleanup(request: gr.Request) -> None:
    """The page is gone: its runs are cancelled in the engine (no one will hear them), its files and voices removed."""
    page_closed(owner_of(request))


def _delete_visibility(name: str | None, request: gr.Request) -> Any:
    """The delete button shows for the visitor's own saved voices only."""
    return gr.update(visible=is_own_voice(name, owner_of(request)))


def _mode_visibility(mode: str) -> tuple[Any, ...]:
    builtin, upload = mode == MODE_BUILTIN, mode == MODE_UPLOAD
    return (
        gr.update(visible=builtin), gr.update(visible=builtin), gr.update(visible=upload), gr.update(visible=upload),
        gr.update(visible=upload),
    )


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
            buttons=["download"],
            key=f"line-{item['index']}-{item['path']}",
            elem_classes=["line-player"],
        )


def build_demo() -> gr.Blocks:
    """Build the whole app (no model is loaded here: the engine is created on first use)."""
    tune_stream_encoder()
    first_voice = default_builtin()
    with gr.Blocks(title="tts_app · streaming text to speech", delete_cache=(1800, 3600)) as demo:
        history = gr.State([])
        line_items = gr.State([])
        gr.Markdown(HEADER, elem_id="app-header")
        with gr.Tabs() as tabs:
            with gr.Tab("Speak", id="speak"):
                with gr.Row(equal_height=False):
                    with gr.Column(scale=5, min_width=300):
                        gr.Markdown("### 1 · Voice", elem_classes=["step-title"])
                        voice_mode = gr.Radio(VOICE_MODES, value=MODE_BUILTIN, label="Voice source", show_label=False, elem_id="voice-mode")
                        with gr.Row(equal_height=True, elem_id="voice-pick-row") as pick_row:
                            with gr.Column(scale=2, min_width=160):
                                builtin = gr.Dropdown(
                                    voice_choices(), value=first_voice, label="Voice (built-in and saved)", elem_id="builtin-voice"
                                )
                                delete_btn = gr.Button(
                                    "Delete this saved voice", size="sm", variant="secondary",
                                    visible=False, elem_id="delete-voice-btn",
                                )
                            preview = gr.Audio(
                                value=str(builtin_voice_path(first_voice)) if first_voice else None,
                                label="Preview",
                                interactive=False,
                                scale=3,
                                min_width=200,
                                elem_id="voice-preview",
                            )
                        upload = gr.Audio(
                            sources=["upload", "microphone"],
                            type="filepath",
                            label="Reference clip: upload (wav, flac, mp3, ogg) or record",
                            visible=False,
                            elem_id="reference-upload",
                        )
                        voice_text = gr.Textbox(
                            label="What the clip says (optional)",
                            placeholder="Type the clip's words: the voice is matched on them more closely",
                            max_length=2000, lines=2, visible=False, elem_id="voice-text",
                        )
                        with gr.Row(equal_height=True, visible=False, elem_id="save-voice-row") as save_row:
                            save_name = gr.Textbox(
                                label="Save this voice as…", placeholder="my_voice (letters, digits, _ or -)",
                                max_length=64, scale=3, min_width=160, elem_id="save-voice-name",
                            )
                            save_btn = gr.Button("Save voice", scale=1, min_width=90, elem_id="save-voice-btn")
                        library_status = gr.Markdown(elem_id="voice-library-status")
                        strength = gr.Slider(
                            0.0, 1.0, value=1.0, step=0.05, label="Voice-matching strength",
                            info="0 keeps the model's own voice; 1 matches the reference as closely as it can.",
                        )
                        report = gr.Markdown(elem_id="reference-report")

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

                    with gr.Column(scale=6, min_width=300):
                        status = gr.Markdown("Ready.", label="Status", elem_id="run-status")
                        # The page plays the live stream itself (live_player.py, ~1 s sooner than HLS);
                        # this HLS player serves API callers, and the page when no live channel is free.
                        stream = gr.Audio(
                            label="Live stream (lines in order)",
                            streaming=True,
                            autoplay=True,
                            interactive=False,
                            visible=False,
                            # No download: a stream's address carries the session hash (Gradio's HLS
                            # route); the take downloads from "All lines, one file" instead.
                            buttons=[],
                            elem_id="stream-player",
                        )
                        live = gr.HTML(LIVE_IDLE, label="Live stream", show_label=False, elem_id="live-player", padding=False)
                        # True in a page's session (set at load), False for API callers: they keep the HLS stream.
                        live_flag = gr.State(False)
                        captions = gr.HTML(captions_view.EMPTY, label="Captions", show_label=False, elem_id="live-captions", padding=False)
                        gr.Markdown(
                            "Each line gets its own player and download below as soon as it is done.",
                            elem_classes=["muted"], elem_id="line-players-hint",
                        )
                        with gr.Column(elem_id="line-players"):
                            gr.render(inputs=[line_items])(_render_line_players)
                        full = gr.Audio(
                            label="All lines, one file", interactive=False, type="filepath", elem_id="full-player"
                        )
                        with gr.Accordion("Downloads", open=False):
                            files = gr.File(label="Line files and the joined file", file_count="multiple", interactive=False)
                        figures = gr.Dataframe(
                            headers=FIGURE_HEADERS,
                            datatype=FIGURE_TYPES,
                            label="Figures for this run (seconds; RTF = compute time / audio time)",
                            interactive=False,
                            wrap=False,  # one line per cell; the table scrolls sideways inside its box on a phone
                            elem_id="run-figures",
                        )

            with gr.Tab("A/B listening", id="ab") as ab_tab:
                ab_voices, ab_models = build_ab_tab(history)

            with gr.Tab("Document", id="document"):
                doc_job, doc_box, doc_timer = build_document_tab([voice_mode, builtin, upload, voice_text, strength, speed, seed])

            with gr.Tab("History", id="history"):
                gr.Markdown(
                    "Every take of this session, newest first; click a row to listen to it. "
                    "The zip holds each take's audio with its text, voice, settings, seed and figures."
                )
                history_df = gr.Dataframe(
                    headers=HISTORY_HEADERS,
                    datatype=HISTORY_TYPES,
                    interactive=False,
                    wrap=False,  # one line per cell: a phone scrolls the table inside its box
                    elem_id="history-table",
                    elem_classes=["wide-table"],
                )
                with gr.Row(equal_height=True):
                    take_player = gr.Audio(label="Selected take", interactive=False, scale=3, elem_id="take-player")
                    zip_btn = gr.DownloadButton(
                        "Download all takes (.zip)", value=None, interactive=False, scale=1, elem_id="history-zip"
                    )

            with gr.Tab("Pronunciation", id="lexicon"):
                build_lexicon_panel()

            with gr.Tab("API", id="api"):
                gr.Markdown(api_help_markdown(), elem_id="api-help")

        outputs = handlers.SpeakOutputs(stream, full, files, status, figures, line_items, history, captions, live)

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
            async for update in handlers.generate(form, history, request, outputs):
                yield update

        voice_inputs = [voice_mode, builtin, upload, voice_text]
        voice_mode.change(
            _mode_visibility, voice_mode, [pick_row, preview, upload, save_row, voice_text], queue=False, api_visibility="private"
        )
        voice_mode.change(handlers.voice_report, voice_inputs, report, api_name="reference_report")
        builtin.change(_delete_visibility, builtin, delete_btn, queue=False, api_visibility="private")
        builtin.change(handlers.builtin_preview, builtin, preview, api_visibility="private").then(
            handlers.voice_report, voice_inputs, report, api_visibility="private"
        ).then(handlers.prepare_voice, voice_inputs, None, show_progress="hidden", api_visibility="private")
        upload.change(handlers.on_upload, upload, voice_mode, api_visibility="private").then(
            handlers.voice_report, voice_inputs, report, api_visibility="private"
        ).then(handlers.prepare_voice, voice_inputs, None, show_progress="hidden", api_visibility="private")
        streaming.change(lambda on: gr.update(visible=bool(on)), streaming, live, queue=False, api_visibility="private")
        # The page, unlike an API caller, plays the stream itself: it says so once loaded.
        demo.load(lambda: True, None, live_flag, queue=False, api_visibility="private")
        run = generate_btn.click(
            generate,
            [text, voice_mode, builtin, upload, strength, speed, seed, streaming, history, voice_text, normalize, model, live_flag],
            outputs.as_list(),
            api_name="generate",
            show_progress="hidden",  # the status box tells progress and errors: no per-output spinners or "Error" pills
        )
        save_btn.click(save_voice, [save_name, upload, voice_text], [library_status, voice_mode, builtin], api_visibility="private")
        voice_text.blur(handlers.voice_report, voice_inputs, report, api_visibility="private")
        delete_btn.click(delete_voice, [builtin, save_name], [library_status, builtin, save_name], api_visibility="private")
        ab_tab.select(refresh_ab_choices, ab_voices, ab_voices, queue=False, api_visibility="private")
        stop_btn.click(handlers.stop, None, status, cancels=[run], api_name="stop")
        history.change(_history_outputs, history, [history_df, zip_btn], api_visibility="private")
        history_df.select(_select_take, history, take_player, api_visibility="private")
        gr.api(handlers.engine_stats, api_name="engine_stats")
        demo.load(handlers.voice_report, voice_inputs, report, api_visibility="private").then(
            handlers.prepare_voice, voice_inputs, None, show_progress="hidden", api_visibility="private"
        )
        demo.load(refresh_choices, builtin, builtin, queue=False, api_visibility="private")
        demo.load(
            lambda *current: tuple(refresh_model(value) for value in current),
            [model, *ab_models], [model, *ab_models], queue=False, api_visibility="private",
        )
        demo.load(resume_document, None, [doc_job, doc_box, doc_timer, tabs], show_progress="hidden", api_visibility="private")
        load_timer = gr.Timer(POLL_LOADING_S, active=False)  # the status says when the model will be ready
        demo.load(loading_status, status, [status, load_timer], queue=False, api_visibility="private")
        load_timer.tick(loading_status, status, [status, load_timer], queue=False, api_visibility="private")
        demo.unload(_cleanup)
        watch_session_ends()

    quiet_input_validation(demo)  # after every component exists
    demo.queue(max_size=QUEUE_MAX_SIZE, default_concurrency_limit=CONCURRENCY)
    return demo
