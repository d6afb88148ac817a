"""ASGI middleware: Gradio's routes answer a malformed request in one line, never a 500, a trace or a reset.

Gradio's POST routes trust their bodies more than a public server may: a body that is not UTF-8,
or not JSON sent as something else, reaches FastAPI's error encoder, which fails on the bytes
(a plain 500); an ``fn_index`` no event has, or infinite, is a KeyError or an OverflowError (500);
too few inputs is a 500 with a multi-line message, an unknown api_name a 500; FastAPI's own 422
echoes the body back. So
before Gradio sees a POST under ``/gradio_api/`` (uploads aside, they are multipart): its body is
UTF-8 JSON sent as ``application/json`` (415, 400 otherwise); an event's body (``run``, ``api``,
``call``, ``queue/join``, ``stream/<event>``) is an object whose fields have Gradio's types, whose
``fn_index`` names an event, with as many inputs as the event takes (422, 400). A ``Range`` header
on a ``file=`` route that is not one satisfiable-looking range is dropped (the whole file, 200).

And every error Gradio or FastAPI still answers under ``/gradio_api/`` (status 400 and up) is
rewritten to one line of ``{"error", "detail"}`` JSON, the shape of every other refusal here; an
exception that escapes before a reply began becomes a one-line 500 (and is logged), not
Starlette's plain text.
"""

from __future__ import annotations

import json
import logging
import re
from http import HTTPStatus
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tts_app.framework import event_inputs, known_event
from tts_app.web.guards.body_replay import BodyTooLarge, read_capped_body, replay_body
from tts_app.web.guards.file_guard import max_event_body_bytes
from tts_app.web.guards.request_guard import UPLOAD_PATHS, header

logger = logging.getLogger(__name__)

GRADIO = "/gradio_api/"
FILE_ROUTE = "/gradio_api/file="
# Event routes: (path prefix, whether the rest of the path is the api_name). Only run/ and api/ run the event at
# once and refuse too few inputs (a 500); the queue's routes (call/, queue/join) fill the rest with defaults.
EVENT_ROUTES = (("/gradio_api/run/", True), ("/gradio_api/api/", True), ("/gradio_api/call/v2/", True),
                ("/gradio_api/call/", True), ("/gradio_api/queue/join", False), ("/gradio_api/stream/", False))
COUNTED = ("/gradio_api/run/", "/gradio_api/api/")
# A PredictBody's fields and the JSON types Gradio accepts for each (None allowed for all but ``data``).
FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "data": (list,), "fn_index": (int,), "session_hash": (str,), "event_id": (str,), "oauth_token": (str,),
    "trigger_id": (int,), "simple_format": (bool,), "batched": (bool,),
}
SINGLE_RANGE = re.compile(r"bytes=(?:(\d{1,15})-(\d{0,15})|-(\d{1,15}))")
MAX_ERROR_BYTES = 64 * 1024  # an error reply longer than this is not Gradio's one-line refusal: replaced whole


class Refusal(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")  # NaN, Infinity: Python's json takes them, nothing else does


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):  # 1e400: FastAPI's encoder fails on it (a 500)
        raise ValueError("a number out of range")
    return value


def check_body(path: str, content_type: bytes, body: bytes, blocks: Any) -> None:
    """Refusal unless ``body`` is what Gradio's route at ``path`` can take (see the module doc)."""
    if not body:
        return  # Gradio refuses a missing body itself, in FastAPI's 422 (rewritten on the way out)
    if content_type.partition(b";")[0].strip().lower() != b"application/json":
        raise Refusal(415, "Content-Type must be application/json")
    try:
        payload = json.loads(body.decode("utf-8"), parse_constant=_reject_constant, parse_float=_finite)
    except UnicodeDecodeError as exc:
        raise Refusal(400, "the request body is not UTF-8") from exc
    except (ValueError, RecursionError) as exc:
        raise Refusal(400, "the request body is not valid JSON") from exc
    if not isinstance(payload, dict):
        raise Refusal(422, "the request body must be a JSON object")
    route = next(((prefix, named) for prefix, named in EVENT_ROUTES if path.startswith(prefix)), None)
    if route is None or path.endswith("/close"):
        return
    for field, types in FIELD_TYPES.items():
        value = payload.get(field)
        if value is None and field != "data":
            continue
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise Refusal(422, f"{field} must be {'a list' if field == 'data' else types[0].__name__}")
    fn_index = payload.get("fn_index")
    if fn_index is not None and not known_event(blocks, fn_index):
        raise Refusal(400, "fn_index names no event of this app")
    api_name = path[len(route[0]):].strip("/").split("/", 1)[0] if route[1] else None
    wanted = event_inputs(blocks, fn_index, api_name) if fn_index is not None or api_name else None
    if wanted is None and api_name:
        raise Refusal(404, "no event of this app has that api_name")
    if wanted is not None and route[0] in COUNTED and len(payload["data"]) < wanted:
        raise Refusal(400, f"this event takes {wanted} inputs; {len(payload['data'])} were sent")


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:  # a status HTTP does not name
        return "error"


def one_line(status: int, body: bytes) -> bytes:
    """An error reply's body as one line of ``{"error", "detail"}``, its message kept, never the request echoed."""
    phrase = _phrase(status)
    message = ""
    try:
        payload = json.loads(body) if body else None
    except (ValueError, RecursionError):
        payload = None
        message = body.decode("utf-8", "replace") if len(body) < 500 else ""
    if isinstance(payload, dict):
        found = payload.get("error") or payload.get("detail")
        if isinstance(found, str):
            message = found
        elif isinstance(found, list) and found and isinstance(found[0], dict):  # FastAPI's validation errors
            where = ".".join(str(part) for part in found[0].get("loc", ()) if part != "body")
            message = f"{where + ': ' if where else ''}{found[0].get('msg', 'invalid request')}"
    message = " ".join((message or phrase).split())[:300]
    return json.dumps({"error": message, "detail": message}).encode()


async def _send_json(send: Send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class GradioBodies:
    """See the module doc. ``blocks``: the Gradio app (which events exist, how many inputs each takes)."""

    def __init__(self, app: ASGIApp, blocks: Any) -> None:
        self.app = app
        self.blocks = blocks

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not path.startswith(GRADIO):
            await self.app(scope, receive, send)
            return
        if scope["method"] == "POST" and path not in UPLOAD_PATHS:
            try:
                body = await read_capped_body(receive, max_event_body_bytes())
                if body is None:
                    return  # the client went away
                check_body(path, header(scope, b"content-type"), body, self.blocks)
            except BodyTooLarge as exc:
                await _send_json(send, 413, one_line(413, str(exc).encode()))
                return
            except Refusal as exc:
                await _send_json(send, exc.status, one_line(exc.status, str(exc).encode()))
                return
            receive = replay_body(body, receive)
        elif path.startswith(FILE_ROUTE):
            scope = _without_odd_range(scope)
        await self._answered(scope, receive, send)

    async def _answered(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The app's reply, an error's body made one line; an exception before any reply: a one-line 500."""
        held: Message | None = None  # an error's start, held until its body is known
        chunks: list[bytes] = []
        started = replaced = False

        async def rewrite(message: Message) -> None:
            nonlocal held, started, replaced
            if replaced:
                return  # the rest of an error's body, already answered in one line
            if message["type"] == "http.response.start":
                started = True
                if message["status"] >= 400:
                    held = message
                    return
            elif message["type"] == "http.response.body" and held is not None:
                chunks.append(message.get("body", b""))
                if message.get("more_body", False) and sum(map(len, chunks)) <= MAX_ERROR_BYTES:
                    return
                status, held, replaced = held["status"], None, True
                await _send_json(send, status, one_line(status, b"".join(chunks)[:MAX_ERROR_BYTES]))
                return
            await send(message)

        try:
            await self.app(scope, receive, rewrite)
        except Exception:
            logger.exception("a Gradio route failed on %s", scope.get("path", "")[:200])
            if not started:
                await _send_json(send, 500, one_line(500, b"the server could not answer this request"))
                return
            raise  # a reply was under way: nothing to add to it (the server closes the connection)


def _without_odd_range(scope: Scope) -> Scope:
    """``scope`` without a Range header that is not one range Starlette can answer (several, reversed, junk)."""
    if not any(key == b"range" for key, _value in scope["headers"]):
        return scope
    value = header(scope, b"range")
    found = SINGLE_RANGE.fullmatch(value.decode("latin-1").strip())
    if found and (found[3] is not None or not found[2] or int(found[1]) <= int(found[2])):
        return scope
    return dict(scope, headers=[(k, v) for k, v in scope["headers"] if k != b"range"])
