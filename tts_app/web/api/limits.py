"""Bounded reading of API request bodies: a size cap enforced while streaming, and JSON errors as 4xx."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from fastapi import Request

from tts_app import settings

MAX_BODY_ENV = "TTS_APP_MAX_API_BODY_BYTES"


@dataclass
class BodyError(Exception):
    """A request body refused before any work: HTTP status, one-line message, OpenAI error code."""

    status: int
    message: str
    code: str


async def read_json_body(request: Request, max_bytes: int | None = None) -> Any:
    """The request's JSON value, read at most ``max_bytes`` (default $TTS_APP_MAX_API_BODY_BYTES) into memory;
    BodyError otherwise.

    A declared Content-Length over the cap is refused before a byte of the body is read;
    a chunked body is refused as soon as it passes the cap (the rest is never read).
    """
    max_bytes = settings.value(MAX_BODY_ENV) if max_bytes is None else max_bytes
    too_large = BodyError(413, f"the request body is over the {max_bytes:,}-byte limit", "body_too_large")
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise BodyError(400, "invalid Content-Length header", "invalid_request")
        if int(declared) > max_bytes:
            raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise too_large
        chunks.append(chunk)
    try:
        return json.loads(b"".join(chunks))
    except RecursionError:
        raise BodyError(400, "the request body is nested too deeply", "invalid_json") from None
    except ValueError:  # JSONDecodeError and UnicodeDecodeError both are
        raise BodyError(400, "the request body must be JSON", "invalid_json") from None
