"""Connection limits uvicorn lacks: deadlines for a request's headers and body, and caps on open connections.

uvicorn's keep-alive timeout only starts after a first response, so a client that connects and
sends its headers a byte at a time (slowloris) holds a socket for ever; enough of them exhaust
the file descriptors and nobody else is served. Here every request's headers must be complete
within ``header_timeout_s`` of its first byte (or of the connection), and one address (an IPv6
/64 counts as one) may hold at most ``per_address`` connections; past it, new ones are closed
at once with a one-line 503. Connections from a trusted proxy (``TTS_APP_TRUSTED_PROXIES``) are
not counted: they carry many visitors, whom ``visitor_requests`` caps by request instead.

uvicorn has no body timeout either: once the headers are in, a body that trickles (a byte every
few seconds) holds its socket as long as the client likes. A request's body must bring a byte at
least every ``body_timeout_s`` and, past its first ``body_timeout_s``, average ``min_body_rate``
bytes a second (Apache's mod_reqtimeout ``body=...,MinRate=...``); otherwise it gets a one-line 408
and is closed. Time while uvicorn itself stops reading (the app has not taken the body yet) is not
counted against the client.

All connections together stay under ``max_total`` (well inside the process's open-file limit: the
rest is room for files, pipes and models). A full server never refuses a newcomer: a connection from
an address holding fewer than the heaviest address closes that address's oldest connection
(``Holdings``); one from an address holding as many as anyone is refused.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import resource
from dataclasses import dataclass

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from tts_app import settings
from tts_app.web.guards.forwarded import TrustedProxies
from tts_app.web.guards.holdings import Holdings

logger = logging.getLogger(__name__)

HEADER_TIMEOUT_ENV = "TTS_APP_HEADER_TIMEOUT_S"
PER_ADDRESS_ENV = "TTS_APP_MAX_CONNECTIONS_PER_ADDRESS"
BODY_TIMEOUT_ENV = "TTS_APP_BODY_TIMEOUT_S"
MIN_BODY_RATE_ENV = "TTS_APP_MIN_BODY_RATE"
TOTAL_ENV = "TTS_APP_MAX_CONNECTIONS"
DEFAULT_HEADER_TIMEOUT_S = settings.default(HEADER_TIMEOUT_ENV)
DEFAULT_PER_ADDRESS = settings.default(PER_ADDRESS_ENV)
FILE_LIMIT_SHARE = 0.75  # connections may take this much of the open-file limit at most; the rest is the server's own
MAX_BACKLOG, MIN_BACKLOG = 2048, 8  # uvicorn's default backlog; a floor for tiny file limits
BODY_CHECK_S = 1.0  # how often a body in flight is checked against its deadlines


@dataclass(frozen=True)
class ConnectionLimits:
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    per_address: int = DEFAULT_PER_ADDRESS
    trusted: TrustedProxies = TrustedProxies()  # peers not counted: a proxy's connections are many visitors'
    body_timeout_s: float = settings.default(BODY_TIMEOUT_ENV)
    min_body_rate: float = settings.default(MIN_BODY_RATE_ENV)
    max_total: int = settings.default(TOTAL_ENV)  # 0: no cap in all
    # Connections asyncio accepts in one go (uvicorn's ``backlog``), before any is counted here: that burst must
    # fit in the descriptors the cap in all leaves, or accept() fails for everyone.
    backlog: int = MAX_BACKLOG

    @classmethod
    def from_env(cls) -> "ConnectionLimits":
        """The settings, the cap in all lowered to ``FILE_LIMIT_SHARE`` of the open-file limit and the accept
        backlog to half of what is left (read now: call it after ``raise_open_file_limit``)."""
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        total, backlog = settings.value(TOTAL_ENV), MAX_BACKLOG
        if soft != resource.RLIM_INFINITY:
            total = min(total, int(soft * FILE_LIMIT_SHARE)) if total else int(soft * FILE_LIMIT_SHARE)
            backlog = max(MIN_BACKLOG, min(MAX_BACKLOG, (soft - total) // 2))
        return cls(settings.value(HEADER_TIMEOUT_ENV), settings.value(PER_ADDRESS_ENV), TrustedProxies.from_env(),
                   settings.value(BODY_TIMEOUT_ENV), settings.value(MIN_BODY_RATE_ENV), total, backlog)


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
BODY_TOO_SLOW = _plain_reply("408 Request Timeout", "request body not received in time")
SERVER_FULL = _plain_reply("503 Service Unavailable", "the server has too many open connections; try again soon")


def guarded_protocol(limits: ConnectionLimits) -> type[H11Protocol]:
    """uvicorn's h11 protocol class with ``limits`` applied (pass it as ``uvicorn.Config(http=...)``)."""
    # One server, one event loop: no lock needed. Every connection is held by its address's key; a trusted
    # proxy's under one key of their own, counted in all but never taken from (many visitors are behind it).
    holdings = Holdings()
    open_total = [0]

    class GuardedH11Protocol(H11Protocol):
        _held: str | None = None
        _header_timer: asyncio.TimerHandle | None = None
        _body_timer: asyncio.TimerHandle | None = None
        _body_since = 0.0  # when the body (or the part of it counted) began
        _body_last = 0.0  # when its last byte came
        _body_bytes = 0

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            host = self.client[0] if self.client else None
            proxy = host is not None and limits.trusted.trusts(host)
            key = "proxy" if proxy else address_key(host) if host else "unknown"
            if not proxy and limits.per_address > 0 and holdings.count(key) >= limits.per_address:
                logger.warning("refused a connection: %d open from one address already", limits.per_address)
                self._refuse(TOO_MANY)
                return
            if limits.max_total > 0 and open_total[0] >= limits.max_total:
                evicted = None if proxy else holdings.heaviest(key)
                if evicted is None or evicted[0] == "proxy":
                    logger.warning("refused a connection: %d open in all", open_total[0])
                    self._refuse(SERVER_FULL)
                    return
                evicted[1].transport.close()  # the heaviest address's oldest connection gives up its place
                evicted[1]._release()
            holdings.add(key, self)
            open_total[0] += 1
            self._held = key
            self._arm_header_timer()

        def _refuse(self, reply: bytes) -> None:
            self.transport.write(reply)
            self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            self._release()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if _their_state(self) is h11.IDLE:
                self._arm_header_timer()  # the first bytes of a request (on a kept-alive connection too)
            super().data_received(data)
            if _their_state(self) is not h11.IDLE:
                self._disarm_header_timer()  # the headers are in: the body's deadlines apply from here
            self._watch_body(len(data))

        def handle_websocket_upgrade(self, event: h11.Request) -> None:
            self._release()  # the socket passes to the WebSocket protocol, which never reports back here
            super().handle_websocket_upgrade(event)

        def _release(self) -> None:
            self._disarm_header_timer()
            self._stop_body_watch()
            if self._held is not None:
                holdings.remove(self._held, self)
                open_total[0] -= 1
                self._held = None

        def _arm_header_timer(self) -> None:
            if self._header_timer is None and limits.header_timeout_s > 0:
                self._header_timer = self.loop.call_later(limits.header_timeout_s, self._headers_too_slow)

        def _disarm_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if not self.transport.is_closing() and _their_state(self) is h11.IDLE:
                self.transport.write(TOO_SLOW)
                self.transport.close()

        def _watch_body(self, received: int) -> None:
            """Count a body's bytes while one is coming in; start its checks with its first part."""
            if _their_state(self) is not h11.SEND_BODY or limits.body_timeout_s <= 0:
                self._stop_body_watch()
                return
            now = self.loop.time()
            if self._body_timer is None:
                self._body_since, self._body_bytes = now, 0
                self._body_timer = self.loop.call_later(BODY_CHECK_S, self._check_body)
            self._body_bytes += received
            self._body_last = now

        def _stop_body_watch(self) -> None:
            if self._body_timer is not None:
                self._body_timer.cancel()
                self._body_timer = None

        def _check_body(self) -> None:
            self._body_timer = None
            if self.transport.is_closing() or _their_state(self) is not h11.SEND_BODY:
                return
            now = self.loop.time()
            if _reading_paused(self):  # uvicorn stopped reading: the app is behind, not the client
                self._body_since, self._body_last, self._body_bytes = now, now, 0
            else:
                elapsed = now - self._body_since
                idle = now - self._body_last >= limits.body_timeout_s
                slow = elapsed >= limits.body_timeout_s and self._body_bytes < limits.min_body_rate * elapsed
                if idle or slow:
                    logger.warning("closed a connection whose request body was too slow")
                    if not _response_started(self):  # no reply begun: say why
                        self.transport.write(BODY_TOO_SLOW)
                    self.transport.close()
                    return
            self._body_timer = self.loop.call_later(BODY_CHECK_S, self._check_body)

    return GuardedH11Protocol


# uvicorn's protocol keeps its h11 connection and flow control in private attributes: read them here only.
def _their_state(protocol: H11Protocol) -> object:
    return protocol.conn.their_state


def _response_started(protocol: H11Protocol) -> bool:
    cycle = getattr(protocol, "cycle", None)  # the request being served (None before the first)
    return bool(cycle is not None and cycle.response_started)


def _reading_paused(protocol: H11Protocol) -> bool:
    return bool(protocol.flow is not None and protocol.flow.read_paused)


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
