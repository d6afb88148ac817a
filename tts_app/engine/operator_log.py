"""What an operator reads at INFO: a refusal's cause once per client and minute, one short summary a minute.

An operator acts on a start, a model loaded or failed, a client refused (and why), and the load in a
line (requests, seconds of audio, the queue, refusals). Everything else (the engine's whole stats dict,
40 step-cost keys, 2 KB a line) is DEBUG, and /metrics has the figures for scraping. Both classes take
the caller's clock (seconds, monotonic), so a test simulates minutes without sleeping.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

WINDOW_S = 60.0
MAX_CLIENTS = 4096  # clients remembered; a flood from many addresses cannot grow this


class RefusalLog:
    """Logs each client's refusal at most once per ``window_s``; the next line says how many were left out."""

    def __init__(self, logger: logging.Logger, clock: Callable[[], float], level: int = logging.INFO,
                 window_s: float = WINDOW_S) -> None:  # fmt: skip
        self.logger, self.clock, self.level, self.window_s = logger, clock, level, window_s
        self._last: OrderedDict[str, tuple[float, int]] = OrderedDict()  # client -> (logged at, left out since)
        self._lock = threading.Lock()  # refusals come from any request's thread

    def refused(self, client: str | None, cause: str) -> bool:
        """Note that ``client`` (None: the app's own work) was refused for ``cause``; True when it was logged."""
        key = client or "the app"
        now = self.clock()
        with self._lock:
            logged_at, left_out = self._last.get(key, (None, 0))
            if logged_at is not None and now - logged_at < self.window_s:
                self._last[key] = (logged_at, left_out + 1)
                return False
            self._last[key] = (now, 0)
            self._last.move_to_end(key)
            while len(self._last) > MAX_CLIENTS:
                self._last.popitem(last=False)
        more = f" ({left_out} more refused in the last {self.window_s:g} s)" if left_out else ""
        self.logger.log(self.level, "refused %s: %s%s", key, cause, more)
        return True


@dataclass(frozen=True)
class Totals:
    """The engine's counts since it started (only ever growing)."""

    finished: int = 0
    audio_s: float = 0.0
    refused: int = 0
    failed: int = 0


class MinuteSummary:
    """At most one INFO line per ``window_s``, only when something happened in it or work is waiting;
    the whole stats dict (``details()``, computed only then) at DEBUG as often."""

    def __init__(self, logger: logging.Logger, clock: Callable[[], float], window_s: float = WINDOW_S) -> None:
        self.logger, self.clock, self.window_s = logger, clock, window_s
        self._since = clock()
        self._last = Totals()

    def due(self) -> bool:
        """True once ``window_s`` has passed since the last summary (cheap: call it every step)."""
        return self.clock() - self._since >= self.window_s

    def tick(self, totals: Totals, queued: int, running: int, details: Callable[[], dict]) -> bool:
        """Call often (each engine step); True when a summary line was written."""
        now = self.clock()
        if now - self._since < self.window_s:
            return False
        minutes = (now - self._since) / 60.0
        last, self._last, self._since = self._last, totals, now
        if self.logger.isEnabledFor(logging.DEBUG):
            self.logger.debug("engine stats: %s", details())
        done, refused, failed = totals.finished - last.finished, totals.refused - last.refused, totals.failed - last.failed
        if not (done or refused or failed or queued or running):
            return False  # a quiet engine says nothing
        self.logger.info("engine, last %.0f min: %d requests done, %.0f s of audio, %d refused, %d failed; now %d running, %d queued",
                         minutes, done, totals.audio_s - last.audio_s, refused, failed, running, queued)
        return True
