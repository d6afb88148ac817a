"""The engine requests each session has in flight, so Stop can cancel exactly that session's run.

One ActiveRuns belongs to one page (build_demo makes it): nothing here is shared at module level.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any


class ActiveRuns:
    """Thread-safe map from a session id to the engine handles of its running requests."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, list[Any]] = {}
        self._open: dict[str, int] = {}  # runs added and not yet removed, by session (cancel leaves them open)
        self.on_add: Callable[[], None] | None = None  # the run watchdog starts with the first run

    def add(self, session: str, handles: Iterable[Any]) -> None:
        """Record ``handles`` as running for ``session``."""
        with self._lock:
            self._runs.setdefault(session, []).extend(handles)
            self._open[session] = self._open.get(session, 0) + 1
        if self.on_add is not None:
            self.on_add()

    def sessions(self) -> list[str]:
        """The sessions with requests running now."""
        with self._lock:
            return list(self._runs)

    def remove(self, session: str, handles: Iterable[Any]) -> None:
        """Forget ``handles`` (their run ended: call once a run, with all its handles)."""
        gone = {id(h) for h in handles}
        with self._lock:
            left = self._open.get(session, 0) - 1
            if left > 0:
                self._open[session] = left
            else:
                self._open.pop(session, None)
            kept = [h for h in self._runs.get(session, []) if id(h) not in gone]
            if kept:
                self._runs[session] = kept
            else:
                self._runs.pop(session, None)

    def open_runs(self, session: str) -> int:
        """How many of ``session``'s runs have not ended yet (a cancelled run is open until its handler ends)."""
        with self._lock:
            return self._open.get(session, 0)

    def cancel(self, session: str) -> int:
        """Cancel every request ``session`` has running; return how many were cancelled."""
        with self._lock:
            handles = self._runs.pop(session, [])
        for handle in handles:
            handle.cancel()
        return len(handles)

    @contextmanager
    def held(self, session: str, handles: Iterable[Any]) -> Iterator[None]:
        """``handles`` recorded for ``session`` while the block runs (Stop and the run watchdog reach them), and
        cancelled when it ends: an event that finished, failed, timed out or was cancelled leaves no engine work."""
        handles = list(handles)
        self.add(session, handles)
        try:
            yield
        finally:
            for handle in handles:
                handle.cancel()  # a no-op for a finished request
            self.remove(session, handles)

