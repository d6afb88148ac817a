"""Who is asking, for the engine's fair shares: the visitor's key (web/guards/client_identity.py).

This server checks no API keys, so a bearer token names nobody (anyone can make up thousands and
take a share with each); the address is what a flooder cannot multiply from one machine.
"""

from __future__ import annotations

from fastapi import Request

from tts_app.web.guards.client_identity import visitor_key


def client_id(request: Request) -> str:
    """The visitor's key: ``addr:<IPv4 or IPv6 /64>`` (``addr:unknown`` when the server cannot tell)."""
    return visitor_key(request)
