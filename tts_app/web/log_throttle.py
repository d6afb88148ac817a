"""A logging filter that lets a few identical messages through per interval and counts the rest.

A flood (thousands of "Too many open files" or accept errors a second) would otherwise fill the
disk with one line repeated; the next message let through says how many were left out.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from tts_app import settings

LIMIT_ENV = "TTS_APP_LOG_REPEAT_LIMIT"
WINDOW_ENV = "TTS_APP_LOG_REPEAT_WINDOW_S"
DEFAULT_LIMIT = settings.default(LIMIT_ENV)
DEFAULT_WINDOW_S = settings.default(WINDOW_ENV)
MAX_KEYS = 1024  # distinct messages remembered; a flood of different ones cannot grow this


@dataclass
class _Seen:
    window_start: float
    passed: int = 0
    dropped: int = 0


class RepeatFilter(logging.Filter):
    """At most ``limit`` records with the same logger, level, message text and exception type per ``window_s``."""

    def __init__(self, limit: int = DEFAULT_LIMIT, window_s: float = DEFAULT_WINDOW_S) -> None:
        super().__init__()
        self.limit = limit
        self.window_s = window_s
        self._seen: dict[tuple, _Seen] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_env(cls) -> "RepeatFilter":
        return cls(settings.value(LIMIT_ENV), settings.value(WINDOW_ENV))

    def filter(self, record: logging.LogRecord) -> bool:
        if self.limit <= 0:
            return True
        exc_type = record.exc_info[0].__name__ if record.exc_info and record.exc_info[0] else None
        try:
            text = record.getMessage()  # identical text: the same template with other values is another message
        except (TypeError, ValueError):
            text = str(record.msg)  # arguments that do not fit: the handler reports that itself
        key = (record.name, record.levelno, text, exc_type)
        now = time.monotonic()
        with self._lock:
            seen = self._seen.get(key)
            if seen is None or now - seen.window_start >= self.window_s:
                dropped = seen.dropped if seen is not None else 0
                if seen is None and len(self._seen) >= MAX_KEYS:
                    self._forget_old(now)
                seen = self._seen[key] = _Seen(window_start=now)
                if dropped:
                    record.msg = f"{record.msg} [{dropped} identical messages left out in the last {self.window_s:g} s]"
            if seen.passed >= self.limit:
                seen.dropped += 1
                return False
            seen.passed += 1
            return True

    def _forget_old(self, now: float) -> None:
        for key in [k for k, s in self._seen.items() if now - s.window_start >= self.window_s] or list(self._seen)[:MAX_KEYS // 2]:
            del self._seen[key]


def throttle_repeated_logs(logger_names: tuple[str, ...] = ("", "uvicorn", "uvicorn.error", "uvicorn.access", "asyncio")) -> RepeatFilter:
    """Attach one RepeatFilter (configured from the environment) to every handler of these loggers."""
    repeat_filter = RepeatFilter.from_env()
    for name in logger_names:
        for handler in logging.getLogger(name).handlers:
            if repeat_filter not in handler.filters:
                handler.addFilter(repeat_filter)
    return repeat_filter
