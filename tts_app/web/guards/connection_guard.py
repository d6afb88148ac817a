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
import time
from dataclasses import dataclass

from tts_app import settings
from tts_app.engine.operator_log import RefusalLog
from tts_app.framework import Connection, watched_h11_protocol
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
    # Connections asyncio accepts in one go (uvicorn's ``backlog``), before any is counted here: a few such bursts
    # (a burst's refused connections close only some loop turns later, while the next burst is accepted) must fit
    # in the descriptors the cap in all leaves, or accept() fails for everyone.
    backlog: int = MAX_BACKLOG

    @classmethod
    def from_env(cls) -> "ConnectionLimits":
        """The settings, the cap in all lowered to ``FILE_LIMIT_SHARE`` of the open-file limit and the accept
        backlog to an eighth of what is left (read now: call it after ``raise_open_file_limit``)."""
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        total, backlog = settings.value(TOTAL_ENV), MAX_BACKLOG
        if soft != resource.RLIM_INFINITY:
            total = min(total, int(soft * FILE_LIMIT_SHARE)) if total else int(soft * FILE_LIMIT_SHARE)
            backlog = max(MIN_BACKLOG, min(MAX_BACKLOG, (soft - total) // 8))  # with half, a loaded CI run saw accept() fail (EMFILE)
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


def guarded_protocol(limits: ConnectionLimits) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol class with ``limits`` applied (pass it as ``uvicorn.Config(http=...)``)."""
    # One server, one event loop: no lock needed. Every connection is held by its address's key; a trusted
    # proxy's under one key of their own, counted in all but never taken from (many visitors are behind it).
    holdings = Holdings()
    open_total = [0]
    refusals = RefusalLog(logger, time.monotonic, logging.WARNING)  # a flood from one address: its cause once a minute
    return watched_h11_protocol(lambda connection: GuardedConnection(connection, limits, holdings, open_total, refusals))


class GuardedConnection:
    """One connection's deadlines and its place in the caps (see the module doc); ``framework.ConnectionWatch``."""

    def __init__(self, connection: Connection, limits: ConnectionLimits, holdings: Holdings, open_total: list[int],
                 refusals: RefusalLog) -> None:  # fmt: skip
        self.connection = connection
        self.refusals = refusals
        self.limits = limits
        self.holdings = holdings
        self.open_total = open_total  # one number shared by every connection of the server
        self.held: str | None = None
        self.header_timer: asyncio.TimerHandle | None = None
        self.body_timer: asyncio.TimerHandle | None = None
        self.body_since = 0.0  # when the body (or the part of it counted) began
        self.body_last = 0.0  # when its last byte came
        self.body_bytes = 0

    def opened(self) -> None:
        limits, host = self.limits, self.connection.peer_host
        proxy = host is not None and limits.trusted.trusts(host)
        key = "proxy" if proxy else address_key(host) if host else "unknown"
        if not proxy and limits.per_address > 0 and self.holdings.count(key) >= limits.per_address:
            self.refusals.refused(key, f"{limits.per_address} connections open from this address already")
            self.connection.close(TOO_MANY)
            return
        if limits.max_total > 0 and self.open_total[0] >= limits.max_total:
            evicted = None if proxy else self.holdings.heaviest(key)
            if evicted is None or evicted[0] == "proxy":
                self.refusals.refused(key, f"{self.open_total[0]} connections open in all")
                self.connection.close(SERVER_FULL)
                return
            evicted[1].connection.close()  # the heaviest address's oldest connection gives up its place
            evicted[1].released()
        self.holdings.add(key, self)
        self.open_total[0] += 1
        self.held = key
        self._arm_header_timer()

    def before_data(self) -> None:
        if self.connection.awaiting_request():
            self._arm_header_timer()  # the first bytes of a request (on a kept-alive connection too)

    def after_data(self, received: int) -> None:
        if not self.connection.awaiting_request():
            self._disarm_header_timer()  # the headers are in: the body's deadlines apply from here
        self._watch_body(received)

    def released(self) -> None:
        self._disarm_header_timer()
        self._stop_body_watch()
        if self.held is not None:
            self.holdings.remove(self.held, self)
            self.open_total[0] -= 1
            self.held = None

    def _arm_header_timer(self) -> None:
        if self.header_timer is None and self.limits.header_timeout_s > 0:
            self.header_timer = self.connection.loop.call_later(self.limits.header_timeout_s, self._headers_too_slow)

    def _disarm_header_timer(self) -> None:
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None

    def _headers_too_slow(self) -> None:
        self.header_timer = None
        if not self.connection.closing() and self.connection.awaiting_request():
            self.connection.close(TOO_SLOW)

    def _watch_body(self, received: int) -> None:
        """Count a body's bytes while one is coming in; start its checks with its first part."""
        if not self.connection.receiving_body() or self.limits.body_timeout_s <= 0:
            self._stop_body_watch()
            return
        now = self.connection.loop.time()
        if self.body_timer is None:
            self.body_since, self.body_bytes = now, 0
            self.body_timer = self.connection.loop.call_later(BODY_CHECK_S, self._check_body)
        self.body_bytes += received
        self.body_last = now

    def _stop_body_watch(self) -> None:
        if self.body_timer is not None:
            self.body_timer.cancel()
            self.body_timer = None

    def _check_body(self) -> None:
        self.body_timer = None
        connection, limits = self.connection, self.limits
        if connection.closing() or not connection.receiving_body():
            return
        now = connection.loop.time()
        if connection.reading_paused():  # uvicorn stopped reading: the app is behind, not the client
            self.body_since, self.body_last, self.body_bytes = now, now, 0
        else:
            elapsed = now - self.body_since
            idle = now - self.body_last >= limits.body_timeout_s
            slow = elapsed >= limits.body_timeout_s and self.body_bytes < limits.min_body_rate * elapsed
            if idle or slow:
                logger.warning("closed a connection whose request body was too slow")
                connection.close(b"" if connection.reply_begun() else BODY_TOO_SLOW)  # no reply begun: say why
                return
        self.body_timer = connection.loop.call_later(BODY_CHECK_S, self._check_body)


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
