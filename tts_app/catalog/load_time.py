"""How long the model takes to load here: measured at each start, remembered for the next one.

The page says "Model loading… ready in ~N s" while /readyz is 503 (ui/speak/loading_status.py);
N is the last start's load time less the time spent loading so far.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

logger = logging.getLogger(__name__)

FIRST_GUESS_S = 25.0  # no start measured yet: about what a 2-core machine takes (model, warm-up)
_FILE = "load_seconds.txt"
_started: float | None = None


def _path() -> Path:
    from tts_app.models.piper.model_cache import cache_root  # tts_app.models.piper loads the model runtime (~1 s): only when used

    return cache_root() / _FILE


def loading_began() -> None:
    global _started
    _started = time.monotonic()


def loading_ended() -> None:
    """Remember this load's duration for the next start's estimate (skipped where the cache is read-only)."""
    if _started is None:
        return
    try:
        _path().parent.mkdir(parents=True, exist_ok=True)
        _path().write_text(f"{time.monotonic() - _started:.1f}\n", encoding="utf-8")
    except OSError as error:
        logger.debug("load time not remembered: %s", error)


def seconds_left() -> int:
    """The estimate of the time left until the model is ready (at least 1 s)."""
    try:
        expected = float(_path().read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        expected = FIRST_GUESS_S
    spent = time.monotonic() - _started if _started is not None else 0.0
    return max(1, round(expected - spent))
