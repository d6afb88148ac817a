"""The server's shutdown flag: set when a stop signal arrives, read by open streams so they end cleanly."""

from __future__ import annotations

import threading

import uvicorn

_stopping = threading.Event()


def shutting_down() -> bool:
    """True once the server has been told to stop."""
    return _stopping.is_set()


class StoppingServer(uvicorn.Server):
    """uvicorn's server that raises the shutdown flag first on SIGINT/SIGTERM.

    uvicorn then waits up to ``timeout_graceful_shutdown`` for open responses; streams
    that see the flag finish their current chunk and end, so the client gets a complete
    response (a properly terminated body) instead of a connection cut after the timeout.
    """

    def handle_exit(self, sig: int, frame: object) -> None:
        _stopping.set()
        super().handle_exit(sig, frame)
