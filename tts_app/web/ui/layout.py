"""The page: its header and tabs, each tab laid out by its own package, and the events that span tabs."""

from __future__ import annotations

import gradio as gr

from tts_app.framework import session_events
from tts_app.web.ui.ab.tab import build_ab_tab
from tts_app.web.ui.api_help.tab import build_api_tab, origin_markdown
from tts_app.web.ui.common.model_picker import refresh as refresh_model
from tts_app.web.ui.common.user_error import quiet_input_validation
from tts_app.web.ui.documents.tab import build_document_tab
from tts_app.web.ui.documents.tab import resume as resume_document
from tts_app.web.ui.history.tab import build_history_tab
from tts_app.web.ui.pronunciation.panel import build_lexicon_panel
from tts_app.web.ui.session.active_runs import ActiveRuns
from tts_app.web.ui.session.owner import owner_of, page_closed, watch_session_ends
from tts_app.web.ui.session.run_watchdog import RunWatchdog
from tts_app.web.ui.speak.loading_status import POLL_S as POLL_LOADING_S
from tts_app.web.ui.speak.loading_status import loading_status
from tts_app.web.ui.speak.stream_encoder import tune_stream_encoder
from tts_app.web.ui.speak.tab import build_speak_tab, wire_speak_tab
from tts_app.web.ui.voices.voice_library import refresh_ab_choices

# The Gradio queue holds up to QUEUE_MAX_SIZE events and runs up to CONCURRENCY at once, so
# many sessions reach the engine together and it batches across users (Gradio's default of
# one event at a time would serialize every visitor behind one another).
QUEUE_MAX_SIZE = 128
CONCURRENCY = 32

HEADER = (
    "# tts_app\n"
    "Streaming text to speech with voice matching. Type one utterance per line: every line of a click is "
    "decoded in one batch, and the first line plays while the others are still decoding. "
    "Also served as an OpenAI-compatible API at `/v1/audio/speech` (see the API tab)."
)


def build_demo() -> gr.Blocks:
    """Build the whole app (no model is loaded here: the engine is created on first use)."""
    tune_stream_encoder()
    runs = ActiveRuns()  # this page's running engine requests by session: Stop and a closed page cancel them

    def cleanup(request: gr.Request) -> None:
        """The page is gone: its runs are cancelled in the engine (no one will hear them), its files and voices removed."""
        page_closed(owner_of(request), runs)

    with gr.Blocks(title="tts_app · streaming text to speech", delete_cache=(1800, 3600)) as demo:
        history = gr.State([])  # the session's takes, added by Speak and A/B, listed by History
        gr.Markdown(HEADER, elem_id="app-header")
        with gr.Tabs() as tabs:
            with gr.Tab("Speak", id="speak"):
                speak = build_speak_tab(history)
            with gr.Tab("A/B listening", id="ab") as ab_tab:
                ab_voices, ab_models = build_ab_tab(history, runs)
            with gr.Tab("Document", id="document"):
                doc_job, doc_box, doc_timer = build_document_tab(speak.voice_and_settings())
            with gr.Tab("History", id="history"):
                build_history_tab(history)
            with gr.Tab("Pronunciation", id="lexicon"):
                build_lexicon_panel(runs)
            with gr.Tab("API", id="api"):
                api_help = build_api_tab()

        wire_speak_tab(demo, speak, runs)
        ab_tab.select(refresh_ab_choices, ab_voices, ab_voices, queue=False, api_visibility="private")
        models = [speak.model, *ab_models]
        demo.load(lambda *current: tuple(refresh_model(value) for value in current), models, models, queue=False, api_visibility="private")
        demo.load(resume_document, None, [doc_job, doc_box, doc_timer, tabs], show_progress="hidden", api_visibility="private")
        status = speak.outputs.status
        load_timer = gr.Timer(POLL_LOADING_S, active=False)  # the status says when the model will be ready
        demo.load(loading_status, status, [status, load_timer], queue=False, api_visibility="private")
        # The ticks also give the selectors their choices again once all has loaded ($TTS_APP_MODELS downloads).
        load_timer.tick(loading_status, [status, *models], [status, load_timer, *models], queue=False, api_visibility="private")
        demo.load(origin_markdown, None, api_help, queue=False, api_visibility="private")  # snippets name this server
        demo.unload(cleanup)
        watch_session_ends()
    # A run nobody hears (no page, no reader of its events) is cancelled within seconds; the events of a
    # session are Gradio's own record (a REST caller reads by event id).
    runs.on_add = RunWatchdog(runs, lambda session: session_events(demo, session)).ensure_started

    quiet_input_validation(demo)  # after every component exists
    demo.queue(max_size=QUEUE_MAX_SIZE, default_concurrency_limit=CONCURRENCY)
    return demo
