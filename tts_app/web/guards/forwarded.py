"""The visitor's address behind a reverse proxy: ``X-Forwarded-For`` believed from trusted proxies only.

Nothing is trusted unless ``TTS_APP_TRUSTED_PROXIES`` names addresses or networks. A request whose
peer is a trusted proxy is from the right-most ``X-Forwarded-For`` entry that is not a trusted proxy
(each proxy appends the address it saw, so entries to the left of it are whatever the client wrote);
an entry that is not an address is the client (as ``unknown``), never skipped: skipping would let the
client's own entries to its left be believed. ``ResolveClient`` writes the result into the ASGI
scope, so FastAPI's ``request.client`` and Gradio's ``gr.Request.client`` are the visitor.

On Hugging Face Spaces (``SPACE_ID`` set) with the setting unset, the private networks are trusted:
the container is reachable only through the Spaces proxy, which connects from a private address
(10.x) and appends the visitor's address to ``X-Forwarded-For``.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from tts_app import settings

TRUSTED_ENV = "TTS_APP_TRUSTED_PROXIES"
SPACE_NETWORKS = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7")
UNKNOWN = "unknown"
MAX_ENTRY_CHARS = 64  # "[v6 address]:port" fits; longer is not an address (and is never parsed)
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An address from ``1.2.3.4``, ``1.2.3.4:80``, ``2001:db8::1`` or ``[2001:db8::1]:80``; None if none."""
    text = text.strip()
    if not text or len(text) > MAX_ENTRY_CHARS:
        return None
    if text.startswith("["):
        text, closed, port = text[1:].partition("]")
        if not closed or (port and not (port[0] == ":" and port[1:].isdigit())):
            return None
    elif text.count(":") == 1:
        text, _colon, port = text.partition(":")  # IPv4 with a port
        if not port.isdigit():
            return None
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


@dataclass(frozen=True)
class TrustedProxies:
    networks: tuple[Network, ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> "TrustedProxies":
        """Networks from addresses and CIDRs (checked by settings: ValueError for a bad one); ``none`` is none."""
        return cls(tuple(ipaddress.ip_network(e.strip(), strict=False) for e in entries if e.strip().lower() not in ("", "none")))

    @classmethod
    def from_env(cls) -> "TrustedProxies":
        entries = settings.value(TRUSTED_ENV)
        if not entries and os.environ.get("SPACE_ID"):
            entries = SPACE_NETWORKS  # a Space: its proxy is the only way in (module docstring); "none" opts out
        return cls.parse(entries)

    def trusts(self, host: str | None) -> bool:
        address = parse_address(host or "")
        return address is not None and any(address in network for network in self.networks)


def forwarded_client(peer: str, forwarded_for: str, trusted: TrustedProxies) -> str:
    """The visitor: ``peer`` unless it is trusted, then the right-most untrusted entry of ``forwarded_for``.

    Linear in the header's length: entries are split once and walked from the right until the first
    one that is not a trusted proxy. All trusted: the left-most (the farthest hop).
    """
    if not trusted.trusts(peer) or not forwarded_for.strip():
        return peer
    entries = forwarded_for.split(",")
    for entry in reversed(entries):
        address = parse_address(entry)
        if address is None:
            return UNKNOWN
        if not any(address in network for network in trusted.networks):
            return str(address)
    return str(parse_address(entries[0]))


class ResolveClient:
    """ASGI middleware: ``scope["client"]`` (and, from a trusted proxy, the scheme) set to the visitor's."""

    def __init__(self, app: ASGIApp, trusted: TrustedProxies) -> None:
        self.app = app
        self.trusted = trusted

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            peer = scope.get("client")
            host = peer[0] if peer else ""
            if host and self.trusted.trusts(host):
                # Several X-Forwarded-For headers are one list, in order (RFC 9110, 5.3).
                joined = ",".join(v.decode("latin-1") for k, v in scope["headers"] if k == b"x-forwarded-for")
                visitor = forwarded_client(host, joined, self.trusted)
                if visitor != host:
                    scope = {**scope, "client": (visitor, 0)}
                proto = next((v for k, v in scope["headers"] if k == b"x-forwarded-proto"), b"").strip().lower()
                if proto in (b"http", b"https"):  # what uvicorn's proxy-header support did for trusted peers
                    secure = proto == b"https"
                    scheme = ("wss" if secure else "ws") if scope["type"] == "websocket" else proto.decode()
                    scope = {**scope, "scheme": scheme}
        await self.app(scope, receive, send)
