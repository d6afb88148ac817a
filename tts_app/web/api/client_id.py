"""Who is asking, for the engine's fair shares: the client's address.

This server checks no API keys, so a bearer token names nobody (anyone can make up thousands and
take a share with each); the address is what a flooder cannot multiply from one machine.
"""

from __future__ import annotations

from fastapi import Request


def client_id(request: Request) -> str:
    """``addr:<host>`` of the connection (``addr:unknown`` when the server cannot tell)."""
    host = request.client.host if request.client is not None else "unknown"
    return f"addr:{host}"
