"""CORS for the ``/v1`` API: off unless the operator lists origins in TTS_APP_CORS_ORIGINS.

With it off, a web page a visitor opens cannot read the API's replies, and (the API taking JSON
only) cannot send it a request without a preflight that this server does not grant.
"""

from __future__ import annotations


from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from tts_app import settings

CORS_ENV = "TTS_APP_CORS_ORIGINS"


def cors_origins() -> list[str]:
    """The origins allowed to call ``/v1`` from a browser (comma-separated in TTS_APP_CORS_ORIGINS; "*" for any)."""
    return list(settings.value(CORS_ENV))


class ApiCors:
    """Starlette's CORSMiddleware for ``/v1/...`` only; Gradio's routes keep Gradio's own rules.

    Without origins every ``/v1`` preflight is refused here; otherwise it would fall through to
    Gradio's middleware, which grants any localhost origin when the server runs on localhost.
    """

    def __init__(self, app: ASGIApp, origins: list[str]) -> None:
        self.app = app
        self.cors = CORSMiddleware(app, allow_origins=origins, allow_methods=["GET", "POST", "DELETE"],
                                   allow_headers=["content-type", "authorization"])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/v1/"):
            await self.cors(scope, receive, send)
        else:
            await self.app(scope, receive, send)
