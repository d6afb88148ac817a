"""A cap on the requests one visitor has open at once, streams included, wherever its connections come from.

The connection guard counts TCP peers, which behind a reverse proxy are all the proxy (so it skips
trusted proxies). This cap counts by ``visitor_key`` (the address behind the proxy, an IPv6 /64 as
one) from a request's headers to the end of its response: a heartbeat, an SSE stream or a streamed
reply counts for as long as it is open. Over the cap: a one-line 503 (OpenAI's shape under /v1),
and nothing of the request runs. ``TTS_APP_MAX_CONNECTIONS_PER_ADDRESS`` is the cap (0 = off): a
direct client never reaches it before its connections do.
"""

from __future__ import annotations

import logging
import time
from collections import Counter

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from tts_app.engine.operator_log import RefusalLog
from tts_app.web.guards.client_identity import visitor_key
from tts_app.web.guards.request_guard import Refusal, refusal_messages

logger = logging.getLogger(__name__)

TOO_MANY = Refusal(503, "too many open requests from your address", "too_many_requests")


class VisitorRequestCap:
    """ASGI middleware: at most ``per_visitor`` open HTTP requests per visitor (inside ``ResolveClient``)."""

    def __init__(self, app: ASGIApp, per_visitor: int) -> None:
        self.app = app
        self.per_visitor = per_visitor
        self.open: Counter[str] = Counter()  # one event loop: no lock needed
        self.refusals = RefusalLog(logger, time.monotonic, logging.WARNING)  # a flood: its cause once a minute

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.per_visitor <= 0:
            await self.app(scope, receive, send)
            return
        key = visitor_key(HTTPConnection(scope))
        if self.open[key] >= self.per_visitor:
            self.refusals.refused(key, f"{self.per_visitor} requests open already")
            for message in refusal_messages(scope["path"], TOO_MANY):
                await send(message)
            return
        self.open[key] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.open[key] -= 1
            if self.open[key] <= 0:
                del self.open[key]
