"""Who is asking: one key per visitor, decided in one place for every cap and share.

The key is the visitor's address, an IPv6 /64 counting as one (a subscriber's block), so that
rotating addresses inside one block does not make a new visitor. Every fair share, document
cap, encoder slot and connection cap keys on ``visitor_key``.

Who owns a thing a request makes (a document job) is narrower where it can be: the page's browser
(its ``tts_page`` cookie, a per-browser secret) when the request carries one, else the visitor.
"""

from __future__ import annotations

from typing import Any

from tts_app.web.guards.connection_guard import address_key
from tts_app.web.guards.session_binding import cookie_value


def visitor_key(request: Any) -> str:
    """``addr:<IPv4 or IPv6 /64>`` of ``request`` (a Starlette/FastAPI or Gradio request), ``addr:unknown`` when unknown."""
    client = getattr(request, "client", None)
    host = getattr(client, "host", None) if client is not None else None
    return f"addr:{address_key(host)}" if host else "addr:unknown"


def _browser(request: Any) -> str | None:
    headers = getattr(request, "headers", None)
    return cookie_value(headers.get("cookie")) if headers is not None else None


def owner_key(request: Any) -> str:
    """The owner of what ``request`` makes: ``browser:<cookie>`` for a page's browser, else ``visitor:<visitor_key>``."""
    browser = _browser(request)
    return f"browser:{browser}" if browser else f"visitor:{visitor_key(request)}"


def owner_keys(request: Any) -> frozenset[str]:
    """Every owner key ``request`` holds: its browser's (when it has the cookie) and its visitor's. A thing a
    browser made is that browser's alone; one an API client made is its visitor's (its pages' too)."""
    browser = _browser(request)
    return frozenset({f"visitor:{visitor_key(request)}", *([f"browser:{browser}"] if browser else [])})
