"""Who is asking, through the real server and a real reverse proxy (nginx): issue 32 items 1 and 9.

One server for the module, trusting one proxy address (127.0.0.7, which nginx connects from) and
nothing else, with small caps so each attack is cheap: 3 documents per visitor, 24 open requests
per visitor. Visitors are told apart by the loopback address their client binds (127.0.0.2, ...):
nginx appends it to ``X-Forwarded-For``, as a proxy on the internet appends the visitor's.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.app_server import serve_app
from tests.support.reverse_proxy import nginx_proxy
from tests.support.streamed import first_bytes

pytestmark = pytest.mark.slow

PROXY = "127.0.0.7"
PER_CLIENT = 3  # documents per visitor
PER_VISITOR = 24  # open connections per address, open requests per visitor
FLOOD = 20
LONG = ("The quick brown fox jumps over the lazy dog, and then it runs far away into the woods. " * 45)[:4000]
OWN_VOICE = "Model's own voice"  # the Speak tab's voice mode
TIMEOUT = httpx.Timeout(120.0)
STEP_S = 30  # a hang guard on each step of a stream (a heartbeat stream itself never ends)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory, artifacts_dir: Path) -> Iterator[tuple[str, str]]:
    """(the server's base URL, nginx's base URL in front of it)."""
    env = {"TTS_APP_TRUSTED_PROXIES": PROXY, "TTS_APP_DOCUMENTS_PER_CLIENT": str(PER_CLIENT),
           "TTS_APP_MAX_CONNECTIONS_PER_ADDRESS": str(PER_VISITOR), "TTS_APP_MAX_QUEUE_WAIT_S": "20"}
    with serve_app(artifacts_dir / "visitor_identity_server.log", env) as (base, _process):
        deadline = time.monotonic() + 300  # a hang guard only: the model loads in the background
        while httpx.get(f"{base}/readyz", timeout=10).status_code != 200:
            assert time.monotonic() < deadline, "the engine did not load"
            time.sleep(0.5)
        with nginx_proxy(base, tmp_path_factory.mktemp("nginx"), bind=PROXY) as proxied:
            yield base, proxied


def _client(source: str) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=TIMEOUT)


def _async_client(source: str, connections: int = 10) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(local_address=source), timeout=TIMEOUT,
                             limits=httpx.Limits(max_connections=connections))


async def _open(client: httpx.AsyncClient, url: str, text: str, headers: dict[str, str] | None = None) -> httpx.Response:
    """A speech request whose status and headers are in (its body stays open, holding its place)."""
    body = {"model": "tts-1", "input": text, "response_format": "pcm"}
    return await client.send(client.build_request("POST", f"{url}/v1/audio/speech", json=body, headers=headers), stream=True)


async def _forged_flood_then_visit(base: str) -> tuple[list[int], list[str], int, int]:
    """FLOOD long streams from 127.0.0.1, each naming another made-up address; then a first request from 127.0.0.2."""
    flooder, visitor = _async_client("127.0.0.1", FLOOD + 2), _async_client("127.0.0.2")
    try:
        flood = await asyncio.gather(*(_open(flooder, base, LONG, {"X-Forwarded-For": f"203.0.113.{i + 1}"})
                                       for i in range(FLOOD)))
        codes = [json.loads(await r.aread())["error"]["code"] for r in flood if r.status_code != 200]
        answer = await _open(visitor, base, "A short visit while someone floods the server.")
        first = await first_bytes(answer)
        await answer.aclose()
        for r in flood:
            await r.aclose()
        return [r.status_code for r in flood], codes, answer.status_code, len(first)
    finally:
        await flooder.aclose()
        await visitor.aclose()


def test_forged_forwarded_for_from_an_untrusted_peer_is_one_visitor(servers: tuple[str, str]) -> None:
    """Made-up X-Forwarded-For addresses from a peer that is no trusted proxy name nobody: the flood is one
    visitor, gets one visitor's share (the rest: engine_busy), and another visitor's first request is served.
    On 9faa7d5 uvicorn believed them from 127.0.0.1: each was a visitor with a share, the next one got 503."""
    statuses, codes, status, first = asyncio.run(_forged_flood_then_visit(servers[0]))
    assert 503 in statuses and set(codes) == {"engine_busy"}, (statuses, codes)
    assert status == 200 and first >= 4096


def _create_then_delete_until_refused(client: httpx.Client, url: str) -> tuple[int, httpx.Response]:
    created = 0
    for _ in range(PER_CLIENT + 5):
        reply = client.post(f"{url}/v1/documents", json={"input": "Hello there. " * 20, "markdown": False})
        if reply.status_code != 202:
            return created, reply
        created += 1
        assert client.delete(f"{url}/v1/documents/{reply.json()['id']}").status_code == 200
    raise AssertionError("never refused")


def test_behind_the_proxy_one_visitors_documents_leave_anothers_first_one(servers: tuple[str, str]) -> None:
    """Through nginx, visitor A fills its document cap; its own X-Forwarded-For does not get it out; visitor
    B's first document is accepted. On 9faa7d5 both were the proxy: B's first request got 429."""
    proxied = servers[1]
    with _client("127.0.0.2") as a, _client("127.0.0.3") as b:
        created, refused = _create_then_delete_until_refused(a, proxied)
        assert created == PER_CLIENT and refused.status_code == 429, refused.text
        forged = a.post(f"{proxied}/v1/documents", json={"input": "Hi."}, headers={"X-Forwarded-For": "198.51.100.77"})
        assert forged.status_code == 429
        first = b.post(f"{proxied}/v1/documents", json={"input": "Hello there."})
        assert first.status_code == 202, first.text
        assert b.delete(f"{proxied}/v1/documents/{first.json()['id']}").status_code == 200


async def _streams_then_visit(proxied: str) -> tuple[int, str, int, bytes]:
    """PER_VISITOR + 1 heartbeat streams from visitor A through nginx, then one from visitor B."""
    a, b = _async_client("127.0.0.4", PER_VISITOR + 2), _async_client("127.0.0.5")
    try:
        streams = []
        for i in range(PER_VISITOR):
            stream = await a.send(a.build_request("GET", f"{proxied}/gradio_api/heartbeat/a{i}"), stream=True)
            assert stream.status_code == 200
            chunks = stream.aiter_bytes()  # kept: an iterator dropped unfinished closes its response
            streams.append((stream, chunks))
            await asyncio.wait_for(anext(chunks), STEP_S)  # "data: ALIVE": open in the server
        over = await asyncio.wait_for(a.get(f"{proxied}/gradio_api/heartbeat/over"), STEP_S)  # a stream never ends
        other = await b.send(b.build_request("GET", f"{proxied}/gradio_api/heartbeat/b0"), stream=True)
        alive = await asyncio.wait_for(anext(other.aiter_bytes()), STEP_S) if other.status_code == 200 else b""
        await other.aclose()
        for stream, _chunks in streams:
            await stream.aclose()
        return over.status_code, over.text, other.status_code, alive
    finally:
        await a.aclose()
        await b.aclose()


def test_behind_the_proxy_one_visitors_streams_leave_room_for_another(servers: tuple[str, str]) -> None:
    """Visitor A holds its cap of long-lived streams through nginx; its next request is a one-line 503 and
    visitor B's first stream opens. On 9faa7d5 the proxy's connections were counted as one address's: B refused."""
    over, text, other, alive = asyncio.run(_streams_then_visit(servers[1]))
    assert over == 503 and "too many open requests" in text and "\n" not in text.strip(), text
    assert other == 200 and alive.startswith(b"data: ALIVE")


def test_ipv6_addresses_in_one_slash_64_are_one_visitor(servers: tuple[str, str]) -> None:
    """From the trusted proxy, X-Forwarded-For addresses rotating inside one IPv6 /64 share one document cap;
    another /64 is another visitor. On 9faa7d5 the trusted proxy was not believed: all were one address."""
    base = servers[0]
    with _client(PROXY) as proxy:
        created = 0
        for i in range(PER_CLIENT + 1):
            forwarded = {"X-Forwarded-For": f"198.51.100.9, 2001:db8:1:2::{i + 1:x}"}
            reply = proxy.post(f"{base}/v1/documents", json={"input": "Hello there. " * 20, "markdown": False},
                               headers=forwarded)
            if reply.status_code != 202:
                break
            created += 1
            # Its owner is that visitor (issue 46, hole 6): the proxy deletes on the visitor's behalf.
            assert proxy.delete(f"{base}/v1/documents/{reply.json()['id']}", headers=forwarded).status_code == 200
        assert created == PER_CLIENT and reply.status_code == 429, reply.text
        other = proxy.post(f"{base}/v1/documents", json={"input": "Hello there."},
                           headers={"X-Forwarded-For": "2001:db8:1:3::1"})
        assert other.status_code == 202, other.text
        deleted = proxy.delete(f"{base}/v1/documents/{other.json()['id']}", headers={"X-Forwarded-For": "2001:db8:1:3::1"})
        assert deleted.status_code == 200


def _page_read(client: httpx.Client, url: str) -> str:
    """The page's Read document, called the way a page calls it, each time from a new session; the outcome's text."""
    data = ["Hello there. " * 20, False, "Doc", OWN_VOICE, None, None, "", 1.0, 1.0, 0]
    posted = client.post(f"{url}/gradio_api/call/read_document", json={"data": data})
    assert posted.status_code == 200, posted.text
    return client.get(f"{url}/gradio_api/call/read_document/{posted.json()['event_id']}").text


def test_a_pages_documents_count_against_its_visitor_not_its_session(servers: tuple[str, str]) -> None:
    """Through nginx, a page's documents started from fresh sessions stop at the visitor's cap (a session hash
    costs nothing). On 9faa7d5 each session had a cap of its own and the address four times as many."""
    proxied = servers[1]
    with _client("127.0.0.6") as page:
        for _ in range(PER_CLIENT):
            outcome = _page_read(page, proxied)
            job = re.search(r'data-job=\\?"([0-9a-f]{32})', outcome)
            assert "event: complete" in outcome and job, outcome
            assert page.delete(f"{proxied}/v1/documents/{job.group(1)}").status_code == 200
        refused = _page_read(page, proxied)
    assert "event: error" in refused and "Not started" in refused and "Traceback" not in refused, refused
