"""A file the output store has swept answers 404 with one line, not a 500 with a traceback.

A page may ask for a run's file (``/gradio_api/file=<store>/<token>/line-01.wav``) after the store's
size or age sweep removed it (a stopped run's files, an old tab). Gradio hands the path to Starlette's
FileResponse, which raises "File at path ... does not exist" while answering: a 500 and a traceback
in the log. Only paths inside the store are checked here, so the reply tells nothing about files
elsewhere (those keep Gradio's own answer).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

FILE_PREFIX = "/gradio_api/file="
_GONE = b'{"detail":"this file is no longer kept by the server; generate it again"}'


def swept_path(path: str, store: Callable[[], Path]) -> bool:
    """Whether ``path`` (the route's path, percent-decoded) names a file inside ``store()`` that is not there.

    ``store`` is asked only for a file route's path: every other request (events, live streams) passes
    on the prefix alone, without resolving the store's folder."""
    if not path.startswith(FILE_PREFIX):
        return False
    named = path[len(FILE_PREFIX):]
    if "\x00" in named:
        return False  # Gradio refuses it itself
    resolved = os.path.realpath(named)
    root = os.path.realpath(store())
    return resolved.startswith(root + os.sep) and not os.path.isfile(resolved)


class SweptFiles:
    """ASGI middleware: GET or HEAD of a swept output file answers 404."""

    def __init__(self, app: Callable, store: Callable[[], Path]) -> None:
        self.app = app
        self.store = store

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http" or scope.get("method") not in ("GET", "HEAD") or not swept_path(scope.get("path", ""), self.store):
            await self.app(scope, receive, send)
            return
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(_GONE)).encode())]
        await send({"type": "http.response.start", "status": 404, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else _GONE})
