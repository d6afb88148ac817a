"""The one engine of this process, created on first use and shared by every visitor and API call."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tts_app.engine import Engine

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_engine: "Engine | None" = None


def get_engine() -> "Engine":
    """Return the process-wide engine, loading the model on the first call only."""
    global _engine
    if _engine is None:
        with _lock:
            if _engine is None:
                from tts_app.engine import Engine  # heavy (onnxruntime, model graphs): imported on first use

                logger.info("loading the TTS engine")
                _engine = Engine()
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
