"""The status line while models load: "Model loading… ready in ~N s" until the embedded voice is ready, then on a
GPU "Preparing the GPU…" while the GPU models capture their graphs, and a line per model of $TTS_APP_MODELS
(downloading 43% of 2.5 GB, ready, or unavailable and why) until each has settled."""

from __future__ import annotations

from typing import Any

import gradio as gr

from tts_app.catalog.fetch_jobs import any_loading, jobs
from tts_app.catalog.gpu_preparation import gpu_preparing
from tts_app.catalog.load_time import seconds_left
from tts_app.catalog.shared_engine import engine_loaded
from tts_app.web.ui.common.model_picker import refresh as refresh_model

READY = "Ready."
LOADING = "Model loading… ready in ~{s} s (you can type meanwhile; Generate waits for it)."
PREPARING = "Preparing the GPU… (you can type meanwhile; Generate waits for it)."
POLL_S = 2.0


def status_text() -> str:
    """The embedded voice's state (or the GPU's preparation), then one line per $TTS_APP_MODELS model."""
    if not engine_loaded():
        head = LOADING.format(s=seconds_left())
    else:
        head = PREPARING if gpu_preparing() else READY
    return " ".join([head, *(j.line() for j in jobs())])


def loading_status(current: str | None, *models: str | None) -> tuple[Any, ...]:
    """(status text, timer, one update per model selector): the loading lines while anything loads, then the settled
    ones; a run's own status is left alone. The selectors (their current values in ``models``) get their choices
    again once all has settled, so a model downloaded meanwhile can be picked without reloading the page."""
    ours = current in (None, "") or str(current).startswith((READY, "Model loading", "Preparing the GPU"))
    busy = not engine_loaded() or any_loading() or gpu_preparing()
    selectors = (gr.skip() if busy else refresh_model(value) for value in models)
    return (status_text() if ours else gr.skip()), gr.Timer(active=busy), *selectors
