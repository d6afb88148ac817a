"""The request guard's parts on their own: multipart part counting, the upload quota's sweep, repeated-log
throttling, configured CORS and the connection-address key. (tests/e2e/test_security_http.py attacks the real server.)"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from tts_app.web import log_throttle
from tts_app.web.guards.connection_guard import address_key
from tts_app.web.guards.cors import ApiCors
from tts_app.web.guards.multipart_parts import PartCounter, multipart_boundary
from tts_app.web.guards.upload_quota import UploadQuota


def test_parts_are_counted_across_chunk_edges() -> None:
    boundary = multipart_boundary(b'multipart/form-data; charset=utf-8; boundary="abc123"')
    assert boundary == b"abc123"
    body = b"".join(b"--abc123\r\nContent-Disposition: form-data; name=files\r\n\r\nxx\r\n" for _ in range(7)) + b"--abc123--\r\n"
    for size in (1, 3, 7, 64, len(body)):
        counter = PartCounter(boundary)
        for start in range(0, len(body), size):
            counter.feed(body[start:start + size])
        assert counter.parts == 8, size  # 7 parts and the closing delimiter


def test_no_boundary_no_counter() -> None:
    assert multipart_boundary(b"application/json") is None
    assert multipart_boundary(b"multipart/form-data") is None


def _file(folder: Path, name: str, size: int, age_s: float) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\0" * size)
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


def test_the_quota_sweeps_the_oldest_uploads_first_and_spares_young_ones(tmp_path: Path) -> None:
    oldest = _file(tmp_path, "a/oldest.wav", 400, 5000)
    older = _file(tmp_path, "b/older.wav", 400, 4000)
    young = _file(tmp_path, "c/young.wav", 400, 10)
    outputs = _file(tmp_path, "tts_app_outputs/x/out.wav", 10_000, 9000)  # its own store: neither counted nor swept
    quota = UploadQuota(lambda: tmp_path, quota_bytes=1500, min_age_s=600)

    async def run() -> None:
        first = await quota.reserve(500)  # 1,200 on disk + 500 > 1,500: the oldest goes, and that is enough
        assert first is not None and not oldest.exists() and older.exists()
        second = await quota.reserve(1000)  # the older one goes too, but the young one stays: still full
        assert second is None and not older.exists() and young.exists() and outputs.exists()
        quota.release(first)
        assert await quota.reserve(1000) is not None  # the first upload ended without writing: its reservation is gone

    asyncio.run(run())


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def test_repeated_log_messages_are_counted_not_written(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(log_throttle, "time", SimpleNamespace(monotonic=clock.monotonic))
    repeat_filter = log_throttle.RepeatFilter(limit=3, window_s=60)
    records = [logging.LogRecord("asyncio", logging.ERROR, __file__, 1, "accept failed: %s", ("EMFILE",), None) for _ in range(100)]
    passed = [record for record in records if repeat_filter.filter(record)]
    assert len(passed) == 3
    for other in ("another message", "accept failed: ENFILE"):  # other text (the same template too) has its own count
        assert repeat_filter.filter(logging.LogRecord("asyncio", logging.ERROR, __file__, 1, other, (), None))
    clock.now += 61
    later = logging.LogRecord("asyncio", logging.ERROR, __file__, 1, "accept failed: %s", ("EMFILE",), None)
    assert repeat_filter.filter(later)
    assert "97 identical messages left out" in later.getMessage()


def _cors_client(origins: list[str]) -> TestClient:
    async def speech(_request: object) -> PlainTextResponse:
        return PlainTextResponse("ok")

    app = Starlette(routes=[Route("/v1/audio/speech", speech, methods=["POST"]), Route("/page", speech, methods=["POST"])])
    return TestClient(ApiCors(app, origins))


def _preflight(client: TestClient, path: str, origin: str) -> dict:
    return dict(client.options(path, headers={"origin": origin, "access-control-request-method": "POST",
                                              "access-control-request-headers": "content-type"}).headers)


def test_configured_cors_origins_are_allowed_on_v1_only() -> None:
    client = _cors_client(["https://app.example"])
    assert _preflight(client, "/v1/audio/speech", "https://app.example").get("access-control-allow-origin") == "https://app.example"
    assert "access-control-allow-origin" not in _preflight(client, "/v1/audio/speech", "https://evil.example")
    assert "access-control-allow-origin" not in _preflight(client, "/page", "https://app.example")  # Gradio's own rules there


def test_without_origins_v1_preflights_are_refused() -> None:
    client = _cors_client([])
    for origin in ["http://localhost:1234", "https://evil.example"]:
        assert "access-control-allow-origin" not in _preflight(client, "/v1/audio/speech", origin)


@pytest.mark.parametrize(("host", "key"), [
    ("203.0.113.7", "203.0.113.7"),
    ("::ffff:203.0.113.7", "203.0.113.7"),
    ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
    ("2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"),  # the same subscriber's /64
])
def test_connections_count_per_address_and_ipv6_block(host: str, key: str) -> None:
    assert address_key(host) == key
