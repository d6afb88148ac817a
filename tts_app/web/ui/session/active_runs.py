"""The runs each session has going, so Stop can cancel exactly that session's run and say what it cancelled.

A run is begun when Generate starts (before the model loads or the voice is analysed), gets its
engine requests once they are submitted, and ends when its handler ends. Stop marks the session's
runs stopped and cancels their unfinished requests: a run stopped before it submitted cancels its
requests the moment it attaches them, and its handler sees ``stopped`` and keeps what was made.

One ActiveRuns belongs to one page (build_demo makes it): nothing here is shared at module level.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Cancelled:
    """What one Stop did: the requests it cancelled, of how many the session's runs had."""

    cancelled: int = 0
    total: int = 0

    @property
    def finished(self) -> int:
        return self.total - self.cancelled


@dataclass(eq=False)
class Run:
    """One Generate run of a session: its engine requests (once submitted) and whether Stop came."""

    session: str
    handles: list[Any] = field(default_factory=list)
    stopped: bool = False
    outcome: str = ""  # a stopped run's account of what finished, set by its handler (Stop answers with it)


class ActiveRuns:
    """Thread-safe map from a session id to its runs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, list[Run]] = {}
        self.on_add: Callable[[], None] | None = None  # the run watchdog starts with the first run

    def begin(self, session: str) -> Run:
        """A new run of ``session``; ``end`` it when its handler ends."""
        run = Run(session)
        with self._lock:
            self._runs.setdefault(session, []).append(run)
        if self.on_add is not None:
            self.on_add()
        return run

    def attach(self, run: Run, handles: Iterable[Any]) -> None:
        """The run's engine requests; cancelled at once when Stop came while the run was starting."""
        handles = list(handles)
        with self._lock:
            run.handles.extend(handles)
            stopped = run.stopped
        if stopped:
            for handle in handles:
                handle.cancel()

    def add(self, session: str, handles: Iterable[Any]) -> Run:
        """``begin`` and ``attach`` in one (a run whose requests exist from its start)."""
        run = self.begin(session)
        self.attach(run, handles)
        return run

    def end(self, run: Run) -> None:
        """The run's handler ended: forget it."""
        with self._lock:
            runs = [r for r in self._runs.get(run.session, []) if r is not run]
            if runs:
                self._runs[run.session] = runs
            else:
                self._runs.pop(run.session, None)

    def sessions(self) -> list[str]:
        """The sessions with runs going now and not stopped (a stopped run's handler is ending it)."""
        with self._lock:
            return [session for session, runs in self._runs.items() if any(not run.stopped for run in runs)]

    def runs_of(self, session: str) -> list[Run]:
        """``session``'s runs going now (a copy)."""
        with self._lock:
            return list(self._runs.get(session, []))

    def open_runs(self, session: str) -> int:
        """How many of ``session``'s runs have not ended yet (a stopped run is open until its handler ends)."""
        with self._lock:
            return len(self._runs.get(session, []))

    def cancel(self, session: str) -> Cancelled:
        """Stop every run of ``session``: cancel its requests not yet finished and count them."""
        with self._lock:
            runs = list(self._runs.get(session, []))
            for run in runs:
                run.stopped = True
            handles = [h for run in runs for h in run.handles]
        live = [h for h in handles if not (h.done or h.cancel_asked)]  # finished or already cancelled: not this Stop's
        for handle in live:
            handle.cancel()
        return Cancelled(len(live), len(handles))

    @contextmanager
    def held(self, session: str, handles: Iterable[Any]) -> Iterator[None]:
        """``handles`` as a run of ``session`` while the block runs (Stop and the run watchdog reach them), and
        cancelled when it ends: an event that finished, failed, timed out or was cancelled leaves no engine work."""
        handles = list(handles)
        run = self.add(session, handles)
        try:
            yield
        finally:
            for handle in handles:
                handle.cancel()  # a no-op for a finished request
            self.end(run)
