"""Issue 32 items 5 and 6 through the real server: one visitor's flood of unread AAC streams or of
documents falls on that visitor only. Visitors are told apart by their source address (127.0.0.x:
sockets bound to it), as the server tells them apart."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.app_server import serve_app
from tts_app.audio.encoder_slots import PER_CLIENT as ENCODERS_PER_CLIENT
from tts_app.audio.ffmpeg_path import ffmpeg_exe

pytestmark = pytest.mark.slow

# Long enough that a stream is still being made when the next visitor asks (about 4 minutes of audio).
LONG_INPUT = ("The birch canoe slid on the smooth planks, and the juice of lemons makes fine punch. " * 48)[:4096]
_ROW = "| alpha | beta gamma | 12345 |\n"
# The costly text: a 200,000-character Markdown table (thousands of cells to read in).
BIG_TABLE = "| a | b | c |\n|---|---|---|\n" + _ROW * ((200_000 - 30) // len(_ROW))
SLOW_DOCUMENT = "\n\n".join(f"Paragraph {n}. The box was thrown beside the parked truck, and the girl at the booth sold fifty bonds."
                            for n in range(300))  # fmt: skip  (minutes of reading: still running when the test looks)


@pytest.fixture(scope="module")
def server(artifacts_dir: Path) -> Iterator[tuple[str, int]]:
    """Its own server: fresh encoder slots and parse counters. Every flood request is admitted by the
    engine (share 1, no wait cap), so only the limits under test refuse anything."""
    env = {"TTS_APP_CLIENT_SHARE": "1", "TTS_APP_MAX_QUEUE_WAIT_S": "100000"}
    with serve_app(artifacts_dir / "visitor_shares_server.log", extra_env=env) as (base, _process):
        yield base, int(base.rsplit(":", 1)[1])


def visitor(base: str, address: str) -> httpx.Client:
    """An HTTP client whose connections come from ``address`` (a loopback address: another visitor)."""
    return httpx.Client(base_url=base, timeout=120, transport=httpx.HTTPTransport(local_address=address))


def send_unread(port: int, body: dict, source: str = "127.0.0.1") -> socket.socket:
    """A raw request whose reply is never read past its head: a slow reader."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30, source_address=(source, 0))
    data = json.dumps(body).encode()
    head = f"POST /v1/audio/speech HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
    sock.sendall(head.encode() + data)
    return sock


def reply_head(sock: socket.socket, deadline: float) -> str:
    """The reply's status line and headers (a few bytes of body may come along; the rest is left unread)."""
    received = b""
    while b"\r\n\r\n" not in received:
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        data = sock.recv(4096)
        assert data, "the server closed the connection before its reply's head"
        received += data
        assert time.monotonic() < deadline, "no reply head in time"
    return received.split(b"\r\n\r\n", 1)[0].decode("latin-1")


def figures(base: str) -> dict[str, float]:
    """/metrics as name -> value, for series without labels."""
    out = {}
    for line in httpx.get(f"{base}/metrics", timeout=30).text.splitlines():
        if line and not line.startswith("#") and "{" not in line:
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


@pytest.mark.skipif(ffmpeg_exe() is None, reason="AAC and Opus need ffmpeg")
def test_one_visitors_unread_aac_streams_leave_the_encoders_to_others(server: tuple[str, int]) -> None:
    """Eight unread AAC requests from one address: before, each took an encoder slot (queued or not) and
    the next visitor got 503 encoder_busy; now that address streams its share and is told 429 for the rest."""
    base, port = server
    flood = [send_unread(port, {"model": "tts-1", "input": LONG_INPUT, "response_format": "aac", "seed": k}) for k in range(8)]
    try:
        deadline = time.monotonic() + 150
        heads = [reply_head(sock, deadline) for sock in flood]
        statuses = [int(head.split(" ", 2)[1]) for head in heads]
        assert statuses.count(200) == ENCODERS_PER_CLIENT, statuses
        refused = [head for head in heads if not head.startswith("HTTP/1.1 200")]
        assert all(head.startswith("HTTP/1.1 429") and "retry-after: " in head.lower() for head in refused), refused
        with visitor(base, "127.0.0.2") as other:  # the next visitor, while the flooder's streams go on unread
            for fmt, magic in (("aac", b"\xff"), ("opus", b"OggS")):
                reply = other.post("/v1/audio/speech", json={"model": "tts-1", "input": "Hello there.", "response_format": fmt})
                assert reply.status_code == 200, reply.text
                assert reply.content.startswith(magic) and len(reply.content) > 1000
        streaming = flood[statuses.index(200)]
        streaming.settimeout(5)
        assert streaming.recv(1)  # the flooder's own streams go on: it is only capped
    finally:
        for sock in flood:
            sock.close()


def test_one_visitor_holds_one_document_place_and_is_refused_before_parsing(server: tuple[str, int]) -> None:
    """Before: one address filled all 6 running and waiting places (its cap was 10 jobs) and every text
    was parsed first (a 200,000-character table: seconds of CPU even for a 429). Now a second document
    from it gets 429 with its text unparsed, and another visitor's document starts at once."""
    base, _port = server
    with visitor(base, "127.0.0.3") as flooder, visitor(base, "127.0.0.4") as other:
        first = flooder.post("/v1/documents", json={"input": SLOW_DOCUMENT, "markdown": False})
        assert first.status_code == 202, first.text
        parsed = figures(base).get("tts_documents_parsed_total", 0.0)
        try:
            for _ in range(5):
                reply = flooder.post("/v1/documents", json={"input": BIG_TABLE, "title": "table"})
                assert reply.status_code == 429, reply.text
                assert int(reply.headers["Retry-After"]) > 0 and "limit per client" in reply.json()["error"]["message"]
            assert figures(base).get("tts_documents_parsed_total") == parsed  # refused without reading a character
            second = other.post("/v1/documents", json={"input": SLOW_DOCUMENT, "markdown": False})
            assert second.status_code == 202, second.text
            assert second.json()["status"] == "running"  # a reader was left for the second visitor
            assert other.delete(f"/v1/documents/{second.json()['id']}").status_code == 200
        finally:
            flooder.delete(f"/v1/documents/{first.json()['id']}")


def test_four_big_tables_at_once_are_parsed_one_at_a_time(server: tuple[str, int], artifacts_dir: Path) -> None:
    """Four visitors send the 200,000-character table together: they are read in one at a time (the rest
    wait their turn, or get a 503 after a while), while /healthz is polled (its latency is reported)."""
    base, _port = server
    replies: dict[str, httpx.Response] = {}

    def send(address: str) -> None:
        with visitor(base, address) as client:
            replies[address] = client.post("/v1/documents", json={"input": BIG_TABLE, "title": "table"})

    senders = [threading.Thread(target=send, args=(f"127.0.0.{k}",)) for k in range(5, 9)]
    for sender in senders:
        sender.start()
    latencies = []
    deadline = time.monotonic() + 120
    with httpx.Client(base_url=base, timeout=30) as probe:
        while any(sender.is_alive() for sender in senders):
            assert time.monotonic() < deadline, "the four documents were not answered in time"
            began = time.monotonic()
            assert probe.get("/healthz").status_code == 200
            latencies.append(time.monotonic() - began)
            time.sleep(0.05)
    for sender in senders:
        sender.join(10)
    try:
        statuses = sorted(reply.status_code for reply in replies.values())
        assert len(statuses) == 4 and set(statuses) <= {202, 503} and 202 in statuses, statuses
        seen = figures(base)
        assert seen.get("tts_document_parses_most_at_once") == 1, seen
        (artifacts_dir / "healthz_during_four_tables.txt").write_text(
            f"statuses {statuses}; /healthz polls {len(latencies)}, max {max(latencies):.3f} s, "
            f"median {sorted(latencies)[len(latencies) // 2]:.3f} s\n"
        )
    finally:
        for address, reply in replies.items():  # a job is its own visitor's to stop (issue 46, hole 6)
            if reply.status_code == 202:
                with visitor(base, address) as stopper:
                    assert stopper.delete(f"/v1/documents/{reply.json()['id']}").status_code == 200
