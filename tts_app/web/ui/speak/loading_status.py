"""The status line while the model loads: "Model loading… ready in ~N s", then on a GPU "Preparing the GPU…"
while the GPU models capture their graphs, until /readyz says ready."""

from __future__ import annotations

from typing import Any

import gradio as gr

from tts_app.catalog.gpu_preparation import gpu_preparing
from tts_app.catalog.load_time import seconds_left
from tts_app.catalog.shared_engine import engine_loaded

READY = "Ready."
LOADING = "Model loading… ready in ~{s} s (you can type meanwhile; Generate waits for it)."
PREPARING = "Preparing the GPU… (you can type meanwhile; Generate waits for it)."
POLL_S = 2.0


def loading_status(current: str | None) -> tuple[Any, Any]:
    """(status text, timer): the loading line while the model loads, "Ready." once it has; a run's
    own status is left alone."""
    ours = current in (None, "", READY) or str(current).startswith(("Model loading", "Preparing the GPU"))
    if engine_loaded() and gpu_preparing():
        return (PREPARING if ours else gr.skip()), gr.Timer(active=True)
    if engine_loaded():
        return (READY if ours else gr.skip()), gr.Timer(active=False)
    return (LOADING.format(s=seconds_left()) if ours else gr.skip()), gr.Timer(active=True)
