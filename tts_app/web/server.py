"""One server: the OpenAI-compatible API and the Gradio app on one FastAPI app, one engine."""

from __future__ import annotations

import logging
import os
import threading

import gradio as gr
import uvicorn
from fastapi import FastAPI
from fastapi.responses import JSONResponse, Response

from tts_app.framework import gradio_stop_events, mark_launched
from tts_app.web.api.captioned_speech import router as captioned_router
from tts_app.web.api.documents import DOCUMENT_BODY_BYTES
from tts_app.web.api.documents import router as documents_router
from tts_app.web.api.live import router as live_router
from tts_app.web.api.metrics import router as metrics_router
from tts_app.web.api.openai_speech import router as openai_router
from tts_app.web.guards.connection_guard import ConnectionLimits, guarded_protocol, raise_open_file_limit
from tts_app.web.guards.cors import ApiCors, cors_origins
from tts_app.audio.ffmpeg_path import ensure_ffmpeg_on_path
from tts_app.backends.params import SpeechParams
from tts_app.web.guards.file_guard import FileDataGuard
from tts_app.web.guards.forwarded import ResolveClient
from tts_app.web.guards.gradio_bodies import GradioBodies
from tts_app.web.guards.session_guard import SessionGuard
from tts_app.web.guards.visitor_requests import VisitorRequestCap
from tts_app.web.log_throttle import throttle_repeated_logs
from tts_app.web.memory_trim import IdleTrimmer, RequestCounter, limit_arenas, requests_seen
from tts_app.catalog.engines import close_model_engines
from tts_app.catalog.fetch_jobs import any_loading, jobs
from tts_app.catalog.model_fetch import start_model_loads
from tts_app.storage.output_store import output_store, store_root
from tts_app.web.guards.request_guard import RequestGuard, RequestLimits
from tts_app.web.session_sweeper import HeartbeatTracker, start_session_sweeper
from tts_app.web.event_streams import EventStreamTracker
from tts_app.web.guards.dev_routes import DevRoutesOff
from tts_app.web.guards.swept_files import SweptFiles
from tts_app.catalog.gpu_preparation import announce as announce_gpu_preparation
from tts_app.catalog.gpu_preparation import gpu_preparing, qwen3_steps
from tts_app.catalog.gpu_preparation import prepare as prepare_gpu
from tts_app.catalog.shared_engine import close_engine, engine_loaded, get_engine
from tts_app.web.shutdown import on_stop, stopping_server
from tts_app.web.ui.theme import APP_CSS, APP_HEAD, app_theme
from tts_app.storage.upload_paths import upload_root
from tts_app.web.guards.upload_quota import UploadQuota
from tts_app.voice.library import BUILTIN_VOICES_DIR

logger = logging.getLogger(__name__)

DEFAULT_PORT = 7860
SHUTDOWN_GRACE_S = 5  # open streams get this long to end after a stop signal


def server_address() -> tuple[str, int]:
    """Host and port from the environment: GRADIO_SERVER_NAME/GRADIO_SERVER_PORT, then PORT; 0.0.0.0:7860."""
    host = os.environ.get("GRADIO_SERVER_NAME", "0.0.0.0")
    port = os.environ.get("GRADIO_SERVER_PORT") or os.environ.get("PORT") or str(DEFAULT_PORT)
    return host, int(port)


def create_app(demo: gr.Blocks, host: str = "0.0.0.0", port: int = DEFAULT_PORT) -> FastAPI:
    """The FastAPI app with ``/v1/...`` routes and ``demo`` (queue already configured) mounted at ``/``."""
    app = FastAPI(title="tts_app", docs_url="/v1/docs", openapi_url="/v1/openapi.json", redoc_url=None)
    app.include_router(openai_router)
    app.include_router(captioned_router)
    app.include_router(documents_router)
    app.include_router(live_router)
    app.include_router(metrics_router)

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:
        # Alive as soon as the server answers; "engine" says whether the model has loaded yet.
        return {"status": "ok", "engine": "ready" if engine_loaded() else "loading"}

    @app.get("/readyz", include_in_schema=False)
    async def readyz() -> Response:
        # For load balancers and scripts: 503 while the embedded voice loads, a $TTS_APP_MODELS model downloads and
        # loads, or (on a GPU) the GPU models capture their graphs (gpu_preparation), then 200. A model whose
        # download failed does not hold it at 503: the embedded voice serves.
        models = {j.model_id: j.status.value for j in jobs()}
        if not engine_loaded() or any_loading():
            return JSONResponse({"status": "loading", "models": models}, status_code=503)
        if gpu_preparing():
            return JSONResponse({"status": "preparing the GPU", "models": models}, status_code=503)
        return JSONResponse({"status": "ready", "models": models})

    app = gr.mount_gradio_app(
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
        # Built-in voice previews are outputs read from the package, wherever the server was started from.
        allowed_paths=[str(BUILTIN_VOICES_DIR)],
    )
    # Files named in requests: Gradio checks that an event's input files lie in its upload
    # folder only for Blocks that count as launched, and mount_gradio_app never sets that
    # (the check is silently skipped: CVE-2024-51751's class). Marking the Blocks launched
    # turns Gradio's own check on; FileDataGuard checks again, before Gradio touches a file.
    mark_launched(demo)
    app.add_middleware(FileDataGuard)
    app.add_middleware(RequestCounter)
    app.add_middleware(HeartbeatTracker)
    app.add_middleware(EventStreamTracker)  # who reads a run's events (the run watchdog cancels what nobody hears)
    app.add_middleware(DevRoutesOff)  # Gradio's development routes (reload watcher, vibe editor, profiler): 404
    app.add_middleware(SweptFiles, store=store_root)  # a file the store swept: 404, not Starlette's 500 and traceback
    app.add_middleware(ApiCors, origins=cors_origins())  # no origins: /v1 preflights refused (not Gradio's localhost rule)
    # A session hash names the page that first used it, nothing else; stream URLs carry a token, not the hash.
    # Malformed bodies refused in one line before Gradio parses them, and its own errors made one line.
    app.add_middleware(GradioBodies, blocks=demo)
    app.add_middleware(SessionGuard, blocks=demo)
    # Outermost: headers, content types, body caps and the upload quota before anything reads a byte.
    limits = RequestLimits.from_env({"/v1/documents": DOCUMENT_BODY_BYTES})
    app.add_middleware(RequestGuard, limits=limits, quota=UploadQuota.from_env(upload_root))
    # Outside it, who is asking: the visitor behind a trusted proxy, then its open requests capped.
    limits_now = ConnectionLimits.from_env()
    app.add_middleware(VisitorRequestCap, per_visitor=limits_now.per_address)
    app.add_middleware(ResolveClient, trusted=limits_now.trusted)
    for stop_event in gradio_stop_events(app):
        # Gradio ends its heartbeat streams on this event, which a mounted app only gets after
        # uvicorn's grace has run out: set it at the stop signal so pages disconnect at once.
        on_stop(stop_event.set)
    output_store()  # generated files: age and size caps, swept in the background from now on
    return app


# Three lines of a few seconds, run together: every stage warm, and steps timed with several rows and
# full decoder windows, as a page's run has them (the live player predicts its start from them).
WARM_UP_LINES = (
    "Ready. Every stage of the engine has run once.",
    "So the first visitor to this page does not wait for it,",
    "and the live player knows how long a step takes.",
)
WARM_UP_CLIENT = "app:warm-up"  # the engine's client for the app's own work (a visitor's key is "addr:...")


def _warm_engine() -> None:
    try:
        engine = get_engine()
        # Three short lines through the whole engine: the first visitor finds every stage warm, and
        # the engine has timed steps (the live player's start and the HLS pre-buffer are sized from them).
        for handle in engine.submit_many(list(WARM_UP_LINES), SpeechParams(client=WARM_UP_CLIENT)):
            handle.result(timeout=120)
        # The voice matcher's libraries (scipy.signal: ~2 s to import cold) and the model voice's
        # analysis, so the first uploaded clip is analysed without them.
        from tts_app.voice.model_voice import model_voice

        model_voice()
    except (OSError, RuntimeError, ValueError, ImportError, TimeoutError):
        logger.exception("engine warm-up failed; the first request will retry")


def launch(demo: gr.Blocks) -> None:
    """Serve ``demo`` and the API on the environment's host and port until interrupted."""
    logging.basicConfig(level=os.environ.get("LOG_LEVEL", "INFO"), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    limit_arenas()
    raise_open_file_limit()  # the soft limit is often 1,024: a busy page server needs more sockets
    ensure_ffmpeg_on_path()  # streamed audio needs ffmpeg: the wheel's (faster start), else the system's
    host, port = server_address()
    app = create_app(demo, host=host, port=port)
    start_session_sweeper(demo)  # Gradio keeps every session's state otherwise (API calls: one session each)
    IdleTrimmer(requests_seen).start()  # RSS back down once no request has come for a few seconds
    # Load the model in the background so the page is up at once and the first visitor waits less.
    threading.Thread(target=_warm_engine, name="engine-warmup", daemon=True).start()
    start_model_loads()  # the operator's models ($TTS_APP_MODELS downloaded first) loaded in the background, the embedded voice serving meanwhile
    # On a GPU every Qwen3-TTS checkpoint found loads and captures its graphs before /readyz says ready; without
    # CUDA or such a checkpoint this ends at once.
    announce_gpu_preparation()
    threading.Thread(target=prepare_gpu, args=(qwen3_steps,), name="gpu-prepare", daemon=True).start()
    logger.info("serving on http://%s:%d (OpenAI API at /v1/audio/speech)", host, port)
    try:
        connections = ConnectionLimits.from_env()  # after raise_open_file_limit: the caps follow the file limit
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
                                http=guarded_protocol(connections), backlog=connections.backlog,
                                proxy_headers=False)  # ResolveClient decides who is asking (uvicorn trusts 127.0.0.1)
        throttle_repeated_logs()  # after uvicorn's logging set-up: its handlers get the filter too
        stopping_server(config).run()
    finally:
        close_model_engines()
        close_engine()
