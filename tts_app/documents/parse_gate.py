"""Documents are read in (parsed) one at a time, and one client's at most one at a time.

Parsing is pure Python on the server's threads: a 200,000-character Markdown table took 3.6 s
of CPU, and four at once held the interpreter lock so long that ``/healthz`` took 1.85 s. Behind
this gate at most ``AT_ONCE`` parse at a time; the next wait their turn for up to ``WAIT_S``,
then are refused (503), so a queue of parses cannot grow without bound either.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

AT_ONCE = 1  # one parse runs; the event loop keeps the interpreter lock for the rest of the server
WAIT_S = 10.0  # a turn waited for at most this long (about three of the largest parses ahead)


class ParseBusy(RuntimeError):
    """No turn to parse came within the wait."""


class ParseGate:
    """At most ``at_once`` parses at a time, one per client key; counts what it let through."""

    def __init__(self, at_once: int = AT_ONCE, wait_s: float = WAIT_S) -> None:
        self.at_once, self.wait_s = at_once, wait_s
        self._cond = threading.Condition()
        self._running = 0
        self._parsing: Counter[str] = Counter()  # client key -> parses running
        self.parsed = 0  # parses run since start (the test of "refused before parsing" counts them)
        self.most_at_once = 0  # the most that ran together since start

    @contextmanager
    def turn(self, keys: Iterable[str]) -> Iterator[None]:
        """Hold a turn to parse for the client ``keys``; ParseBusy if none comes within ``wait_s``."""
        keys = frozenset(keys)
        deadline = time.monotonic() + self.wait_s
        with self._cond:
            while self._running >= self.at_once or any(self._parsing[k] for k in keys):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ParseBusy("other documents are being read in; try again in a few seconds")
                self._cond.wait(left)
            self._running += 1
            self._parsing.update(keys)
            self.most_at_once = max(self.most_at_once, self._running)
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                self._parsing.subtract(keys)
                for key in keys:
                    if self._parsing[key] <= 0:
                        del self._parsing[key]
                self.parsed += 1
                self._cond.notify_all()

    def figures(self) -> dict[str, int]:
        """Parses run since start, running now, and the most at once (for /metrics)."""
        with self._cond:
            return {"parsed": self.parsed, "running": self._running, "most_at_once": self.most_at_once}


GATE = ParseGate()
