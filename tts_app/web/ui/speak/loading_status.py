"""The status line while the model loads: "Model loading… ready in ~N s" until /readyz says ready."""

from __future__ import annotations

from typing import Any

import gradio as gr

from tts_app.catalog.load_time import seconds_left
from tts_app.catalog.shared_engine import engine_loaded

READY = "Ready."
LOADING = "Model loading… ready in ~{s} s (you can type meanwhile; Generate waits for it)."
POLL_S = 2.0


def loading_status(current: str | None) -> tuple[Any, Any]:
    """(status text, timer): the loading line while the model loads, "Ready." once it has; a run's
    own status is left alone."""
    ours = current in (None, "", READY) or str(current).startswith("Model loading")
    if engine_loaded():
        return (READY if ours else gr.skip()), gr.Timer(active=False)
    return (LOADING.format(s=seconds_left()) if ours else gr.skip()), gr.Timer(active=True)
