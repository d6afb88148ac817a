"""Who is listening to an event: the open result streams of each session (issue 32, item 4).

A page run's results reach its page over Gradio's event stream (``GET /gradio_api/queue/data?session_hash=...``,
or ``GET /gradio_api/call/<api>/<event id>`` for a REST caller). A run that nobody reads, with no page
holding its heartbeat either, is work for no one: tts_app/web/ui/session/run_watchdog.py cancels it.
This middleware counts the open streams, and notices a closed one as soon as the socket closes (it
reads the connection's messages itself: Gradio asks only every 10 s, uvicorn never tells a send).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from urllib.parse import parse_qs

QUEUE_DATA_PATH = "/gradio_api/queue/data"
CALL_PREFIX = "/gradio_api/call/"
_open_streams: Counter[str] = Counter()  # session hash (queue/data) or event id (call) -> open streams
_loop: list[asyncio.AbstractEventLoop] = []  # the server's loop: the run watchdog checks there


def stream_key(scope: dict) -> str | None:
    """The session hash or event id a GET streams the results of; None for any other request."""
    if scope.get("type") != "http" or scope.get("method") != "GET":
        return None
    path = scope.get("path", "")
    if path == QUEUE_DATA_PATH:
        hashes = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("session_hash")
        return hashes[0] if hashes else None
    if path.startswith(CALL_PREFIX):
        parts = path[len(CALL_PREFIX):].strip("/").split("/")
        if len(parts) == 2 or (len(parts) == 3 and parts[0] == "v2"):  # <api>/<event id>, v2/<api>/<event id>
            return parts[-1]
    return None


def stream_open(key: str | None) -> bool:
    """True while someone reads the results of ``key`` (a session hash or an event id)."""
    return bool(key) and key in _open_streams


def server_loop() -> asyncio.AbstractEventLoop | None:
    """The loop the server runs on (Gradio's queue lives there), once a request has come."""
    return _loop[0] if _loop and not _loop[0].is_closed() else None


class EventStreamTracker:
    """ASGI middleware: count each session's open event streams, and drop the count when the socket closes."""

    def __init__(self, app: Callable) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if not _loop:
            _loop.append(asyncio.get_running_loop())
        key = stream_key(scope)
        if key is None:
            await self.app(scope, receive, send)
            return
        _open_streams[key] += 1
        closed = False
        inbox: asyncio.Queue[dict] = asyncio.Queue()

        def close() -> None:
            nonlocal closed
            if not closed:
                closed = True
                _open_streams[key] -= 1
                if _open_streams[key] <= 0:
                    del _open_streams[key]

        async def watch() -> None:
            # The server's messages for a GET: its (empty) body, then http.disconnect when the client goes.
            while True:
                message = await receive()
                inbox.put_nowait(message)
                if message["type"] == "http.disconnect":
                    close()
                    return

        async def relay() -> dict:
            if closed and inbox.empty():
                return {"type": "http.disconnect"}  # asked again after the end: the end again
            return await inbox.get()

        watcher = asyncio.create_task(watch())
        try:
            await self.app(scope, relay, send)
        finally:
            watcher.cancel()
            close()
