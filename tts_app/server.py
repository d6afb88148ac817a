"""One server: the OpenAI-compatible API and the Gradio app on one FastAPI app, one engine."""

from __future__ import annotations

import logging
import os
import threading

import gradio as gr
import uvicorn
from fastapi import FastAPI

from tts_app.api.openai_speech import router as openai_router
from tts_app.ffmpeg_path import ensure_ffmpeg_on_path
from tts_app.shared_engine import close_engine, get_engine
from tts_app.ui.theme import APP_CSS, APP_HEAD, app_theme

logger = logging.getLogger(__name__)

DEFAULT_PORT = 7860


def server_address() -> tuple[str, int]:
    """Host and port from the environment: GRADIO_SERVER_NAME/GRADIO_SERVER_PORT, then PORT; 0.0.0.0:7860."""
    host = os.environ.get("GRADIO_SERVER_NAME", "0.0.0.0")
    port = os.environ.get("GRADIO_SERVER_PORT") or os.environ.get("PORT") or str(DEFAULT_PORT)
    return host, int(port)


def create_app(demo: gr.Blocks, host: str = "0.0.0.0", port: int = DEFAULT_PORT) -> FastAPI:
    """The FastAPI app with ``/v1/...`` routes and ``demo`` (queue already configured) mounted at ``/``."""
    app = FastAPI(title="tts_app", docs_url="/v1/docs", openapi_url="/v1/openapi.json", redoc_url=None)
    app.include_router(openai_router)

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return gr.mount_gradio_app(
        app,
        demo,
        path="/",
        server_name=host,
        server_port=port,
        theme=app_theme(),
        css=APP_CSS,
        head=APP_HEAD,
        footer_links=["api", "gradio"],
        ssr_mode=False,  # no Node server: one Python process serves everything (Spaces included)
        show_error=True,
        max_file_size="50mb",
    )


def _warm_engine() -> None:
    try:
        get_engine()
    except (OSError, RuntimeError, ValueError, ImportError):
        logger.exception("engine warm-up failed; the first request will retry")


def launch(demo: gr.Blocks) -> None:
    """Serve ``demo`` and the API on the environment's host and port until interrupted."""
    logging.basicConfig(level=os.environ.get("LOG_LEVEL", "INFO"), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    ensure_ffmpeg_on_path()  # streamed audio needs ffmpeg: the system's, else the wheel's
    host, port = server_address()
    app = create_app(demo, host=host, port=port)
    # Load the model in the background so the page is up at once and the first visitor waits less.
    threading.Thread(target=_warm_engine, name="engine-warmup", daemon=True).start()
    logger.info("serving on http://%s:%d (OpenAI API at /v1/audio/speech)", host, port)
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=5)
    finally:
        close_engine()
