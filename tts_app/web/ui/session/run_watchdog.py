"""No listener, no work: a page run nobody hears is cancelled within seconds (issue 32, item 4).

A run is heard while its session's page holds the heartbeat open (the page opens it at load, a
gradio_client at connect), or while someone reads its event stream (the page's, a client's, a REST
caller's ``/gradio_api/call/<api>/<event id>``). A run heard by neither for ``ABANDONED_AFTER_S``
seconds in a row is cancelled in the engine: a queue/join sent and dropped, or a stream closed
with no page behind it, frees its slots instead of running on for minutes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

from tts_app.web.event_streams import server_loop, stream_open
from tts_app.web.session_sweeper import heartbeat_open
from tts_app.web.ui.session.active_runs import ActiveRuns

logger = logging.getLogger(__name__)

# Longer than the gap between a client's join and its opening the stream (milliseconds), short
# enough that a dropped run frees the engine at once; a page's heartbeat is open long before it.
ABANDONED_AFTER_S = 5.0
CHECK_EVERY_S = 1.0


class RunWatchdog:
    """Cancel the runs in ``runs`` whose session nobody hears; ``events_of(session)``: its event ids in Gradio's queue."""

    def __init__(self, runs: ActiveRuns, events_of: Callable[[str], Iterable[str]], grace_s: float = ABANDONED_AFTER_S) -> None:
        self.runs = runs
        self.events_of = events_of
        self.grace_s = grace_s
        self._unheard_since: dict[str, float] = {}
        self._started = False
        self._lock = threading.Lock()

    def heard(self, session: str) -> bool:
        """Whether a page or a reader is there for ``session``'s results."""
        return heartbeat_open(session) or stream_open(session) or any(stream_open(e) for e in self.events_of(session))

    def check(self) -> list[str]:
        """One round (on the server's loop, where Gradio changes its queue): cancel what nobody heard for the grace."""
        now = time.monotonic()
        running = self.runs.sessions()
        cancelled = []
        for session in running:
            if self.heard(session):
                self._unheard_since.pop(session, None)
                continue
            since = self._unheard_since.setdefault(session, now)
            if now - since >= self.grace_s:
                count = self.runs.cancel(session).cancelled
                self._unheard_since.pop(session, None)
                cancelled.append(session)
                logger.warning("cancelled %d engine requests of a page run nobody listens to (no page, no event stream)", count)
        for session in set(self._unheard_since) - set(running):
            del self._unheard_since[session]
        return cancelled

    def ensure_started(self) -> None:
        """Start the daemon thread that schedules a check every second on the server's loop (once)."""
        with self._lock:
            if self._started:
                return
            self._started = True

        def run() -> None:
            tick = threading.Event()
            while not tick.wait(CHECK_EVERY_S):
                loop = server_loop()
                if loop is not None:
                    loop.call_soon_threadsafe(self.check)

        threading.Thread(target=run, name="run-watchdog", daemon=True).start()
