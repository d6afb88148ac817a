"""The one engine of this process, created on first use and shared by every visitor and API call."""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable

from tts_app.catalog.load_time import loading_began, loading_ended

if TYPE_CHECKING:
    from tts_app.engine import Engine

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_engine: "Engine | None" = None
# Synthesis runs below the web server's CPU priority (and, for the local demo, the
# browser's): on a 2-core machine a busy engine otherwise delays streamed segments and
# the browser's audio thread, which is heard as gaps. Idle cores still go to the engine.
ENGINE_NICENESS = 10


def _lower_priority() -> None:
    try:
        os.nice(ENGINE_NICENESS)
    except OSError as error:  # not permitted here: run at normal priority
        logger.warning("could not lower the engine's CPU priority: %s", error)


def create_lowered(factory: Callable[[], "Engine"], name: str) -> "Engine":
    """Run ``factory`` on a thread of its own, at lower priority: the engine's worker and the
    model's compute threads are started from it and inherit that priority (Linux). Every engine
    the server serves is made here, and each refuses a submission that names no client."""
    with ThreadPoolExecutor(1, thread_name_prefix=name, initializer=_lower_priority) as pool:
        engine = pool.submit(factory).result()
    engine.require_client = True
    return engine


def _create_engine() -> "Engine":
    from tts_app.engine import Engine, app_policy  # heavy (model runtime and graphs): imported on first use
    from tts_app.models.piper.precision import precision_from_env

    precision = precision_from_env()  # $TTS_APP_PRECISION, set by `python app.py --precision fast`
    return create_lowered(lambda: Engine(precision=precision, policy=app_policy()), "engine-create")


def get_engine() -> "Engine":
    """Return the process-wide engine, loading the model on the first call only."""
    global _engine
    if _engine is None:
        with _lock:
            if _engine is None:
                logger.info("loading the TTS engine")
                loading_began()
                _engine = _create_engine()
                loading_ended()  # the next start's "ready in ~N s"
                logger.info("engine ready at %d Hz", _engine.sample_rate)
    return _engine


def engine_loaded() -> bool:
    """True once ``get_engine`` has created the engine."""
    return _engine is not None


def close_engine() -> None:
    """Close the engine if one was created (server shutdown)."""
    global _engine
    with _lock:
        if _engine is not None:
            _engine.close()
            _engine = None
