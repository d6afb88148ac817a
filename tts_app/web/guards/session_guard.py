"""ASGI middleware: every request that names a session hash comes from the page that owns it,
and no URL the page is handed carries the hash (see session_binding for the design).

Where Gradio takes a session hash: the heartbeat path, ``session_hash`` in the query
(``/queue/data``, ``/deep_link``), ``session_hash`` in a POST's JSON body (``/queue/join``, ``/run``, ``/api``,
``/call``, ``/cancel``, ``/component_server``, ``/stream/<event>``), and the stream paths
(``/stream/<hash>/<run>/...``). Each is checked here before Gradio sees the request; a refusal is
one line of JSON (403, the same whether or not the hash exists for another page). A request binds
at most the one session it uses: one naming two is refused (400) before anything is bound.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any
from urllib.parse import parse_qsl

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tts_app.framework import event_session, live_stream_run
from tts_app.web.guards.body_replay import BodyTooLarge, read_capped_body, replay_body
from tts_app.web.guards.client_identity import visitor_key
from tts_app.web.guards.file_guard import max_event_body_bytes
from tts_app.web.guards.request_guard import UPLOAD_PATHS
from tts_app.web.guards.session_binding import (
    HASH_PATTERN, SESSION_BINDINGS, STREAM_TOKENS, SessionBindings, StreamTokens, VisitorSessionsFull, cookie_value,
    new_cookie_value,
    set_cookie_header,
)

logger = logging.getLogger(__name__)

GRADIO = "/gradio_api/"
HEARTBEAT = "/gradio_api/heartbeat/"
STREAM = "/gradio_api/stream/"
COMPONENT_SERVER = "/gradio_api/component_server"
CALL = "/gradio_api/call/"
# The routes where Gradio reads a session_hash from the query; on any other route it is ignored, so it binds nothing.
QUERY_SESSION_ROUTES = ("/gradio_api/queue/data", "/gradio_api/deep_link")
REFUSED = "this session belongs to another page"
# A stream's id as Gradio writes it in an event's output (its ``path``, and its ``url`` after /stream/).
# Bounded repeats: linear time on any output.
STREAM_ID = re.compile(rb"(?<![A-Za-z0-9_-])([A-Za-z0-9_-]{1,128})/([0-9a-f]{32})/(?=[0-9]{1,9}/playlist\.m3u8)")


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return None


async def _reply(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message, "detail": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class SessionGuard:
    """See the module doc. ``bindings`` and ``tokens``: the process-wide tables unless given."""

    def __init__(self, app: ASGIApp, blocks: Any, bindings: SessionBindings | None = None,
                 tokens: StreamTokens | None = None) -> None:  # fmt: skip
        self.app = app
        self.blocks = blocks  # the Gradio app: which runs really stream, and an event's session
        self.bindings = bindings or SESSION_BINDINGS
        self.tokens = tokens or STREAM_TOKENS

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not path.startswith(GRADIO):
            await self.app(scope, receive, self._with_cookie(scope, send) if scope["type"] == "http" else send)
            return
        cookie = cookie_value(_header(scope, b"cookie"))
        sessions = [value for name, value in parse_qsl(scope.get("query_string", b"").decode("latin-1"))
                    if name == "session_hash"] if path.rstrip("/") in QUERY_SESSION_ROUTES else []
        if path.startswith(HEARTBEAT):
            sessions.append(path[len(HEARTBEAT):])
        elif path.startswith(STREAM) and scope["method"] in ("GET", "HEAD"):
            scope = self._stream_scope(scope, path)
            parts = scope["path"][len(STREAM):].split("/")
            if len(parts) >= 4:
                sessions.append(parts[0])
        if scope["method"] == "POST" and path not in UPLOAD_PATHS:
            body = await self._read_body(receive, send)
            if body is None:
                return
            found = _body_session(body)
            if found is False:
                await _reply(send, 400, "session_hash must be a string")
                return
            if found:
                sessions.append(found)
            elif path.rstrip("/") == COMPONENT_SERVER:  # Gradio reads a form's session_hash there too
                await _reply(send, 415, "Content-Type must be application/json, with a session_hash")
                return
            receive = replay_body(body, receive)
        if len(set(sessions)) > 1:  # a request uses one session: naming more must bind nothing
            await _reply(send, 400, "a request names one session_hash")
            return
        for session in sessions[:1]:
            refusal = self._refusal(scope, session, cookie)
            if refusal is not None:
                await _reply(send, *refusal)
                return
        if path.startswith(CALL) and scope["method"] == "GET":  # /call/<api>/<event>: that event's session
            event = path.rstrip("/").rpartition("/")[2]
            sessions.append(event_session(self.blocks, event) or event)
        await self.app(scope, receive, self._rewriting(send, frozenset(sessions)))

    def _refusal(self, scope: Scope, session: str, cookie: str | None) -> tuple[int, str] | None:
        if not HASH_PATTERN.fullmatch(session):
            return 400, "session_hash must be 1 to 128 letters, digits, '-' or '_'"
        try:
            admitted = self.bindings.admit(session, cookie, visitor_key(HTTPConnection(scope)))
        except VisitorSessionsFull as exc:  # one address's flood of new hashes falls on it alone
            logger.warning("refused a new session: %s", exc)
            return 429, f"{exc}; close some or try again in a few minutes"
        if not admitted:
            logger.warning("refused a request naming another page's session")
            return 403, REFUSED
        return None

    def _stream_scope(self, scope: Scope, path: str) -> Scope:
        """``/stream/<token>/<rest>`` becomes Gradio's ``/stream/<hash>/<run>/<rest>``."""
        token, _, rest = path[len(STREAM):].partition("/")
        run = self.tokens.run_of(token)
        if run is None:
            return scope
        real = f"{STREAM}{run[0]}/{run[1]}/{rest}"
        return dict(scope, path=real, raw_path=real.encode())

    async def _read_body(self, receive: Receive, send: Send) -> bytes | None:
        """The body, or None once answered (413) or the client went away."""
        try:
            return await read_capped_body(receive, max_event_body_bytes())
        except BodyTooLarge as exc:
            await _reply(send, 413, str(exc))
            return None

    def _rewriting(self, send: Send, own: frozenset[str]) -> Send:
        """``send`` with the stream id of each of the caller's own streamed runs (``own``: the sessions it was
        admitted for) in an event stream's output replaced by its run's token. Any other text of that form
        (an echoed upload, another session's id) is left as it is and mints nothing."""

        def token_for(match: re.Match[bytes]) -> bytes:
            session, run = match[1].decode(), match[2].decode()
            if session not in own or not live_stream_run(self.blocks, session, run):
                return match[0]
            return self.tokens.token(session, run).encode() + b"/"

        active = False
        pending = b""

        async def rewrite(message: Message) -> None:
            nonlocal active, pending
            if message["type"] == "http.response.start":
                kind = dict(message.get("headers", [])).get(b"content-type", b"")
                active = kind.startswith(b"text/event-stream")
            elif message["type"] == "http.response.body" and active:
                data = pending + message.get("body", b"")
                more = message.get("more_body", False)
                cut = data.rfind(b"\n\n") + 2 if more else len(data)  # whole SSE messages only
                if more and cut < 2:
                    cut = 0
                pending = data[cut:]
                message = dict(message, body=STREAM_ID.sub(token_for, data[:cut]))
            await send(message)

        return rewrite

    def _with_cookie(self, scope: Scope, send: Send) -> Send:
        """``send`` that gives a page's HTML a ``tts_page`` cookie when the browser has none."""
        if scope["method"] != "GET" or cookie_value(_header(scope, b"cookie")) is not None:
            return send
        secure = scope.get("scheme") == "https" or _header(scope, b"x-forwarded-proto") == "https"

        async def with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                kind = dict(message.get("headers", [])).get(b"content-type", b"")
                if kind.startswith(b"text/html"):
                    headers = [*message.get("headers", []), (b"set-cookie", set_cookie_header(new_cookie_value(), secure))]
                    message = dict(message, headers=headers)
            await send(message)

        return with_cookie


def _body_session(body: bytes) -> str | bool | None:
    """The ``session_hash`` of a JSON object body; None when there is none, False when it is not a string."""
    try:
        payload = json.loads(body) if body else None
    except (ValueError, RecursionError):
        return None  # not JSON: Gradio refuses it itself, and reads no session from it
    if not isinstance(payload, dict) or payload.get("session_hash") is None:
        return None
    session = payload["session_hash"]
    return session if isinstance(session, str) else False


