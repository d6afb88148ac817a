"""Who is asking: one key per visitor, decided in one place for every cap and share.

The key is the visitor's address, an IPv6 /64 counting as one (a subscriber's block), so that
rotating addresses inside one block does not make a new visitor. Every fair share, document
cap, encoder slot and connection cap keys on ``visitor_key``.
"""

from __future__ import annotations

from typing import Any

from tts_app.web.guards.connection_guard import address_key


def visitor_key(request: Any) -> str:
    """``addr:<IPv4 or IPv6 /64>`` of ``request`` (a Starlette/FastAPI or Gradio request), ``addr:unknown`` when unknown."""
    client = getattr(request, "client", None)
    host = getattr(client, "host", None) if client is not None else None
    return f"addr:{address_key(host)}" if host else "addr:unknown"
