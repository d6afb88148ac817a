"""The Speak tab's first step: the voice (built-in, saved or uploaded), its report and the saved-voice library."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from tts_app.web.ui.common.players import player_buttons

from tts_app.web.ui.session.owner import owner_of
from tts_app.web.ui.speak import handlers
from tts_app.web.ui.voices.voice_input import MODE_BUILTIN, MODE_UPLOAD, VOICE_MODES, default_builtin, is_own_voice, voice_choices
from tts_app.web.ui.voices.voice_library import delete_voice, refresh_choices, save_voice
from tts_app.catalog.clone_route import voice_panel_line
from tts_app.catalog.voices import builtin_voice_path


@dataclass
class VoiceStep:
    """The voice step's components (the Document tab reads the same voice choice)."""

    first_voice: str | None  # the built-in voice selected when the page opens
    mode: gr.Radio
    pick_row: gr.Row
    builtin: gr.Dropdown
    delete_btn: gr.Button
    preview: gr.Audio
    upload: gr.Audio
    voice_text: gr.Textbox
    save_row: gr.Row
    save_name: gr.Textbox
    save_btn: gr.Button
    library_status: gr.Markdown
    strength: gr.Slider
    report: gr.Markdown
    route: gr.Markdown  # where a clip goes: cloned by a ready model, or the embedded voice's filter and how to clone

    def inputs(self) -> list[Any]:
        """The components that name the voice, in the order the voice handlers take them."""
        return [self.mode, self.builtin, self.upload, self.voice_text]


def _delete_visibility(name: str | None, request: gr.Request) -> Any:
    """The delete button shows for the visitor's own saved voices only."""
    return gr.update(visible=is_own_voice(name, owner_of(request)))


def _mode_visibility(mode: str) -> tuple[Any, ...]:
    builtin, upload = mode == MODE_BUILTIN, mode == MODE_UPLOAD
    return (
        gr.update(visible=builtin), gr.update(visible=builtin), gr.update(visible=upload), gr.update(visible=upload),
        gr.update(visible=upload),
    )


def build_voice_step() -> VoiceStep:
    """Lay out the voice step inside the current column."""
    first_voice = default_builtin()
    gr.Markdown("### 1 · Voice", elem_classes=["step-title"])
    mode = gr.Radio(VOICE_MODES, value=MODE_BUILTIN, label="Voice source", show_label=False, elem_id="voice-mode")
    route = gr.Markdown(voice_panel_line(), elem_id="clone-route")  # cloned, or a filter and how to clone
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
            buttons=player_buttons(),  # share only on a Space
            elem_id="voice-preview",
        )
    upload = gr.Audio(
        sources=["upload", "microphone"],
        type="filepath",
        label="Reference clip: upload (wav, flac, mp3, ogg) or record",
        visible=False,
        buttons=player_buttons(),
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
    report = gr.Markdown(label="Reference report", elem_id="reference-report")  # its name in the API tab
    return VoiceStep(
        first_voice, mode, pick_row, builtin, delete_btn, preview, upload, voice_text, save_row, save_name, save_btn,
        library_status, strength, report, route,
    )


def wire_voice_step(demo: gr.Blocks, voice: VoiceStep, model: gr.Dropdown | None = None) -> None:
    """The voice step's events: visibility by source, preview, report, early analysis, save and delete.
    ``model``: the Speak tab's Model (the early analysis is the one its route uses)."""
    inputs = voice.inputs()
    prepare_inputs = inputs + ([model] if model is not None else [])
    voice.mode.change(
        _mode_visibility, voice.mode, [voice.pick_row, voice.preview, voice.upload, voice.save_row, voice.voice_text],
        queue=False, api_visibility="private",
    )
    voice.mode.change(handlers.voice_report, inputs, voice.report, api_name="reference_report")
    voice.builtin.change(_delete_visibility, voice.builtin, voice.delete_btn, queue=False, api_visibility="private")
    voice.builtin.change(handlers.builtin_preview, voice.builtin, voice.preview, api_visibility="private").then(
        handlers.voice_report, inputs, voice.report, api_visibility="private"
    ).then(handlers.prepare_voice, prepare_inputs, None, show_progress="hidden", api_visibility="private")
    voice.upload.change(handlers.on_upload, voice.upload, voice.mode, api_visibility="private").then(
        handlers.voice_report, inputs, voice.report, api_visibility="private"
    ).then(handlers.prepare_voice, prepare_inputs, None, show_progress="hidden", api_visibility="private")
    voice.save_btn.click(
        save_voice, [voice.save_name, voice.upload, voice.voice_text], [voice.library_status, voice.mode, voice.builtin],
        api_visibility="private",
    )
    voice.voice_text.blur(handlers.voice_report, inputs, voice.report, api_visibility="private")
    voice.delete_btn.click(
        delete_voice, [voice.builtin, voice.save_name], [voice.library_status, voice.builtin, voice.save_name],
        api_visibility="private",
    )
    demo.load(handlers.voice_report, inputs, voice.report, api_visibility="private").then(
        handlers.prepare_voice, prepare_inputs, None, show_progress="hidden", api_visibility="private"
    )
    demo.load(refresh_choices, voice.builtin, voice.builtin, queue=False, api_visibility="private")
    demo.load(voice_panel_line, None, voice.route, queue=False, api_visibility="private")
