"""The outermost ASGI middleware: every request's headers and body checked before any route reads them.

- ``Content-Type``, ``Content-Length`` and ``Transfer-Encoding`` at most once each (and never both
  length headers): FastAPI reads a header's first value, other code its last; two values are
  how a body gets past one reader's checks and into another (a one-line 400).
- ``POST /v1/...`` takes ``application/json`` only (415 otherwise): form and text bodies are
  what a web page may send to a server on its visitor's machine without a CORS preflight.
- A body cap on every route, uploads included: a declared ``Content-Length`` over it is refused
  at once (413), a streamed body as soon as it passes it; nothing over the cap is ever buffered.
- Upload routes: at most ``max_upload_files`` parts per request, and the upload folder's quota
  (507 when full, after sweeping old uploads).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tts_app import settings
from tts_app.web.guards.multipart_parts import PartCounter, multipart_boundary
from tts_app.web.guards.upload_quota import UploadQuota

logger = logging.getLogger(__name__)

BODY_ENV = "TTS_APP_MAX_BODY_BYTES"
UPLOAD_REQUEST_ENV = "TTS_APP_MAX_UPLOAD_REQUEST_BYTES"
UPLOAD_FILES_ENV = "TTS_APP_MAX_UPLOAD_FILES"
DEFAULT_BODY_BYTES = settings.default(BODY_ENV)
DEFAULT_UPLOAD_REQUEST_BYTES = settings.default(UPLOAD_REQUEST_ENV)
DEFAULT_UPLOAD_FILES = settings.default(UPLOAD_FILES_ENV)
UPLOAD_PATHS = frozenset({"/gradio_api/upload", "/gradio_api/process_recording"})
SINGLE_HEADERS = (b"content-type", b"content-length", b"transfer-encoding")
JSON_TYPE = b"application/json"


@dataclass
class RequestLimits:
    """Body caps: ``default_bytes`` for every route, ``route_bytes`` for exact paths, uploads apart."""

    default_bytes: int = DEFAULT_BODY_BYTES
    upload_request_bytes: int = DEFAULT_UPLOAD_REQUEST_BYTES
    upload_files: int = DEFAULT_UPLOAD_FILES
    route_bytes: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_env(cls, route_bytes: dict[str, int] | None = None) -> "RequestLimits":
        return cls(settings.value(BODY_ENV), settings.value(UPLOAD_REQUEST_ENV), settings.value(UPLOAD_FILES_ENV),
                   dict(route_bytes or {}))

    def body_cap(self, path: str) -> int:
        if path in UPLOAD_PATHS:
            return self.upload_request_bytes
        return self.route_bytes.get(path, self.default_bytes)


class Refusal(Exception):
    """A request refused before its route sees it: HTTP status, one-line message, error code."""

    def __init__(self, status: int, message: str, code: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


def refusal_messages(path: str, refusal: Refusal) -> list[Message]:
    """The reply: OpenAI's error shape under /v1, Gradio's ``detail`` (which its page shows) elsewhere."""
    if path.startswith("/v1/"):
        error_type = "server_error" if refusal.status >= 500 else "invalid_request_error"
        payload: dict = {"error": {"message": refusal.message, "type": error_type, "param": None, "code": refusal.code}}
    else:
        payload = {"error": refusal.message, "detail": refusal.message}
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               (b"connection", b"close")]  # the rest of a refused body is never read
    return [{"type": "http.response.start", "status": refusal.status, "headers": headers},
            {"type": "http.response.body", "body": body}]


def check_headers(scope: Scope) -> None:
    """Refusal for duplicated framing headers, or a /v1 POST that is not JSON."""
    names = [name for name, _value in scope["headers"]]
    for name in SINGLE_HEADERS:
        if names.count(name) > 1:
            raise Refusal(400, f"duplicate {name.decode().title()} header", "duplicate_header")
    if b"content-length" in names and b"transfer-encoding" in names:
        raise Refusal(400, "both Content-Length and Transfer-Encoding headers", "duplicate_header")
    bodiless = header(scope, b"content-length") in (b"", b"0") and b"transfer-encoding" not in names
    if scope["method"] == "POST" and scope["path"].startswith("/v1/") and not bodiless:  # no body, no media type
        media_type = header(scope, b"content-type").partition(b";")[0].strip().lower()
        if media_type != JSON_TYPE:
            raise Refusal(415, "Content-Type must be application/json", "unsupported_media_type")


def header(scope: Scope, name: bytes) -> bytes:
    """The first value of header ``name`` (as Starlette and FastAPI read it), or b""."""
    return next((value for key, value in scope["headers"] if key == name), b"")


def declared_length(scope: Scope, cap: int) -> int | None:
    """The declared Content-Length, or None when the body is chunked; Refusal when over ``cap`` or invalid."""
    value = header(scope, b"content-length")
    if not value:
        return None
    if not value.isdigit():
        raise Refusal(400, "invalid Content-Length header", "invalid_request")
    if int(value) > cap:
        raise Refusal(413, f"the request body is over the {cap:,}-byte limit", "body_too_large")
    return int(value)


class _CappedBody:
    """The app's receive and send: the body counted as it streams, the app's reply dropped once refused."""

    def __init__(self, receive: Receive, send: Send, path: str, cap: int, parts: PartCounter | None, max_parts: int) -> None:
        self._receive = receive
        self._send = send
        self._path = path
        self._cap = cap
        self._parts = parts
        self._max_parts = max_parts
        self._size = 0
        self.started = False
        self.refused = False

    async def receive(self) -> Message:
        if self.refused:
            return {"type": "http.disconnect"}
        message = await self._receive()
        if message["type"] != "http.request":
            return message
        chunk = message.get("body", b"")
        self._size += len(chunk)
        if self._size > self._cap:
            return await self.refuse(Refusal(413, f"the request body is over the {self._cap:,}-byte limit", "body_too_large"))
        if self._parts is not None:
            self._parts.feed(chunk)
            if self._parts.parts - 1 > self._max_parts:  # the closing delimiter is not a part
                return await self.refuse(Refusal(413, f"more than {self._max_parts} files in one upload", "too_many_files"))
        return message

    async def refuse(self, refusal: Refusal) -> Message:
        """Answer with ``refusal`` (unless the app already answered) and tell the app its client left."""
        self.refused = True
        if not self.started:
            self.started = True
            for message in refusal_messages(self._path, refusal):
                await self._send(message)
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if self.refused:
            return
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)


class RequestGuard:
    """See the module's docstring. ``quota`` None: no upload-folder quota."""

    def __init__(self, app: ASGIApp, limits: RequestLimits | None = None, quota: UploadQuota | None = None) -> None:
        self.app = app
        self.limits = limits or RequestLimits.from_env()
        self.quota = quota

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        cap = self.limits.body_cap(path)
        upload = path in UPLOAD_PATHS and scope["method"] == "POST"
        try:
            check_headers(scope)
            declared = declared_length(scope, cap)
        except Refusal as refusal:
            await _answer(send, path, refusal)
            return
        reservation = None
        if upload and self.quota is not None:
            reservation = await self.quota.reserve(cap if declared is None else declared)
            if reservation is None:
                logger.warning("upload refused: the upload folder is over its quota")
                await _answer(send, path, Refusal(507, "the server's upload space is full; try again in a few minutes", "upload_quota"))
                return
        boundary = multipart_boundary(header(scope, b"content-type")) if upload else None
        parts = PartCounter(boundary) if boundary else None
        body = _CappedBody(receive, send, path, cap, parts, self.limits.upload_files)
        try:
            await self.app(scope, body.receive, body.send)
        except Exception:
            if not body.refused:
                raise
            # The app saw its client leave because the body was refused: the refusal is the whole story.
            logger.debug("route gave up on a refused body", exc_info=True)
        finally:
            if self.quota is not None:
                self.quota.release(reservation)


async def _answer(send: Send, path: str, refusal: Refusal) -> None:
    for message in refusal_messages(path, refusal):
        await send(message)
