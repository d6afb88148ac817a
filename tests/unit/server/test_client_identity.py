"""Who is asking: the X-Forwarded-For walk, trusted networks, IPv6 /64 grouping, the per-visitor request cap."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import pytest

from tts_app import settings
from tts_app.web.guards import forwarded
from tts_app.web.guards.client_identity import visitor_key
from tts_app.web.guards.forwarded import SPACE_NETWORKS, TrustedProxies, forwarded_client, parse_address
from tts_app.web.guards.visitor_requests import VisitorRequestCap

PROXIES = TrustedProxies.parse(["127.0.0.1", "10.0.0.0/8", "fd00::/8"])


@pytest.mark.parametrize("peer, header, visitor", [
    ("127.0.0.1", "", "127.0.0.1"),  # a trusted peer that names nobody is itself
    ("127.0.0.1", "   ", "127.0.0.1"),
    ("203.0.113.9", "198.51.100.1", "203.0.113.9"),  # an untrusted peer's header is ignored
    ("127.0.0.1", "198.51.100.1", "198.51.100.1"),
    ("127.0.0.1", "6.6.6.6, 198.51.100.1", "198.51.100.1"),  # the client's own entry, left of its proxy's, is ignored
    ("127.0.0.1", "6.6.6.6, 198.51.100.1, 10.1.2.3", "198.51.100.1"),  # trusted hops are walked past
    ("127.0.0.1", "10.9.9.9, 10.1.2.3", "10.9.9.9"),  # all trusted: the farthest
    ("127.0.0.1", "6.6.6.6, not-an-address", "unknown"),  # garbage is the client, never skipped
    ("127.0.0.1", "6.6.6.6, , 10.1.2.3", "unknown"),  # so is an empty entry
    ("127.0.0.1", "6.6.6.6," + "1" * 100, "unknown"),  # and an over-long one
    ("127.0.0.1", "198.51.100.1:4711", "198.51.100.1"),  # a port some proxies add
    ("127.0.0.1", "[2001:db8::1]:4711, 10.1.2.3", "2001:db8::1"),
    ("127.0.0.1", "2001:db8::1, fd00::5", "2001:db8::1"),
    ("127.0.0.1", "::ffff:198.51.100.7", "198.51.100.7"),  # an IPv4-mapped address is the IPv4 one
    ("10.4.4.4", "198.51.100.1", "198.51.100.1"),  # a network, not just one address
])
def test_the_right_most_untrusted_entry_is_the_visitor(peer: str, header: str, visitor: str) -> None:
    assert forwarded_client(peer, header, PROXIES) == visitor


def test_nothing_is_trusted_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TTS_APP_TRUSTED_PROXIES", raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert forwarded_client("127.0.0.1", "198.51.100.1", TrustedProxies.from_env()) == "127.0.0.1"


def test_a_space_trusts_its_private_proxy_unless_told_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPACE_ID", "someone/tts")
    monkeypatch.delenv("TTS_APP_TRUSTED_PROXIES", raising=False)
    assert TrustedProxies.from_env() == TrustedProxies.parse(SPACE_NETWORKS)
    assert forwarded_client("10.16.3.80", "6.6.6.6, 198.51.100.1", TrustedProxies.from_env()) == "198.51.100.1"
    monkeypatch.setenv("TTS_APP_TRUSTED_PROXIES", "none")
    assert TrustedProxies.from_env().networks == ()


def test_a_bad_trusted_entry_is_a_one_line_setting_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TTS_APP_TRUSTED_PROXIES", "127.0.0.1, proxy.example")
    (problem,) = settings.problems()
    assert problem.startswith("TTS_APP_TRUSTED_PROXIES must be") and "\n" not in problem


def test_a_huge_header_is_walked_in_linear_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk parses each entry at most once (and never more than 64 characters of one), from the right,
    stopping at the visitor: characters looked at grow with the header, not faster."""
    looked_at: list[int] = []

    def counting(text: str) -> object:
        looked_at.append(min(len(text), forwarded.MAX_ENTRY_CHARS + 1))
        return parse_address(text)

    monkeypatch.setattr(forwarded, "parse_address", counting)
    for count in (2_000, 200_000):
        looked_at.clear()
        header = ", ".join(["10.1.2.3"] * count)
        assert forwarded_client("127.0.0.1", header, PROXIES) == "10.1.2.3"
        assert len(looked_at) <= count + 2 and sum(looked_at) <= len(header) + 2 * count
    looked_at.clear()
    assert forwarded_client("127.0.0.1", "6.6.6.6, " * 200_000 + "198.51.100.1", PROXIES) == "198.51.100.1"
    assert len(looked_at) <= 2  # the peer, then the right-most entry: the rest is never parsed


@pytest.mark.parametrize("text", ["", "a" * 10_000, "1.2.3.4.5", "[::1", "]", "::1]:80", "1.2.3.4:80:90", "\x00"])
def test_garbage_is_no_address(text: str) -> None:
    assert parse_address(text) is None


def test_an_ipv6_slash_64_is_one_visitor() -> None:
    def key(host: str) -> str:
        return visitor_key(SimpleNamespace(client=SimpleNamespace(host=host)))

    assert key("2001:db8:1:2::1") == key("2001:db8:1:2:ffff:ffff:ffff:fffe") == "addr:2001:db8:1:2::/64"
    assert key("2001:db8:1:3::1") != key("2001:db8:1:2::1")
    assert key("198.51.100.1") != key("198.51.100.2")
    assert visitor_key(SimpleNamespace(client=None)) == "addr:unknown"


def test_open_requests_are_capped_per_visitor_and_released() -> None:
    """The third open request of one visitor is a one-line 503 (OpenAI's shape under /v1); another visitor and,
    once one ends, the first are served again."""
    release = asyncio.Event()

    async def app(scope: dict, receive: object, send: object) -> None:
        await release.wait()

    async def call(cap: VisitorRequestCap, host: str, path: str = "/v1/audio/speech") -> list[dict]:
        sent: list[dict] = []

        async def send(message: dict) -> None:
            sent.append(message)

        scope = {"type": "http", "path": path, "client": (host, 1), "headers": [], "method": "GET"}
        await cap(scope, None, send)
        return sent

    async def scenario() -> None:
        cap = VisitorRequestCap(app, per_visitor=2)
        held = [asyncio.create_task(call(cap, "2001:db8::1")), asyncio.create_task(call(cap, "2001:db8::2"))]
        await asyncio.sleep(0)
        refused = await call(cap, "2001:db8::3")  # the same /64
        assert refused[0]["status"] == 503
        assert json.loads(refused[1]["body"])["error"]["message"] == "too many open requests from your address"
        other = asyncio.create_task(call(cap, "2001:db8:0:1::1"))
        await asyncio.sleep(0)
        assert not other.done()  # admitted: waiting in the app, not refused
        release.set()
        assert await asyncio.wait_for(asyncio.gather(*held, other), 5) == [[], [], []]
        assert cap.open == {}

    asyncio.run(scenario())
