"""Give freed heap memory back to the system when the server goes idle (glibc only).

Decoding audio, copying arrays and serving files from many threads spreads small
allocations over many glibc arenas; freed memory stays mapped in them, so RSS keeps the
peak of the busiest moment. Two measures: fewer arenas (``mallopt(M_ARENA_MAX)``, set at
start before the worker threads exist) and ``malloc_trim(0)`` once the engine has done no
work for a few seconds.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import threading
from collections.abc import Callable

from tts_app import settings

logger = logging.getLogger(__name__)

ARENAS_ENV = "TTS_APP_MALLOC_ARENAS"
IDLE_S = 3.0  # no engine step for this long counts as idle
TRIMMED = "idle: heap trimmed"  # logged at DEBUG after each idle trim: a test waits for it to read the settled RSS
_M_ARENA_MAX = -8  # glibc's mallopt parameter number


def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None  # not glibc: nothing to do


def limit_arenas() -> None:
    """Cap glibc's malloc arenas ($TTS_APP_MALLOC_ARENAS, default 4; MALLOC_ARENA_MAX wins if set)."""
    libc = _libc()
    if libc is None or "MALLOC_ARENA_MAX" in os.environ:
        return
    arenas = settings.value(ARENAS_ENV)
    if arenas > 0 and libc.mallopt(_M_ARENA_MAX, arenas) != 1:
        logger.warning("mallopt(M_ARENA_MAX, %d) failed", arenas)


def trim() -> None:
    """Return free heap pages of every arena to the system."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


class IdleTrimmer:
    """A daemon thread: after activity, once ``activity()`` has not changed for IDLE_S seconds, trim once."""

    def __init__(self, activity: Callable[[], int], idle_s: float = IDLE_S) -> None:
        self._activity = activity
        self._idle_s = idle_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="idle-trimmer", daemon=True)

    def start(self) -> "IdleTrimmer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        trimmed_at = last = self._activity()
        while not self._stop.wait(self._idle_s):
            now = self._activity()
            if now == last and now != trimmed_at:
                trim()
                trimmed_at = now
                logger.debug(TRIMMED)
            last = now


_requests_seen = [0]  # module-level: Starlette builds the middleware instance itself


def requests_seen() -> int:
    """HTTP request starts and ends RequestCounter has seen in this process."""
    return _requests_seen[0]


class RequestCounter:
    """ASGI middleware counting requests' starts and ends: the server's activity for IdleTrimmer.

    An end counts too: a long request (a whole WAV of 20 minutes) is "idle" by its start alone, so the
    one trim came while it ran and what it freed at its end stayed mapped until the next request
    (the idle after a 4,000-digit ordinal read +100 MB over the warmed idle, +16 MB after one more
    request, measured; issue 46, hole 4)."""

    def __init__(self, app: Callable) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        _requests_seen[0] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            _requests_seen[0] += 1
