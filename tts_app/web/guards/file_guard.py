"""ASGI middleware that refuses Gradio requests naming any file a visitor did not upload.

Gradio's own check (``processing_utils._check_allowed`` with ``check_in_upload_folder``)
runs only for Blocks that count as launched, and ``gr.mount_gradio_app`` never marks them
so. ``tts_app.web.server`` turns that check on (``has_launched``); this guard is the second,
independent layer: it runs before Gradio reads, hashes or copies anything, follows
symlinks, accepts regular files only (so ``/dev/zero`` cannot stall the event loop), and
answers every refusal with the same 400 so a reply never tells whether a path exists.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tts_app import settings
from tts_app.web.guards.body_replay import BodyTooLarge, read_capped_body, replay_body
from tts_app.web.guards.request_guard import UPLOAD_PATHS
from tts_app.storage.upload_paths import REFUSED_MESSAGE, UploadPathError, check_upload_path

logger = logging.getLogger(__name__)

GRADIO_PREFIX = "/gradio_api/"


def max_event_body_bytes() -> int:
    """$TTS_APP_MAX_EVENT_BODY_BYTES, read when asked."""
    return settings.value("TTS_APP_MAX_EVENT_BODY_BYTES")


def file_paths(value: Any) -> Iterator[str]:
    """Every string ``path`` of every dict inside ``value`` (any FileData, with or without Gradio's meta tag).

    Iterative, so a deeply nested body cannot exhaust the stack. URLs count as paths and are
    refused too: Gradio would otherwise download them (a server-side request forgery).
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("path"), str):  # only a string can name a file (Gradio's FileData rule too)
                yield item["path"]
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _json_reply(status: int, message: str) -> list[Message]:
    body = json.dumps({"error": message, "detail": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    return [
        {"type": "http.response.start", "status": status, "headers": headers},
        {"type": "http.response.body", "body": body},
    ]


class FileDataGuard:
    """Check every file path in the JSON body of a POST to Gradio before Gradio sees it."""

    def __init__(self, app: ASGIApp, max_body_bytes: int | None = None) -> None:
        self.app = app
        self.max_body_bytes = max_event_body_bytes() if max_body_bytes is None else max_body_bytes

    def _guarded(self, scope: Scope) -> bool:
        if scope["type"] != "http" or scope["method"] != "POST":
            return False
        if not scope["path"].startswith(GRADIO_PREFIX):
            return False
        # Upload routes are where files legitimately come in (Gradio writes them to its folder; the
        # request guard caps them). Every other body is checked whatever its Content-Type claims:
        # a multipart or duplicated header must not carry a JSON event past this check.
        return scope["path"] not in UPLOAD_PATHS

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._guarded(scope):
            await self.app(scope, receive, send)
            return
        try:
            body = await read_capped_body(receive, self.max_body_bytes)
        except BodyTooLarge as exc:
            for reply in _json_reply(413, str(exc)):
                await send(reply)
            return
        if body is None:
            return
        refusal = self._refusal(body)
        if refusal is not None:
            for reply in _json_reply(400, refusal):
                await send(reply)
            return

        await self.app(scope, replay_body(body, receive), send)

    def _refusal(self, body: bytes) -> str | None:
        if not body:
            return None
        try:
            # json.loads on bytes decodes them as Starlette's request.json() does, so both read the same value.
            payload = json.loads(body)
        except RecursionError:
            return "request body is nested too deeply"
        except ValueError:
            return None  # not JSON: Gradio refuses it itself, with no file involved
        for path in file_paths(payload):
            try:
                check_upload_path(path)
            except UploadPathError:
                logger.warning("refused a request naming a file outside the upload folder")
                return REFUSED_MESSAGE
        return None
