"""What the ``/v1`` routes declare in the OpenAPI schema (/v1/openapi.json): bodies, replies and errors.

The routes read their bodies themselves (size caps while streaming, one-line errors), so FastAPI
cannot infer these; without them the schema promised a bare 200 and clients, docs and the fuzz
test (tests/api/test_fuzz_api.py) saw neither the body fields nor the errors every route can return.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

ERROR_TEXT = {
    400: "invalid request (one-line message)",
    404: "no such resource",
    409: "not ready yet",
    413: "request body over the cap",
    415: "Content-Type is not application/json",
    429: "too many requests",
    499: "client closed the request",
    500: "server misconfigured (e.g. the voice alias file)",
    503: "busy: retry shortly",
    507: "no space left for the request's files",
}
# Every POST can meet the request guard (tts_app/web/guards/request_guard.py) before its own checks.
GUARD_ERRORS = (400, 413, 415)


class ErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str | None = None


class ErrorBody(BaseModel):
    """OpenAI's error shape: every refusal of a ``/v1`` route."""

    error: ErrorDetail


def json_body(model: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` declaring ``model`` as the route's required JSON body."""
    schema = model.model_json_schema()
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def replies(ok_status: int, media_types: dict[str, dict[str, Any]], *errors: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a route: ``ok_status`` with ``media_types`` (media type -> JSON schema), and ``errors``."""
    declared: dict[int | str, dict[str, Any]] = {
        ok_status: {"description": "success", "content": {media: {"schema": schema} for media, schema in media_types.items()}},
    }
    for status in errors:
        declared[status] = {"description": ERROR_TEXT[status], "model": ErrorBody}
    return declared


BINARY = {"type": "string", "format": "binary"}
JSON_OBJECT = {"type": "object"}
