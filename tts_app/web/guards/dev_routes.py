"""Gradio's development routes answer 404 in a served app (issue 32, item 8).

Gradio 6 mounts them in every app, development or not: ``/gradio_api/dev/reload`` (the reload
watcher: each connection polls 20 times a second; 500 took a core from 8 % to 80 %), the vibe
editor (``vibe-edit``, ``undo-vibe-edit``, ``vibe-code``, ``vibe-starter-queries``: 403 unless
``--vibe``, but they read and write the app's source when on) and the profiler (``profiling/*``,
mounted when GRADIO_PROFILING is set). The served page uses none of them.
"""

from __future__ import annotations

from collections.abc import Callable

DEV_PREFIXES = (
    "/gradio_api/dev/",
    "/gradio_api/vibe-",
    "/gradio_api/undo-vibe-edit",
    "/gradio_api/profiling/",
)
DEV_PATHS = frozenset({"/gradio_api/dev", "/gradio_api/profiling"})
_NOT_FOUND = b'{"detail":"Not Found"}'


def dev_route(path: str) -> bool:
    """Whether ``path`` (as routed: percent-decoded) names a development route."""
    path = "/" + path.lstrip("/")  # "//gradio_api/dev/reload" must not slip past
    return path in DEV_PATHS or path.startswith(DEV_PREFIXES)


class DevRoutesOff:
    """ASGI middleware: a development route answers 404, as if it were not mounted."""

    def __init__(self, app: Callable) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] not in ("http", "websocket") or not dev_route(scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(_NOT_FOUND)).encode())]
        await send({"type": "http.response.start", "status": 404, "headers": headers})
        await send({"type": "http.response.body", "body": _NOT_FOUND})
