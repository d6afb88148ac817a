"""Connection limits uvicorn lacks: a deadline for a request's headers and a cap on open connections per address.

uvicorn's keep-alive timeout only starts after a first response, so a client that connects and
sends its headers a byte at a time (slowloris) holds a socket for ever; enough of them exhaust
the file descriptors and nobody else is served. Here every request's headers must be complete
within ``header_timeout_s`` of its first byte (or of the connection), and one address (an IPv6
/64 counts as one) may hold at most ``per_address`` connections; past it, new ones are closed
at once with a one-line 503. Connections from a trusted proxy (``TTS_APP_TRUSTED_PROXIES``) are
not counted: they carry many visitors, whom ``visitor_requests`` caps by request instead.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import resource
from collections import Counter
from dataclasses import dataclass

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from tts_app import settings
from tts_app.web.guards.forwarded import TrustedProxies

logger = logging.getLogger(__name__)

HEADER_TIMEOUT_ENV = "TTS_APP_HEADER_TIMEOUT_S"
PER_ADDRESS_ENV = "TTS_APP_MAX_CONNECTIONS_PER_ADDRESS"
DEFAULT_HEADER_TIMEOUT_S = settings.default(HEADER_TIMEOUT_ENV)
DEFAULT_PER_ADDRESS = settings.default(PER_ADDRESS_ENV)


@dataclass(frozen=True)
class ConnectionLimits:
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    per_address: int = DEFAULT_PER_ADDRESS
    trusted: TrustedProxies = TrustedProxies()  # peers not counted: a proxy's connections are many visitors'

    @classmethod
    def from_env(cls) -> "ConnectionLimits":
        return cls(settings.value(HEADER_TIMEOUT_ENV), settings.value(PER_ADDRESS_ENV), TrustedProxies.from_env())


def address_key(host: str) -> str:
    """The address a connection counts against: the IPv4 address, or the IPv6 /64 (one subscriber's block)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def _plain_reply(status: str, message: str) -> bytes:
    body = (message + "\n").encode()
    return (f"HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n").encode() + body


TOO_MANY = _plain_reply("503 Service Unavailable", "too many open connections from your address")
TOO_SLOW = _plain_reply("408 Request Timeout", "request headers not received in time")


def guarded_protocol(limits: ConnectionLimits) -> type[H11Protocol]:
    """uvicorn's h11 protocol class with ``limits`` applied (pass it as ``uvicorn.Config(http=...)``)."""
    open_per_address: Counter[str] = Counter()  # one server, one event loop: no lock needed

    class GuardedH11Protocol(H11Protocol):
        _counted: str | None = None
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            key = address_key(self.client[0]) if self.client else None
            if key is not None and limits.per_address > 0 and not limits.trusted.trusts(self.client[0]):
                if open_per_address[key] >= limits.per_address:
                    logger.warning("refused a connection: %d open from one address already", limits.per_address)
                    transport.write(TOO_MANY)
                    transport.close()
                    return
                open_per_address[key] += 1
                self._counted = key
            self._arm_header_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            self._release()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self.conn.their_state is h11.IDLE:
                self._arm_header_timer()  # the first bytes of a request (on a kept-alive connection too)
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:
                self._disarm_header_timer()  # the headers are in: the route's own limits apply from here

        def handle_websocket_upgrade(self, event: h11.Request) -> None:
            self._release()  # the socket passes to the WebSocket protocol, which never reports back here
            super().handle_websocket_upgrade(event)

        def _release(self) -> None:
            self._disarm_header_timer()
            if self._counted is not None:
                open_per_address[self._counted] -= 1
                if open_per_address[self._counted] <= 0:
                    del open_per_address[self._counted]
                self._counted = None

        def _arm_header_timer(self) -> None:
            if self._header_timer is None and limits.header_timeout_s > 0:
                self._header_timer = self.loop.call_later(limits.header_timeout_s, self._headers_too_slow)

        def _disarm_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self.transport.write(TOO_SLOW)
                self.transport.close()

    return GuardedH11Protocol


def raise_open_file_limit() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard limit (allowed without privileges); returns (soft, hard)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            logger.warning("could not raise the open-file limit from %d", soft)
    return soft, hard
