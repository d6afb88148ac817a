"""tts_app: `python app.py` serves the Gradio page and the OpenAI-compatible API on one port.

Host and port come from GRADIO_SERVER_NAME / GRADIO_SERVER_PORT (or PORT), default 0.0.0.0:7860,
as Hugging Face Spaces expects. The model loads once per process, on first use.
"""

from __future__ import annotations

from tts_app.server import launch
from tts_app.ui.layout import build_demo

demo = build_demo()

if __name__ == "__main__":
    launch(demo)
