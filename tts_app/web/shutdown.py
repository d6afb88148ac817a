"""The server's shutdown flag: set when a stop signal arrives, read by open streams so they end cleanly."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import uvicorn

from tts_app.framework import signalled_server

_stopping = threading.Event()
_on_stop: list[Callable[[], None]] = []


def on_stop(callback: Callable[[], None]) -> None:
    """Run ``callback`` on the server's event loop as soon as a stop signal arrives."""
    _on_stop.append(callback)


def shutting_down() -> bool:
    """True once the server has been told to stop."""
    return _stopping.is_set()


def stopping_server(config: uvicorn.Config) -> uvicorn.Server:
    """uvicorn's server that raises the shutdown flag first on SIGINT/SIGTERM.

    uvicorn then waits up to ``timeout_graceful_shutdown`` for open responses; streams
    that see the flag finish their current chunk and end, so the client gets a complete
    response (a properly terminated body) instead of a connection cut after the timeout.
    """
    return signalled_server(config, _stop_signalled)


def _stop_signalled() -> None:
    _stopping.set()
    try:
        loop = asyncio.get_running_loop()  # the signal interrupts the loop's own thread
    except RuntimeError:
        loop = None
    for callback in _on_stop:
        if loop is not None:
            loop.call_soon_threadsafe(callback)  # not inside a signal handler: on the loop's next turn
